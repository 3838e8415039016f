// Launchers of the CUDA kernels that move elements around (strided copies,
// gathers, one-hot encoding). They queue work on `stream` and return the
// launch's error; elements are opaque bytes, so one kernel serves every
// type of a size.
#ifndef RILL_KERNELS_CUDA_TRANSFORM_KERNELS_H_
#define RILL_KERNELS_CUDA_TRANSFORM_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace rill::cuda {

// For every index p of `dims` (row-major, `rank` of them):
//   dst[sum_i p_i * dst_strides[i]] = src[sum_i p_i * src_strides[i]],
// strides in elements (src's may be negative or 0). Nothing is launched
// for an empty copy; a contiguous one is a plain memcpy.
// REQUIRES: element_size in {1, 2, 4, 8, 16}; src and dst aligned to it;
// no two destination elements the same.
cudaError_t LaunchStridedCopy(const void* src, void* dst, int element_size, int rank,
                              const int64_t* dims, const int64_t* src_strides,
                              const int64_t* dst_strides, cudaStream_t stream);

// out[o, i, k] = params[o, indices[i], k] with params [outer, bound, inner]
// and out [outer, n, inner]; an index outside [0, bound) gives zero bytes.
// Indices are int32 or int64 (`indices_are_int64`) in device memory.
// REQUIRES: element_size in {1, 2, 4, 8, 16}; pointers aligned to it.
cudaError_t LaunchGather(const void* params, const void* indices, bool indices_are_int64, void* out,
                         int element_size, int64_t outer, int64_t bound, int64_t n, int64_t inner,
                         cudaStream_t stream);

// out[o, d, k] = indices[o, k] == d ? *on : *off for out [outer, depth,
// inner]; `on` and `off` point at one element each in device memory.
// REQUIRES: element_size in {1, 2, 4, 8}.
cudaError_t LaunchOneHot(const void* indices, bool indices_are_int64, const void* on,
                         const void* off, void* out, int element_size, int64_t outer, int64_t depth,
                         int64_t inner, cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_TRANSFORM_KERNELS_H_
