// The CUDA math functions by precision, so that a kernel templated on its
// element type calls Sqrt(x) for float and double alike, and integer
// arithmetic that wraps around.
#ifndef RILL_KERNELS_CUDA_DEVICE_MATH_CUH_
#define RILL_KERNELS_CUDA_DEVICE_MATH_CUH_

#include <type_traits>

namespace rill::cuda {

// Integer arithmetic wraps around, as two's complement does, rather than
// overflowing (undefined in C++).
template <typename T>
__device__ inline T Wrap(std::make_unsigned_t<T> v) {
  return static_cast<T>(v);
}
template <typename T>
__device__ inline std::make_unsigned_t<T> U(T v) {
  return static_cast<std::make_unsigned_t<T>>(v);
}

__device__ inline float Abs(float x) { return fabsf(x); }
__device__ inline double Abs(double x) { return fabs(x); }
__device__ inline float Sqrt(float x) { return sqrtf(x); }
__device__ inline double Sqrt(double x) { return sqrt(x); }
__device__ inline float Rsqrt(float x) { return rsqrtf(x); }
__device__ inline double Rsqrt(double x) { return rsqrt(x); }
__device__ inline float Exp(float x) { return expf(x); }
__device__ inline double Exp(double x) { return exp(x); }
__device__ inline float Log(float x) { return logf(x); }
__device__ inline double Log(double x) { return log(x); }
__device__ inline float Tanh(float x) { return tanhf(x); }
__device__ inline double Tanh(double x) { return tanh(x); }
__device__ inline float Floor(float x) { return floorf(x); }
__device__ inline double Floor(double x) { return floor(x); }
__device__ inline float Ceil(float x) { return ceilf(x); }
__device__ inline double Ceil(double x) { return ceil(x); }
__device__ inline float Rint(float x) { return rintf(x); }
__device__ inline double Rint(double x) { return rint(x); }
__device__ inline float Fmod(float a, float b) { return fmodf(a, b); }
__device__ inline double Fmod(double a, double b) { return fmod(a, b); }
__device__ inline float Pow(float a, float b) { return powf(a, b); }
__device__ inline double Pow(double a, double b) { return pow(a, b); }

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_DEVICE_MATH_CUH_
