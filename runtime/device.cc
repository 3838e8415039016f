#include "runtime/device.h"

namespace rill {

CachingAllocator* CpuCachingAllocator() {
  // Never destroyed: tensors may be released during static destruction.
  static CachingAllocator* const allocator = new CachingAllocator(CpuAllocator());
  return allocator;
}

CpuDevice::CpuDevice(int intra_op_threads, std::string name)
    : Device(std::move(name), kDeviceCpu),
      threads_(intra_op_threads),
      serial_(threads_.device().getPool(), 1) {}

}  // namespace rill
