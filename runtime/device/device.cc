#include "runtime/device/device.h"

namespace rill {

CachingAllocator* CpuCachingAllocator() {
  // Never destroyed: tensors may be released during static destruction.
  static CachingAllocator* const allocator = new CachingAllocator(CpuAllocator());
  return allocator;
}

CpuDevice::CpuDevice(int intra_op_threads, std::string name)
    : CpuDevice(std::make_shared<CpuThreads>(intra_op_threads), std::move(name)) {}

CpuDevice::CpuDevice(std::shared_ptr<CpuThreads> threads, std::string name)
    : Device(std::move(name), kDeviceCpu),
      threads_(std::move(threads)),
      serial_(threads_->device().getPool(), 1) {}

void CpuDevice::CopyToHost(const Tensor& src, Tensor* dst, StatusCallback done) {
  *dst = src;
  done(absl::OkStatus());
}

void CpuDevice::CopyFromHost(const Tensor& src, Tensor* dst, StatusCallback done) {
  *dst = src;
  done(absl::OkStatus());
}

}  // namespace rill
