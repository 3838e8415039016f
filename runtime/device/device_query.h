// Discovery of CUDA devices for `rill devices` and, later, the device set.
// A build without CUDA, or a machine without a GPU, reports no devices.
#ifndef RILL_RUNTIME_DEVICE_DEVICE_QUERY_H_
#define RILL_RUNTIME_DEVICE_DEVICE_QUERY_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rill {

struct GpuDeviceInfo {
  int ordinal = 0;
  std::string name;
  int compute_capability_major = 0;
  int compute_capability_minor = 0;
  int64_t total_memory_bytes = 0;
  int multiprocessor_count = 0;
  std::string pci_bus_id;
};

struct GpuQuery {
  bool cuda_compiled = false;
  std::vector<GpuDeviceInfo> devices;
  // Why `devices` is empty ("no CUDA device", "built without CUDA", the
  // driver's message); empty when devices were found.
  std::string reason;
};

// Never fails: problems with the driver become `reason`.
GpuQuery QueryGpuDevices();

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_DEVICE_QUERY_H_
