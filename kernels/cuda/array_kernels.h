// Launchers of rill's CUDA conversion and data-movement kernels (Cast, Fill,
// Select; kernels/cuda/array_kernels.cu) over plain device pointers.
#ifndef RILL_KERNELS_CUDA_ARRAY_KERNELS_H_
#define RILL_KERNELS_CUDA_ARRAY_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

// As in cwise_kernels.h: each launcher queues one kernel on `stream` and
// returns; n == 0 launches nothing.
namespace rill::cuda {

// y = x converted as C++'s static_cast converts (through float for Half).
enum class CastType { kFloat, kDouble, kInt64, kBool, kHalf };
void LaunchCast(CastType from, CastType to, const void* x, void* y, int64_t n, cudaStream_t stream);

// Sets n elements of `bytes` bytes (1, 2, 4 or 8) to *value, a device
// scalar, or, when `value` is null, to the low bytes of `bits`.
void LaunchFill(int bytes, void* out, int64_t n, const void* value, uint64_t bits,
                cudaStream_t stream);

// out[i] = cond ? t[i] : e[i] for elements of `bytes` bytes (1, 4 or 8),
// where cond is cond[0] (rows == 0, a scalar condition), cond[i] (rows ==
// n) or cond[i / (n / rows)] (one per row of a [rows, ...] value).
void LaunchSelect(int bytes, const bool* cond, int64_t rows, const void* t, const void* e,
                  void* out, int64_t n, cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_ARRAY_KERNELS_H_
