#include "runtime/device/gpu_devices.h"

#include "absl/strings/str_format.h"

namespace rill {

absl::Status ValidateGpuOptions(int max_count, const GpuOptions& options) {
  if (max_count < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the GPU count is %d; counts cannot be negative", max_count));
  }
  if (options.memory_limit_bytes < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "GpuOptions.memory_limit_bytes is %d; it cannot be negative (0: 90%% of the free memory)",
        options.memory_limit_bytes));
  }
  if (options.virtual_devices_per_gpu < 1 || options.virtual_devices_per_gpu > 16) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GpuOptions.virtual_devices_per_gpu is %d; it must be in 1..16",
                        options.virtual_devices_per_gpu));
  }
  return absl::OkStatus();
}

}  // namespace rill
