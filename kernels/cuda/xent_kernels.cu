// CUDA softmax cross-entropy: a warp per row, or a block for long rows,
// finds the row's maximum and log-sum-exp, then writes loss and backprop.
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>

#include "kernels/cuda/launch.h"
#include "kernels/cuda/reduce_ops.cuh"
#include "kernels/cuda/xent_kernels.h"

namespace rill::cuda {
namespace {

__device__ float Exp(float x) { return expf(x); }
__device__ double Exp(double x) { return exp(x); }
__device__ float Log(float x) { return logf(x); }
__device__ double Log(double x) { return log(x); }

// The group's combined value, in every thread of the group (a warp or the
// whole block).
template <typename T, typename Op>
__device__ T GroupAllReduce(T v, Op op, int group, T* warp_results) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2) {
    v = op(v, __shfl_xor_sync(0xffffffffu, v, offset));
  }
  if (group == kWarp) return v;
  if (threadIdx.x % kWarp == 0) warp_results[threadIdx.x / kWarp] = v;
  __syncthreads();
  v = warp_results[0];
  for (int w = 1; w < static_cast<int>(blockDim.x) / kWarp; ++w) v = op(v, warp_results[w]);
  __syncthreads();
  return v;
}

// The row's maximum and log(sum(exp(x - max))), in every thread of the
// row's group.
template <typename T>
__device__ void RowLogSumExp(const T* x, int64_t classes, int lane, int group, T* warp_results,
                             T* row_max, T* log_sum) {
  T m = MaxOp<T>::Identity();
  for (int64_t c = lane; c < classes; c += group) m = MaxOp<T>()(m, x[c]);
  m = GroupAllReduce(m, MaxOp<T>(), group, warp_results);
  T s = T(0);
  for (int64_t c = lane; c < classes; c += group) s += Exp(x[c] - m);
  s = GroupAllReduce(s, SumOp<T>(), group, warp_results);
  *row_max = m;
  *log_sum = Log(s);
}

template <typename T>
__global__ void SoftmaxXentKernel(const T* __restrict__ logits, const T* __restrict__ labels,
                                  T* __restrict__ loss, T* __restrict__ backprop, int64_t rows,
                                  int64_t classes, int group) {
  __shared__ T warp_results[kWarpsPerBlock];
  const int groups_per_block = blockDim.x / group;
  const int lane = threadIdx.x % group;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * groups_per_block + threadIdx.x / group;
       row < rows; row += static_cast<int64_t>(gridDim.x) * groups_per_block) {
    const T* x = logits + row * classes;
    const T* y = labels + row * classes;
    T* g = backprop + row * classes;
    T row_max, log_sum;
    RowLogSumExp(x, classes, lane, group, warp_results, &row_max, &log_sum);
    T l = T(0);
    for (int64_t c = lane; c < classes; c += group) {
      const T shifted = x[c] - row_max;
      l += y[c] * (log_sum - shifted);
      g[c] = Exp(shifted - log_sum) - y[c];
    }
    l = GroupAllReduce(l, SumOp<T>(), group, warp_results);
    if (lane == 0) loss[row] = l;
  }
}

template <typename T, typename L>
__global__ void SparseSoftmaxXentKernel(const T* __restrict__ logits, const L* __restrict__ labels,
                                        T* __restrict__ loss, T* __restrict__ backprop,
                                        int64_t rows, int64_t classes, int group) {
  __shared__ T warp_results[kWarpsPerBlock];
  const int groups_per_block = blockDim.x / group;
  const int lane = threadIdx.x % group;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * groups_per_block + threadIdx.x / group;
       row < rows; row += static_cast<int64_t>(gridDim.x) * groups_per_block) {
    const T* x = logits + row * classes;
    T* g = backprop + row * classes;
    const int64_t label = static_cast<int64_t>(labels[row]);
    T row_max, log_sum;
    RowLogSumExp(x, classes, lane, group, warp_results, &row_max, &log_sum);
    if (label < 0 || label >= classes) {
      const T nan = ::cuda::std::numeric_limits<T>::quiet_NaN();
      for (int64_t c = lane; c < classes; c += group) g[c] = nan;
      if (lane == 0) loss[row] = nan;
      continue;
    }
    for (int64_t c = lane; c < classes; c += group) {
      g[c] = Exp(x[c] - row_max - log_sum) - (c == label ? T(1) : T(0));
    }
    if (lane == 0) loss[row] = log_sum - (x[label] - row_max);
  }
}

// Threads per row of a softmax: a warp, or a block for long rows.
int SoftmaxGroup(int64_t classes) { return classes <= 2 * kWarpRow ? kWarp : kThreadsPerBlock; }

int64_t SoftmaxBlocks(int64_t rows, int group) { return CeilDiv(rows, kThreadsPerBlock / group); }

}  // namespace

template <typename T>
cudaError_t LaunchSoftmaxXent(const T* logits, const T* labels, T* loss, T* backprop, int64_t rows,
                              int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int group = SoftmaxGroup(classes);
  SoftmaxXentKernel<<<Blocks(SoftmaxBlocks(rows, group)), kThreadsPerBlock, 0, stream>>>(
      logits, labels, loss, backprop, rows, classes, group);
  return cudaGetLastError();
}

template <typename T, typename L>
cudaError_t LaunchSparseSoftmaxXent(const T* logits, const L* labels, T* loss, T* backprop,
                                    int64_t rows, int64_t classes, cudaStream_t stream) {
  if (rows == 0) return cudaSuccess;
  const int group = SoftmaxGroup(classes);
  SparseSoftmaxXentKernel<<<Blocks(SoftmaxBlocks(rows, group)), kThreadsPerBlock, 0, stream>>>(
      logits, labels, loss, backprop, rows, classes, group);
  return cudaGetLastError();
}

template cudaError_t LaunchSoftmaxXent<float>(const float*, const float*, float*, float*, int64_t,
                                              int64_t, cudaStream_t);
template cudaError_t LaunchSoftmaxXent<double>(const double*, const double*, double*, double*,
                                               int64_t, int64_t, cudaStream_t);
template cudaError_t LaunchSparseSoftmaxXent<float, int32_t>(const float*, const int32_t*, float*,
                                                             float*, int64_t, int64_t,
                                                             cudaStream_t);
template cudaError_t LaunchSparseSoftmaxXent<float, int64_t>(const float*, const int64_t*, float*,
                                                             float*, int64_t, int64_t,
                                                             cudaStream_t);
template cudaError_t LaunchSparseSoftmaxXent<double, int32_t>(const double*, const int32_t*,
                                                              double*, double*, int64_t, int64_t,
                                                              cudaStream_t);
template cudaError_t LaunchSparseSoftmaxXent<double, int64_t>(const double*, const int64_t*,
                                                              double*, double*, int64_t, int64_t,
                                                              cudaStream_t);

}  // namespace rill::cuda
