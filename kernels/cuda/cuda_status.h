// CUDA, cuBLAS and cuDNN results as absl::Status: what failed and the
// library's own words for why.
#ifndef RILL_KERNELS_CUDA_CUDA_STATUS_H_
#define RILL_KERNELS_CUDA_CUDA_STATUS_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <string_view>

#include "absl/status/status.h"

namespace rill {

absl::Status CudaError(cudaError_t error, std::string_view what);
absl::Status CudaResult(cudaError_t error, std::string_view what);  // OK on cudaSuccess.
absl::Status CublasResult(cublasStatus_t status, std::string_view what);
absl::Status CudnnResult(cudnnStatus_t status, std::string_view what);

}  // namespace rill

#define RETURN_IF_CUDA_ERROR(expr, what)                                                \
  do {                                                                                  \
    if (const cudaError_t rill_cuda_error_ = (expr); rill_cuda_error_ != cudaSuccess) { \
      return ::rill::CudaError(rill_cuda_error_, what);                                 \
    }                                                                                   \
  } while (false)

#endif  // RILL_KERNELS_CUDA_CUDA_STATUS_H_
