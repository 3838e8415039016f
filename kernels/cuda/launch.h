// Launch geometry for rill's own CUDA kernels: one thread per element in a
// grid-stride loop, so any element count fits a grid of bounded size.
#ifndef RILL_KERNELS_CUDA_LAUNCH_H_
#define RILL_KERNELS_CUDA_LAUNCH_H_

#include <algorithm>
#include <cstdint>

namespace rill::cuda {

inline constexpr int kThreadsPerBlock = 256;
// Enough blocks to fill any current GPU several times over; more only
// adds scheduling.
inline constexpr int64_t kMaxBlocks = 4096;

inline int BlocksFor(int64_t n) {
  return static_cast<int>(
      std::clamp<int64_t>((n + kThreadsPerBlock - 1) / kThreadsPerBlock, 1, kMaxBlocks));
}

}  // namespace rill::cuda

// for (int64_t i : grid-stride) over [0, n).
#define RILL_GRID_LOOP(i, n)                                                             \
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < (n); \
       i += static_cast<int64_t>(blockDim.x) * gridDim.x)

#endif  // RILL_KERNELS_CUDA_LAUNCH_H_
