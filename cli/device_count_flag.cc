#include "cli/device_count_flag.h"

#include "absl/strings/str_format.h"
#include "runtime/device/device_factory.h"

namespace rill::cli {

absl::StatusOr<std::map<std::string, int>> ParseDeviceCountFlag(const std::string &value) {
  absl::StatusOr<std::map<std::string, int>> device_count = ParseDeviceCount(value);
  if (!device_count.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--device_count '%s': %s", value, device_count.status().message()));
  }
  return device_count;
}

}  // namespace rill::cli
