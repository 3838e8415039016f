// CUDA reductions. Every reduction pass is an (outer, size, inner) problem:
// rows (inner == 1) are reduced by a thread, a warp or a block each, and
// columns by blocks of threads that each sum a strip of rows and combine
// in shared memory. A long reduction with few outputs is cut into segments
// whose partial results a second launch combines.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cuda/std/limits>
#include <vector>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce_ops.cuh"
#include "kernels/cuda/reduction_kernels.h"

namespace rill::cuda {
namespace {

// Below this many blocks' worth of outputs a long reduction is segmented,
// to about kTargetBlocks blocks.
constexpr int64_t kFewBlocks = 256;
constexpr int64_t kTargetBlocks = 1024;
// A row reduced by one thread is at most this long (by one warp: kWarpRow).
constexpr int64_t kThreadRow = 8;

// Mean's division in the last launch (divisor >= 0); none for divisor < 0.
// The mean of nothing is NaN for floats, 0 for integers, as on the CPU.
template <typename T>
__device__ T Finish(T acc, int64_t divisor) {
  if (divisor < 0) return acc;
  if constexpr (::cuda::std::numeric_limits<T>::is_integer) {
    return divisor == 0 ? T(0) : static_cast<T>(acc / divisor);
  } else {
    return acc / static_cast<T>(divisor);
  }
}

// Warp sum to lane 0.
template <typename T, typename Op>
__device__ T WarpReduce(T v, Op op) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v = op(v, __shfl_down_sync(0xffffffffu, v, offset));
  }
  return v;
}

// Task t of rows * segments reduces elements [seg * segment, (seg + 1) *
// segment) of row t / segments into out[t], with `group` threads (1, a
// warp, or the whole block).
template <typename T, typename Op>
__global__ void RowReduceKernel(const T* __restrict__ in, T* __restrict__ out, int64_t rows,
                                int64_t size, int64_t segment, int64_t segments, int group,
                                int64_t divisor) {
  __shared__ T warp_results[kWarpsPerBlock];
  const Op op;
  const int groups_per_block = blockDim.x / group;
  const int lane = threadIdx.x % group;
  const int64_t tasks = rows * segments;
  for (int64_t task = static_cast<int64_t>(blockIdx.x) * groups_per_block + threadIdx.x / group;
       task < tasks; task += static_cast<int64_t>(gridDim.x) * groups_per_block) {
    const int64_t row = task / segments;
    const int64_t begin = (task % segments) * segment;
    const int64_t end = size < begin + segment ? size : begin + segment;
    const T* p = in + row * size;
    T acc = Op::Identity();
    for (int64_t r = begin + lane; r < end; r += group) acc = op(acc, p[r]);
    if (group >= kWarp) acc = WarpReduce(acc, op);
    if (group == static_cast<int>(blockDim.x)) {
      if (threadIdx.x % kWarp == 0) warp_results[threadIdx.x / kWarp] = acc;
      __syncthreads();
      if (threadIdx.x == 0) {
        for (int w = 1; w < static_cast<int>(blockDim.x) / kWarp; ++w) {
          acc = op(acc, warp_results[w]);
        }
      }
      // warp_results is reused by the next task.
      __syncthreads();
    }
    if (lane == 0) out[task] = Finish(acc, divisor);
  }
}

