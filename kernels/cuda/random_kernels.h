// Launchers of rill's own CUDA kernels beside cuRAND and cuDNN: Philox
// output turned into TensorFlow's distributions, and 4-D tensors moved
// between layouts with padding (cuDNN's NCHW and TensorFlow's NHWC, HWIO).
#ifndef RILL_KERNELS_CUDA_RANDOM_KERNELS_H_
#define RILL_KERNELS_CUDA_RANDOM_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace rill::cuda {

// out[i] uniform in [0, 1) from as many random bits as T's significand
// holds: one 32-bit word per float (24 bits), two per double (53 bits).
// `bits` holds n (float) or 2n (double) words.
template <typename T>
void LaunchUniformFromBits(const uint32_t* bits, T* out, int64_t n, cudaStream_t stream);

// Maps values uniform in (0, 1] in place through the inverse normal CDF
// restricted to [-2, 2]: exactly the standard normal truncated at two
// standard deviations, without redraws.
template <typename T>
void LaunchTruncatedNormalFromUniform(T* values, int64_t n, cudaStream_t stream);

// A copy between two 4-D layouts. The output is packed in the order of
// out_dims; its element at coordinates o reads the input at i = o -
// pad_before (per dimension) from in[sum(i[k] * in_strides[k])], or is
// `fill` where some i[k] lies outside [0, in_dims[k]). A positive
// pad_before pads, a negative one crops.
struct Relayout4d {
  int64_t out_dims[4];
  int64_t in_dims[4];
  int64_t in_strides[4];
  int64_t pad_before[4];
};

template <typename T>
void LaunchRelayout4d(const T* in, T* out, const Relayout4d& relayout, T fill, cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_RANDOM_KERNELS_H_
