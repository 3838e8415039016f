#include "kernels/cuda/cuda_status.h"

#include "absl/strings/str_format.h"

namespace rill {

absl::Status CudaError(cudaError_t error, std::string_view what) {
  return absl::InternalError(
      absl::StrFormat("%s: %s (%s)", what, cudaGetErrorString(error), cudaGetErrorName(error)));
}

absl::Status CudaResult(cudaError_t error, std::string_view what) {
  return error == cudaSuccess ? absl::OkStatus() : CudaError(error, what);
}

absl::Status CublasResult(cublasStatus_t status, std::string_view what) {
  if (status == CUBLAS_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s", what, cublasGetStatusString(status)));
}

absl::Status CudnnResult(cudnnStatus_t status, std::string_view what) {
  if (status == CUDNN_STATUS_SUCCESS) return absl::OkStatus();
  return absl::InternalError(absl::StrFormat("%s: %s", what, cudnnGetErrorString(status)));
}

}  // namespace rill
