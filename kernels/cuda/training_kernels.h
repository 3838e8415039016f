// Launchers of rill's CUDA optimizer updates (ApplyGradientDescent,
// ApplyMomentum, ApplyAdam; kernels/cuda/training_kernels.cu).
#ifndef RILL_KERNELS_CUDA_TRAINING_KERNELS_H_
#define RILL_KERNELS_CUDA_TRAINING_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

// As in cwise_kernels.h: each launcher queues one kernel on `stream` and
// returns; n == 0 launches nothing.
namespace rill::cuda {

// The optimizer updates, in place; the scalar hyper-parameters are device
// pointers read by the kernel. float, double.
template <typename T>
void LaunchApplyGradientDescent(T* var, const T* alpha, const T* delta, int64_t n,
                                cudaStream_t stream);
template <typename T>
void LaunchApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum,
                         bool use_nesterov, int64_t n, cudaStream_t stream);
template <typename T>
struct AdamScalars {
  const T* beta1_power;
  const T* beta2_power;
  const T* lr;
  const T* beta1;
  const T* beta2;
  const T* epsilon;
};
template <typename T>
void LaunchApplyAdam(T* var, T* m, T* v, const AdamScalars<T>& scalars, const T* grad,
                     bool use_nesterov, int64_t n, cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_TRAINING_KERNELS_H_