// Task t of outer * tiles * segments reduces, for blockDim.x consecutive
// k of one tile, rows [seg * segment, (seg + 1) * segment) of in[o, :, k]
// into out[o, seg, k]; threadIdx.y strides the rows.
template <typename T, typename Op>
__global__ void ColumnReduceKernel(const T* __restrict__ in, T* __restrict__ out, int64_t outer,
                                   int64_t size, int64_t inner, int64_t segment, int64_t segments,
                                   int64_t divisor) {
  __shared__ T partial[kThreadsPerBlock];
  const Op op;
  const int tx = blockDim.x;
  const int ty = blockDim.y;
  const int slot = threadIdx.y * tx + threadIdx.x;
  const int64_t tiles = (inner + tx - 1) / tx;
  const int64_t tasks = outer * tiles * segments;
  for (int64_t task = blockIdx.x; task < tasks; task += gridDim.x) {
    const int64_t seg = task % segments;
    const int64_t tile = (task / segments) % tiles;
    const int64_t o = task / segments / tiles;
    const int64_t k = tile * tx + threadIdx.x;
    const int64_t begin = seg * segment;
    const int64_t end = size < begin + segment ? size : begin + segment;
    T acc = Op::Identity();
    if (k < inner) {
      const T* p = in + o * size * inner + k;
      for (int64_t r = begin + threadIdx.y; r < end; r += ty) acc = op(acc, p[r * inner]);
    }
    partial[slot] = acc;
    __syncthreads();
    for (int half = ty / 2; half > 0; half /= 2) {
      if (static_cast<int>(threadIdx.y) < half) {
        partial[slot] = op(partial[slot], partial[slot + half * tx]);
      }
      __syncthreads();
    }
    if (threadIdx.y == 0 && k < inner) {
      out[(o * segments + seg) * inner + k] = Finish(partial[threadIdx.x], divisor);
    }
    // partial is reused by the next task.
    __syncthreads();
  }
}

// One (outer, size, inner) reduction, in one launch or, segmented, two.
struct Pass {
  int64_t outer, size, inner;
};

// Threads across the columns of a column reduction: a power of two that
// covers `inner`, up to a warp.
int ColumnThreads(int64_t inner) {
  int tx = 1;
  while (tx < kWarp && tx < inner) tx *= 2;
  return tx;
}

// How many segments a pass is cut into (1: not cut).
int64_t Segments(const Pass& p) {
  if (p.outer * p.inner == 0) return 1;
  int64_t blocks;  // What the pass fills without segments.
  int64_t min_segment;
  if (p.inner == 1) {
    blocks = p.outer;
    min_segment = kWarpRow;
  } else {
    const int tx = ColumnThreads(p.inner);
    blocks = p.outer * CeilDiv(p.inner, tx);
    min_segment = 16 * (kThreadsPerBlock / tx);
  }
  if (blocks >= kFewBlocks || p.size <= 2 * min_segment) return 1;
  const int64_t wanted =
      std::clamp<int64_t>(CeilDiv(kTargetBlocks, blocks), 1, CeilDiv(p.size, min_segment));
  return CeilDiv(p.size, CeilDiv(p.size, wanted));
}

int64_t PartialElements(const Pass& p) {
  const int64_t segments = Segments(p);
  return segments > 1 ? p.outer * segments * p.inner : 0;
}

// One launch: reduces `segments` segments of `segment` elements of each
// (o, k) of `p` into out[o, seg, k].
template <typename T, typename Op>
void LaunchSegments(const T* in, T* out, const Pass& p, int64_t segment, int64_t segments,
                    int64_t divisor, cudaStream_t stream) {
  if (p.inner == 1) {
    const int group = segment <= kThreadRow ? 1 : segment <= kWarpRow ? kWarp : kThreadsPerBlock;
    const int64_t groups = p.outer * segments;
    const int64_t blocks = CeilDiv(groups, kThreadsPerBlock / group);
    RowReduceKernel<T, Op><<<Blocks(blocks), kThreadsPerBlock, 0, stream>>>(
        in, out, p.outer, p.size, segment, segments, group, divisor);
  } else {
    const int tx = ColumnThreads(p.inner);
    const dim3 threads(tx, kThreadsPerBlock / tx);
    const int64_t tasks = p.outer * CeilDiv(p.inner, tx) * segments;
    ColumnReduceKernel<T, Op><<<Blocks(tasks), threads, 0, stream>>>(
        in, out, p.outer, p.size, p.inner, segment, segments, divisor);
  }
}

