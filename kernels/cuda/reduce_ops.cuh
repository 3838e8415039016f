// What the CUDA reductions and the softmax losses share: the warp size, the
// combining operators with their identities, and launch arithmetic.
#ifndef RILL_KERNELS_CUDA_REDUCE_OPS_CUH_
#define RILL_KERNELS_CUDA_REDUCE_OPS_CUH_

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cuda/std/limits>

#include "kernels/cuda/launch.h"

namespace rill::cuda {

inline constexpr int kWarp = 32;
inline constexpr int kWarpsPerBlock = kThreadsPerBlock / kWarp;
// A row reduced by one warp is at most this long; longer ones take a block.
inline constexpr int64_t kWarpRow = 4096;

inline int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

inline int Blocks(int64_t units) {
  return static_cast<int>(std::clamp<int64_t>(units, 1, kMaxBlocks));
}

template <typename T>
struct SumOp {
  __device__ static T Identity() { return T(0); }
  __device__ T operator()(T a, T b) const { return a + b; }
};
template <typename T>
struct ProdOp {
  __device__ static T Identity() { return T(1); }
  __device__ T operator()(T a, T b) const { return a * b; }
};
// Float extremes of nothing are infinities, as TensorFlow gives them.
template <typename T>
struct MaxOp {
  __device__ static T Identity() {
    if constexpr (::cuda::std::numeric_limits<T>::has_infinity) {
      return -::cuda::std::numeric_limits<T>::infinity();
    } else {
      return ::cuda::std::numeric_limits<T>::lowest();
    }
  }
  __device__ T operator()(T a, T b) const { return a < b ? b : a; }
};
template <typename T>
struct MinOp {
  __device__ static T Identity() {
    if constexpr (::cuda::std::numeric_limits<T>::has_infinity) {
      return ::cuda::std::numeric_limits<T>::infinity();
    } else {
      return ::cuda::std::numeric_limits<T>::max();
    }
  }
  __device__ T operator()(T a, T b) const { return b < a ? b : a; }
};

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_REDUCE_OPS_CUH_
