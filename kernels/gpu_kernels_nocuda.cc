// A build without CUDA runs no CUDA kernel, but knows which exist: the
// placer can then plan a graph for GPUs (rill place --device_count GPU=2).
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "kernels/registry.h"

namespace rill {

void RegisterCudaKernels(KernelRegistry& registry) {
  for (std::string_view text : CudaKernelDefs()) {
    absl::StatusOr<KernelDef> def = ParseKernelDefText(text, kDeviceGpu);
    if (!def.ok()) continue;  // cuda_kernel_defs_test keeps the list parseable.
    registry.Register(
        *std::move(def),
        [](const OpKernelConstruction& c) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
          return absl::FailedPreconditionError(absl::StrFormat(
              "'%s' (%s): this rill was built without CUDA, so it runs no GPU kernel",
              c.def().name(), c.def().op()));
        });
  }
}

}  // namespace rill
