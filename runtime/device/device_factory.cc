#include "runtime/device/device_factory.h"

#include <algorithm>
#include <charconv>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "graph/status_macros.h"
#include "runtime/device/gpu_devices.h"

namespace rill {
namespace {

constexpr int kMaxDevicesPerType = 64;

}  // namespace

absl::Status ValidateDeviceCount(const std::map<std::string, int>& device_count) {
  for (const auto& [type, count] : device_count) {
    if (type != kDeviceCpu && type != kDeviceGpu) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "device_count names device type '%s'; known types are CPU and GPU", type));
    }
    if (count < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("device_count[\"%s\"] is %d; counts cannot be negative", type, count));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::map<std::string, int>> ParseDeviceCount(std::string_view text) {
  std::map<std::string, int> device_count;
  const auto bad = [](std::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s (expected TYPE=N[,TYPE=N], e.g. CPU=2)", why));
  };
  for (absl::string_view piece : absl::StrSplit(absl::string_view(text.data(), text.size()), ',')) {
    const std::string_view part(piece.data(), piece.size());
    const size_t eq = part.find('=');
    if (eq == std::string_view::npos) return bad(absl::StrFormat("'%s' has no '='", part));
    const std::string type(part.substr(0, eq));
    const std::string_view digits = part.substr(eq + 1);
    int count = -1;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), count);
    if (ec != std::errc() || end != digits.data() + digits.size() || count < 0 ||
        count > kMaxDevicesPerType) {
      return bad(absl::StrFormat("'%s' is not a count in 0..%d", digits, kMaxDevicesPerType));
    }
    if (!device_count.emplace(type, count).second) {
      return bad(absl::StrFormat("%s is given twice", type));
    }
  }
  RETURN_IF_ERROR(ValidateDeviceCount(device_count));
  if (auto cpu = device_count.find(kDeviceCpu); cpu != device_count.end() && cpu->second < 1) {
    return bad("a task needs at least one CPU");
  }
  return device_count;
}

absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(
    const std::string& task, const std::map<std::string, int>& device_count, int intra_op_threads,
    const GpuOptions& gpu_options) {
  RETURN_IF_ERROR(ValidateDeviceCount(device_count));
  const auto cpu = device_count.find(kDeviceCpu);
  const int cpus = cpu == device_count.end() ? 1 : std::max(1, cpu->second);
  auto threads = std::make_shared<CpuThreads>(intra_op_threads);
  std::vector<std::unique_ptr<Device>> devices;
  for (int i = 0; i < cpus; ++i) {
    devices.push_back(
        std::make_unique<CpuDevice>(threads, absl::StrFormat("%s/device:CPU:%d", task, i)));
  }
  const auto gpu = device_count.find(kDeviceGpu);
  ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<Device>> gpus,
      CreateGpuDevices(task, gpu == device_count.end() ? kMaxDevicesPerType : gpu->second, threads,
                       gpu_options));
  for (std::unique_ptr<Device>& device : gpus) devices.push_back(std::move(device));
  return devices;
}

}  // namespace rill
