// Device: where kernels run: its memory (the allocator), its per-device
// state (ResourceMgr), the context kernels compute in, copies between its
// memory and the host's, and the profiler's op ranges. CpuDevice is this
// process's CPU.
#ifndef RILL_RUNTIME_DEVICE_DEVICE_H_
#define RILL_RUNTIME_DEVICE_DEVICE_H_

#include <functional>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "graph/proto/node_def.pb.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "runtime/device/caching_allocator.h"

namespace rill {

inline constexpr char kLocalCpuDeviceName[] = "/job:localhost/replica:0/task:0/device:CPU:0";

// Thread safety: the accessors and copies may be called from any thread;
// the objects they return are thread-safe themselves.
class Device {
 public:
  using StatusCallback = std::function<void(absl::Status)>;

  // `annotates_ops`: the device overrides BeginOpRange and EndOpRange.
  Device(std::string name, std::string device_type, bool annotates_ops = false)
      : name_(std::move(name)),
        device_type_(std::move(device_type)),
        annotates_ops_(annotates_ops) {}
  virtual ~Device() = default;
  Device(const Device&) = delete;
  Device& operator=(const Device&) = delete;

  // The full name, "/job:localhost/replica:0/task:0/device:CPU:0".
  const std::string& name() const { return name_; }
  // The kernel registry's device type, "CPU".
  const std::string& device_type() const { return device_type_; }

  // Where the device's tensors live.
  virtual Allocator* allocator() = 0;
  virtual ResourceMgr* resource_manager() = 0;
  // The host's intra-op pool, for the host-side work of kernels.
  virtual const Eigen::ThreadPoolDevice* eigen_cpu() const = 0;
  // The same pool limited to one thread: kernels given it run on the
  // calling thread alone.
  virtual const Eigen::ThreadPoolDevice* eigen_cpu_serial() const = 0;
  // The stream and handles kernels compute on; null when kernels compute
  // on the calling thread (the CPU).
  virtual DeviceContext* device_context() { return nullptr; }
  // True when every kernel of the device only queues work (on a stream),
  // so the executor runs each on the thread that readied it; false when
  // OpKernel::IsExpensive decides (the CPU).
  virtual bool RunsKernelsInline() const { return false; }

  // Copies between the device's memory and the host's. `done` runs once
  // the destination holds the bytes, possibly before the call returns;
  // `dst` must stay valid until then. A device whose memory is the host's
  // shares the buffer instead of copying.
  virtual void CopyToHost(const Tensor& src, Tensor* dst, StatusCallback done) = 0;
  virtual void CopyFromHost(const Tensor& src, Tensor* dst, StatusCallback done) = 0;

  // Profiler ranges: for a device that annotates ops, the executor calls
  // BeginOpRange before a node's kernel computes (or, for an async kernel,
  // starts) and EndOpRange when that call returns, on the same thread
  // (ScopedOpRange), so that a profiler shows the kernel's work under the
  // node's name. Fixed at construction, so that the executor reads a field
  // instead of calling per node on devices without annotations.
  bool annotates_ops() const { return annotates_ops_; }
  virtual void BeginOpRange(const NodeDef& /*node*/) {}
  virtual void EndOpRange() {}

 private:
  const std::string name_;
  const std::string device_type_;
  const bool annotates_ops_;
};

// Brackets the kernel call of `node` with `device`'s op range, when the
// device annotates ops; otherwise does nothing.
class ScopedOpRange {
 public:
  ScopedOpRange(Device& device, const NodeDef& node)
      : device_(device.annotates_ops() ? &device : nullptr) {
    if (device_ != nullptr) device_->BeginOpRange(node);
  }
  ~ScopedOpRange() {
    if (device_ != nullptr) device_->EndOpRange();
  }
  ScopedOpRange(const ScopedOpRange&) = delete;
  ScopedOpRange& operator=(const ScopedOpRange&) = delete;

 private:
  Device* const device_;  // Null: no range.
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
  // Host memory is the CPU's: the tensors share their buffer.
  void CopyToHost(const Tensor& src, Tensor* dst, StatusCallback done) override;
  void CopyFromHost(const Tensor& src, Tensor* dst, StatusCallback done) override;

 private:
  std::shared_ptr<CpuThreads> threads_;
  Eigen::ThreadPoolDevice serial_;
  ResourceMgr resource_mgr_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_DEVICE_H_
