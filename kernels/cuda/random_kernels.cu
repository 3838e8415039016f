// Device code of the random and cuDNN kernels (random_ops.cc, dnn_conv_ops.cc, dnn_pooling_ops.cc):
// element-wise maps over cuRAND's output and the layout copies around
// cuDNN's calls.
#include "kernels/cuda/launch.h"
#include "kernels/cuda/random_kernels.h"

namespace rill::cuda {
namespace {

__global__ void UniformFloatKernel(const uint32_t* bits, float* out, int64_t n) {
  // The top 24 bits: every value k * 2^-24 is exact in a float, the
  // largest below 1.
  RILL_GRID_LOOP(i, n) { out[i] = static_cast<float>(bits[i] >> 8) * 0x1.0p-24f; }
}

__global__ void UniformDoubleKernel(const uint32_t* bits, double* out, int64_t n) {
  RILL_GRID_LOOP(i, n) {
    const uint64_t word = (static_cast<uint64_t>(bits[2 * i]) << 32) | bits[2 * i + 1];
    out[i] = static_cast<double>(word >> 11) * 0x1.0p-53;
  }
}

// Phi(-2) and Phi(2), the standard normal CDF at the truncation points.
constexpr double kCdfLow = 0.022750131948179207;
constexpr double kCdfHigh = 0.97724986805182079;

__global__ void TruncatedNormalFloatKernel(float* values, int64_t n) {
  RILL_GRID_LOOP(i, n) {
    const float p =
        static_cast<float>(kCdfLow) + values[i] * static_cast<float>(kCdfHigh - kCdfLow);
    // The clamp only absorbs rounding at the ends.
    values[i] = fminf(fmaxf(normcdfinvf(p), -2.0f), 2.0f);
  }
}

__global__ void TruncatedNormalDoubleKernel(double* values, int64_t n) {
  RILL_GRID_LOOP(i, n) {
    const double p = kCdfLow + values[i] * (kCdfHigh - kCdfLow);
    values[i] = fmin(fmax(normcdfinv(p), -2.0), 2.0);
  }
}

template <typename T>
__global__ void Relayout4dKernel(const T* in, T* out, Relayout4d r, T fill, int64_t n) {
  RILL_GRID_LOOP(i, n) {
    int64_t rest = i;
    int64_t offset = 0;
    bool inside = true;
    for (int k = 3; k >= 0; --k) {
      const int64_t o = rest % r.out_dims[k];
      rest /= r.out_dims[k];
      const int64_t at = o - r.pad_before[k];
      inside = inside && at >= 0 && at < r.in_dims[k];
      offset += at * r.in_strides[k];
    }
    out[i] = inside ? in[offset] : fill;
  }
}

}  // namespace

template <typename T>
void LaunchUniformFromBits(const uint32_t* bits, T* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if constexpr (sizeof(T) == sizeof(float)) {
    UniformFloatKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(bits, out, n);
  } else {
    UniformDoubleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(bits, out, n);
  }
}

template <typename T>
void LaunchTruncatedNormalFromUniform(T* values, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  if constexpr (sizeof(T) == sizeof(float)) {
    TruncatedNormalFloatKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(values, n);
  } else {
    TruncatedNormalDoubleKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(values, n);
  }
}

template <typename T>
void LaunchRelayout4d(const T* in, T* out, const Relayout4d& relayout, T fill,
                      cudaStream_t stream) {
  const int64_t n =
      relayout.out_dims[0] * relayout.out_dims[1] * relayout.out_dims[2] * relayout.out_dims[3];
  if (n == 0) return;
  Relayout4dKernel<T><<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(in, out, relayout, fill, n);
}

template void LaunchUniformFromBits<float>(const uint32_t*, float*, int64_t, cudaStream_t);
template void LaunchUniformFromBits<double>(const uint32_t*, double*, int64_t, cudaStream_t);
template void LaunchTruncatedNormalFromUniform<float>(float*, int64_t, cudaStream_t);
template void LaunchTruncatedNormalFromUniform<double>(double*, int64_t, cudaStream_t);
template void LaunchRelayout4d<float>(const float*, float*, const Relayout4d&, float, cudaStream_t);
template void LaunchRelayout4d<double>(const double*, double*, const Relayout4d&, double,
                                       cudaStream_t);

}  // namespace rill::cuda
