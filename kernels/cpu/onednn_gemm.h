// Single-precision GEMM through oneDNN, for the float32 matrix products
// (MatMul, BatchMatMulV2, Conv2D's im2col product) on which it is faster
// than Eigen's tensor contraction.
#ifndef RILL_KERNELS_CPU_ONEDNN_GEMM_H_
#define RILL_KERNELS_CPU_ONEDNN_GEMM_H_

#include <cstdint>

#include "absl/status/status.h"
#include "unsupported/Eigen/CXX11/Tensor"

namespace rill {

// Whether this build has oneDNN.
bool HaveOneDnn();

// Whether out = op(a) * op(b), with op(a) [m, k] and op(b) [k, n], should go
// through OneDnnSgemm: false in a build without oneDNN.
bool PreferOneDnnSgemm(int64_t m, int64_t n, int64_t k);

// out = op(a) * op(b) (or out += when `accumulate`) for row-major a ([m,
// k], or [k, m] when transpose_a) and b ([k, n], or [n, k] when
// transpose_b) into row-major out [m, n], on the threads of `d`.
// REQUIRES: a build with oneDNN (else UNIMPLEMENTED); m, n, k > 0.
// Thread safety: may be called from any number of threads at once.
absl::Status OneDnnSgemm(const Eigen::ThreadPoolDevice& d, bool transpose_a, bool transpose_b,
                         int64_t m, int64_t n, int64_t k, const float* a, const float* b,
                         float* out, bool accumulate = false);

}  // namespace rill

#endif  // RILL_KERNELS_CPU_ONEDNN_GEMM_H_
