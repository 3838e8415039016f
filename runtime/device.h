// Device: where kernels run, with the allocator, the per-device state
// (ResourceMgr) and the intra-op threads they use. CpuDevice is this
// process's CPU.
#ifndef RILL_RUNTIME_DEVICE_H_
#define RILL_RUNTIME_DEVICE_H_

#include <memory>
#include <string>
#include <utility>

#include "kernels/cpu_threads.h"
#include "kernels/op_kernel.h"
#include "kernels/resource_mgr.h"
#include "runtime/caching_allocator.h"

namespace rill {

inline constexpr char kLocalCpuDeviceName[] = "/job:localhost/replica:0/task:0/device:CPU:0";

// Thread safety: the accessors may be called from any thread; the objects
// they return are thread-safe themselves.
class Device {
 public:
  Device(std::string name, std::string device_type)
      : name_(std::move(name)), device_type_(std::move(device_type)) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The full name, "/job:localhost/replica:0/task:0/device:CPU:0".
  const std::string& name() const { return name_; }
  // The kernel registry's device type, "CPU".
  const std::string& device_type() const { return device_type_; }

  virtual Allocator* allocator() = 0;
  virtual ResourceMgr* resource_manager() = 0;
  // The intra-op pool kernels parallelize on.
  virtual const Eigen::ThreadPoolDevice* eigen_cpu() const = 0;
  // The same pool limited to one thread: kernels given it run on the
  // calling thread alone.
  virtual const Eigen::ThreadPoolDevice* eigen_cpu_serial() const = 0;

 private:
  const std::string name_;
  const std::string device_type_;
};

// The caching allocator every CpuDevice of this process shares. It lives
// for the whole process because tensors a step returns may outlive their
// session.
CachingAllocator* CpuCachingAllocator();

class CpuDevice final : public Device {
 public:
  // intra_op_threads <= 0: one per hardware thread.
  explicit CpuDevice(int intra_op_threads, std::string name = kLocalCpuDeviceName);
  // Several devices of one process share one intra-op pool.
  CpuDevice(std::shared_ptr<CpuThreads> threads, std::string name);

  CachingAllocator* allocator() override { return CpuCachingAllocator(); }
  ResourceMgr* resource_manager() override { return &resource_mgr_; }
  const Eigen::ThreadPoolDevice* eigen_cpu() const override { return &threads_->device(); }
  const Eigen::ThreadPoolDevice* eigen_cpu_serial() const override { return &serial_; }

 private:
  std::shared_ptr<CpuThreads> threads_;
  Eigen::ThreadPoolDevice serial_;
  ResourceMgr resource_mgr_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_H_
