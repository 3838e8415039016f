// Launchers of the CUDA reductions: Sum, Mean, Prod, Max and Min over runs
// of dimensions, and ArgMax/ArgMin over one. They queue work on `stream`
// and return the launch's error.
// Instantiated for T in {float, double, int64_t}.
#ifndef RILL_KERNELS_CUDA_REDUCTION_KERNELS_H_
#define RILL_KERNELS_CUDA_REDUCTION_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

namespace rill::cuda {

enum class ReduceOp { kSum, kMean, kProd, kMax, kMin };

// The input viewed as `n` runs of dimensions, `dims[i]` elements each,
// alternately kept and reduced (`reduced[i]`), as reduction_util::Fold
// gives them; the output holds the kept runs in order. Reducing nothing
// gives the op's identity: 0, 1, -inf or +inf (lowest or highest for
// integers), and NaN for a float Mean (0 for an integer one).
//
// Several reduced runs take one pass each, innermost first, through
// `scratch`, which must hold ReduceScratchElements(...) elements of T.
int64_t ReduceScratchElements(const int64_t* dims, const bool* reduced, int n);
template <typename T>
cudaError_t LaunchReduce(ReduceOp op, const T* in, T* out, const int64_t* dims, const bool* reduced,
                         int n, T* scratch, cudaStream_t stream);

// out[o, k] = the first r at which in[o, r, k] is largest (`max`) or
// smallest, for in [outer, size, inner]. REQUIRES: size > 0.
template <typename T>
cudaError_t LaunchArgReduce(bool max, const T* in, int64_t* out, int64_t outer, int64_t size,
                            int64_t inner, cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_REDUCTION_KERNELS_H_
