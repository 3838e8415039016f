// rill's CUDA optimizer updates: one element-wise kernel per optimizer,
// reading its scalar hyper-parameters from device memory.
#include <cstdint>

#include "kernels/cuda/device_math.cuh"
#include "kernels/cuda/launch.h"
#include "kernels/cuda/training_kernels.h"

namespace rill::cuda {
namespace {

template <typename T>
__global__ void ApplyGradientDescentKernel(T* var, const T* alpha, const T* delta, int64_t n) {
  const T a = *alpha;
  RILL_GRID_LOOP(i, n) { var[i] -= delta[i] * a; }
}

template <typename T>
__global__ void ApplyMomentumKernel(T* var, T* accum, const T* lr_in, const T* grad,
                                    const T* momentum_in, bool use_nesterov, int64_t n) {
  const T lr = *lr_in;
  const T momentum = *momentum_in;
  RILL_GRID_LOOP(i, n) {
    const T g = grad[i];
    const T a = accum[i] * momentum + g;
    accum[i] = a;
    if (use_nesterov) {
      var[i] -= g * lr + a * (momentum * lr);
    } else {
      var[i] -= a * lr;
    }
  }
}

template <typename T>
__global__ void ApplyAdamKernel(T* var, T* m_out, T* v_out, AdamScalars<T> s, const T* grad,
                                bool use_nesterov, int64_t n) {
  const T one(1);
  const T beta1 = *s.beta1;
  const T beta2 = *s.beta2;
  const T epsilon = *s.epsilon;
  const T lr_t = *s.lr * Sqrt(one - *s.beta2_power) / (one - *s.beta1_power);
  RILL_GRID_LOOP(i, n) {
    const T g = grad[i];
    T m = m_out[i];
    T v = v_out[i];
    m += (g - m) * (one - beta1);
    v += (g * g - v) * (one - beta2);
    m_out[i] = m;
    v_out[i] = v;
    const T step = use_nesterov ? (g * (one - beta1) + m * beta1) * lr_t : m * lr_t;
    var[i] -= step / (Sqrt(v) + epsilon);
  }
}

}  // namespace

template <typename T>
void LaunchApplyGradientDescent(T* var, const T* alpha, const T* delta, int64_t n,
                                cudaStream_t stream) {
  if (n == 0) return;
  ApplyGradientDescentKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, alpha, delta, n);
}
template void LaunchApplyGradientDescent(float*, const float*, const float*, int64_t, cudaStream_t);
template void LaunchApplyGradientDescent(double*, const double*, const double*, int64_t,
                                         cudaStream_t);

template <typename T>
void LaunchApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum,
                         bool use_nesterov, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ApplyMomentumKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, accum, lr, grad, momentum,
                                                                     use_nesterov, n);
}
template void LaunchApplyMomentum(float*, float*, const float*, const float*, const float*, bool,
                                  int64_t, cudaStream_t);
template void LaunchApplyMomentum(double*, double*, const double*, const double*, const double*,
                                  bool, int64_t, cudaStream_t);

template <typename T>
void LaunchApplyAdam(T* var, T* m, T* v, const AdamScalars<T>& scalars, const T* grad,
                     bool use_nesterov, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ApplyAdamKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, m, v, scalars, grad,
                                                                 use_nesterov, n);
}
template void LaunchApplyAdam(float*, float*, float*, const AdamScalars<float>&, const float*, bool,
                              int64_t, cudaStream_t);
template void LaunchApplyAdam(double*, double*, double*, const AdamScalars<double>&, const double*,
                              bool, int64_t, cudaStream_t);

}  // namespace rill::cuda