template <typename T, typename Op>
cudaError_t LaunchPass(const T* in, T* out, const Pass& p, int64_t divisor, T* partial,
                       cudaStream_t stream) {
  if (p.outer * p.inner == 0) return cudaSuccess;
  const int64_t segments = Segments(p);
  if (segments == 1) {
    LaunchSegments<T, Op>(in, out, p, std::max<int64_t>(p.size, 1), 1, divisor, stream);
    return cudaGetLastError();
  }
  LaunchSegments<T, Op>(in, partial, p, CeilDiv(p.size, segments), segments, -1, stream);
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  LaunchSegments<T, Op>(partial, out, Pass{p.outer, segments, p.inner}, segments, 1, divisor,
                        stream);
  return cudaGetLastError();
}

// The passes of a reduction of folded runs: the innermost reduced run
// first, its kept neighbours merged after it.
std::vector<Pass> PlanPasses(const int64_t* dims_in, const bool* reduced_in, int n) {
  std::vector<int64_t> dims(dims_in, dims_in + n);
  std::vector<bool> reduced(reduced_in, reduced_in + n);
  std::vector<Pass> passes;
  for (;;) {
    int j = static_cast<int>(dims.size()) - 1;
    while (j >= 0 && !reduced[j]) --j;
    if (j < 0) return passes;
    Pass p{1, dims[j], 1};
    for (int i = 0; i < j; ++i) p.outer *= dims[i];
    for (size_t i = j + 1; i < dims.size(); ++i) p.inner *= dims[i];
    passes.push_back(p);
    dims.erase(dims.begin() + j);
    reduced.erase(reduced.begin() + j);
    if (j > 0 && j < static_cast<int>(dims.size())) {
      dims[j - 1] *= dims[j];
      dims.erase(dims.begin() + j);
      reduced.erase(reduced.begin() + j);
    }
  }
}

template <typename T, typename Op>
cudaError_t LaunchPasses(const T* in, T* out, const std::vector<Pass>& passes, int64_t divisor,
                         T* scratch, cudaStream_t stream) {
  // scratch: each pass's output but the last's, then one pass's partials.
  T* partial = scratch;
  for (size_t i = 0; i + 1 < passes.size(); ++i) {
    partial += passes[i].outer * passes[i].inner;
  }
  const T* from = in;
  T* next = scratch;
  for (size_t i = 0; i < passes.size(); ++i) {
    const Pass& p = passes[i];
    const bool last = i + 1 == passes.size();
    T* to = last ? out : next;
    const cudaError_t e = LaunchPass<T, Op>(from, to, p, last ? divisor : -1, partial, stream);
    if (e != cudaSuccess) return e;
    from = to;
    next += p.outer * p.inner;
  }
  return cudaSuccess;
}

template <typename T>
__device__ bool Better(T v, T best, bool max) {
  return max ? best < v : v < best;
}

// A warp per row; ties go to the first index.
template <typename T>
__global__ void ArgRowKernel(const T* __restrict__ in, int64_t* __restrict__ out, int64_t rows,
                             int64_t size, bool max) {
  const int lane = threadIdx.x % kWarp;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (blockDim.x / kWarp);
  for (int64_t row = (static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x) / kWarp;
       row < rows; row += warps) {
    const T* p = in + row * size;
    T best = T(0);
    int64_t best_at = -1;
    for (int64_t r = lane; r < size; r += kWarp) {
      if (best_at < 0 || Better(p[r], best, max)) {
        best = p[r];
        best_at = r;
      }
    }
    for (int offset = kWarp / 2; offset > 0; offset /= 2) {
      const T v = __shfl_down_sync(0xffffffffu, best, offset);
      const int64_t at = __shfl_down_sync(0xffffffffu, best_at, offset);
      if (at >= 0 &&
          (best_at < 0 || Better(v, best, max) || (!Better(best, v, max) && at < best_at))) {
        best = v;
        best_at = at;
      }
    }
    if (lane == 0) out[row] = best_at;
  }
}

