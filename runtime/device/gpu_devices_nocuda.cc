// A build without CUDA has no GPU device.
#include "graph/status_macros.h"
#include "runtime/device/gpu_devices.h"

namespace rill {

absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::string& task, int max_count, std::shared_ptr<CpuThreads> host_threads,
    const GpuOptions& options) {
  static_cast<void>(task);
  static_cast<void>(host_threads);
  RETURN_IF_ERROR(ValidateGpuOptions(max_count, options));
  return std::vector<std::unique_ptr<Device>>();
}

}  // namespace rill
