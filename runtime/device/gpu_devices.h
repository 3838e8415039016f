// The GPUs of this process as Devices: one per visible CUDA device (the
// driver honours CUDA_VISIBLE_DEVICES), or several virtual ones per GPU.
#ifndef RILL_RUNTIME_DEVICE_GPU_DEVICES_H_
#define RILL_RUNTIME_DEVICE_GPU_DEVICES_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "kernels/framework/cpu_threads.h"
#include "runtime/device/device.h"

namespace rill {

struct GpuOptions {
  // Device memory each physical GPU's allocator may hold, split evenly
  // between its virtual devices; 0: 90% of the memory free when the GPU is
  // first used.
  int64_t memory_limit_bytes = 0;
  // Logical devices per physical GPU, each with its own streams and memory
  // share, as TensorFlow's virtual device configuration makes them: multi-GPU
  // placement and in-graph replication on a machine with one GPU.
  int virtual_devices_per_gpu = 1;
};

// INVALID_ARGUMENT, naming the field, for a negative count or limit, or
// virtual devices outside 1..16.
absl::Status ValidateGpuOptions(int max_count, const GpuOptions& options);

// `task`'s GPU devices, "/job:J/replica:0/task:T/device:GPU:N", at most
// `max_count` of them. The streams, library handles and memory of a GPU
// belong to the process and are made once: devices of later sessions share
// them (each device has its own ResourceMgr). A build without CUDA, or a
// machine without a GPU, has none; INVALID_ARGUMENT for options that
// differ from those the process's GPUs were made with, or out of range.
absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::string& task, int max_count, std::shared_ptr<CpuThreads> host_threads,
    const GpuOptions& options = {});

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_GPU_DEVICES_H_
