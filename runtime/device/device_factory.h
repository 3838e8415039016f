// The devices of one task (a local session's, or a server's), made from a
// device count as TensorFlow's ConfigProto.device_count gives it.
#ifndef RILL_RUNTIME_DEVICE_DEVICE_FACTORY_H_
#define RILL_RUNTIME_DEVICE_DEVICE_FACTORY_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "runtime/device/device.h"
#include "runtime/device/gpu_devices.h"

namespace rill {

// Known types are CPU and GPU; counts cannot be negative.
absl::Status ValidateDeviceCount(const std::map<std::string, int>& device_count);

// "CPU=2" or "CPU=2,GPU=1" (the --device_count flag); each count in
// 0..64, CPU at least 1. Errors say what is wrong, not where: the caller
// names the flag.
absl::StatusOr<std::map<std::string, int>> ParseDeviceCount(std::string_view text);

// `task`'s devices ("/job:J/replica:0/task:T"): CPU:0 .. CPU:n-1 (n =
// device_count["CPU"], at least one), sharing one intra-op pool, then
// GPU:0 .. GPU:m-1, every GPU this process has (gpu_devices.h) up to
// device_count["GPU"] when given, as in TensorFlow, made with `gpu`.
absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateDevices(
    const std::string& task, const std::map<std::string, int>& device_count, int intra_op_threads,
    const GpuOptions& gpu = {});

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_DEVICE_FACTORY_H_
