#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "runtime/device/device_query.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] = "usage: rill devices\n";

}  // namespace

int RunDevicesCommand(const std::vector<std::string> &args) {
  const absl::StatusOr<ParsedArgs> parsed = ParseOptionsOnly(args, {}, {});
  if (!parsed.ok()) return PrintUsageError("rill devices", parsed.status(), kUsage);
  if (parsed->help) return PrintHelp(kUsage);
  fmt::print("/job:localhost/replica:0/task:0/device:CPU:0\n");
  const GpuQuery gpus = QueryGpuDevices();
  for (const GpuDeviceInfo &gpu : gpus.devices) {
    fmt::print(
        "/job:localhost/replica:0/task:0/device:GPU:{}  {} (compute "
        "capability {}.{}, {} SMs, "
        "{:.1f} GiB, pci {})\n",
        gpu.ordinal, gpu.name, gpu.compute_capability_major, gpu.compute_capability_minor,
        gpu.multiprocessor_count, static_cast<double>(gpu.total_memory_bytes) / (1 << 30),
        gpu.pci_bus_id);
  }
  if (gpus.devices.empty()) fmt::print("GPU: {}\n", gpus.reason);
  return 0;
}

}  // namespace rill::cli