// A thread per output column.
template <typename T>
__global__ void ArgColumnKernel(const T* __restrict__ in, int64_t* __restrict__ out, int64_t outer,
                                int64_t size, int64_t inner, bool max) {
  RILL_GRID_LOOP(i, outer * inner) {
    const T* p = in + (i / inner) * size * inner + i % inner;
    T best = p[0];
    int64_t best_at = 0;
    for (int64_t r = 1; r < size; ++r) {
      const T v = p[r * inner];
      if (Better(v, best, max)) {
        best = v;
        best_at = r;
      }
    }
    out[i] = best_at;
  }
}

}  // namespace

int64_t ReduceScratchElements(const int64_t* dims, const bool* reduced, int n) {
  const std::vector<Pass> passes = PlanPasses(dims, reduced, n);
  int64_t elements = 0;
  int64_t partial = 0;
  for (size_t i = 0; i < passes.size(); ++i) {
    if (i + 1 < passes.size()) elements += passes[i].outer * passes[i].inner;
    partial = std::max(partial, PartialElements(passes[i]));
  }
  return elements + partial;
}

template <typename T>
cudaError_t LaunchReduce(ReduceOp op, const T* in, T* out, const int64_t* dims, const bool* reduced,
                         int n, T* scratch, cudaStream_t stream) {
  const std::vector<Pass> passes = PlanPasses(dims, reduced, n);
  if (passes.empty()) {
    // Nothing but size-1 dimensions is reduced: each output is its input.
    int64_t elements = 1;
    for (int i = 0; i < n; ++i) elements *= dims[i];
    return cudaMemcpyAsync(out, in, elements * sizeof(T), cudaMemcpyDeviceToDevice, stream);
  }
  switch (op) {
    case ReduceOp::kSum:
      return LaunchPasses<T, SumOp<T>>(in, out, passes, -1, scratch, stream);
    case ReduceOp::kMean: {
      int64_t count = 1;
      for (int i = 0; i < n; ++i) count *= reduced[i] ? dims[i] : 1;
      return LaunchPasses<T, SumOp<T>>(in, out, passes, count, scratch, stream);
    }
    case ReduceOp::kProd:
      return LaunchPasses<T, ProdOp<T>>(in, out, passes, -1, scratch, stream);
    case ReduceOp::kMax:
      return LaunchPasses<T, MaxOp<T>>(in, out, passes, -1, scratch, stream);
    case ReduceOp::kMin:
      return LaunchPasses<T, MinOp<T>>(in, out, passes, -1, scratch, stream);
  }
  return cudaErrorInvalidValue;
}

template <typename T>
cudaError_t LaunchArgReduce(bool max, const T* in, int64_t* out, int64_t outer, int64_t size,
                            int64_t inner, cudaStream_t stream) {
  if (outer * inner == 0) return cudaSuccess;
  if (inner == 1) {
    ArgRowKernel<<<Blocks(CeilDiv(outer, kWarpsPerBlock)), kThreadsPerBlock, 0, stream>>>(
        in, out, outer, size, max);
  } else {
    ArgColumnKernel<<<BlocksFor(outer * inner), kThreadsPerBlock, 0, stream>>>(in, out, outer, size,
                                                                               inner, max);
  }
  return cudaGetLastError();
}

#define RILL_REDUCE_TYPE(T)                                                                      \
  template cudaError_t LaunchReduce<T>(ReduceOp, const T*, T*, const int64_t*, const bool*, int, \
                                       T*, cudaStream_t);                                        \
  template cudaError_t LaunchArgReduce<T>(bool, const T*, int64_t*, int64_t, int64_t, int64_t,   \
                                          cudaStream_t);
RILL_REDUCE_TYPE(float)
RILL_REDUCE_TYPE(double)
RILL_REDUCE_TYPE(int64_t)
#undef RILL_REDUCE_TYPE

}  // namespace rill::cuda
