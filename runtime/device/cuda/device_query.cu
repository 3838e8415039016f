#include <cuda_runtime.h>

#include <string>

#include "runtime/device/device_query.h"

namespace rill {
namespace {

// Proves that kernels launch on the device, not only that the driver
// answers.
__global__ void WriteOrdinal(int* out, int ordinal) { *out = ordinal; }

bool KernelRuns(int ordinal) {
  if (cudaSetDevice(ordinal) != cudaSuccess) return false;
  int* device_value = nullptr;
  if (cudaMalloc(&device_value, sizeof(int)) != cudaSuccess) return false;
  WriteOrdinal<<<1, 1>>>(device_value, ordinal + 1);
  int host_value = 0;
  const bool ok =
      cudaMemcpy(&host_value, device_value, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess &&
      host_value == ordinal + 1;
  cudaFree(device_value);
  return ok;
}

}  // namespace

GpuQuery QueryGpuDevices() {
  GpuQuery query;
  query.cuda_compiled = true;
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaErrorNoDevice || (err == cudaSuccess && count == 0)) {
    query.reason = "no CUDA device";
    return query;
  }
  if (err != cudaSuccess) {
    query.reason = std::string("no CUDA device: ") + cudaGetErrorString(err);
    return query;
  }
  for (int i = 0; i < count; ++i) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, i) != cudaSuccess) continue;
    GpuDeviceInfo info;
    info.ordinal = i;
    info.name = prop.name;
    info.compute_capability_major = prop.major;
    info.compute_capability_minor = prop.minor;
    info.total_memory_bytes = static_cast<int64_t>(prop.totalGlobalMem);
    info.multiprocessor_count = prop.multiProcessorCount;
    char bus_id[32] = {};
    if (cudaDeviceGetPCIBusId(bus_id, sizeof(bus_id), i) == cudaSuccess) info.pci_bus_id = bus_id;
    if (!KernelRuns(i)) {
      query.reason = "CUDA device " + std::to_string(i) + " found but a test kernel did not run";
      continue;
    }
    query.devices.push_back(std::move(info));
  }
  if (query.devices.empty() && query.reason.empty()) query.reason = "no CUDA device";
  return query;
}

}  // namespace rill
