// CudaDevice: one GPU, or a virtual slice of one, as a Device: a caching
// allocator over cudaMalloc, a compute and a copy stream, pinned staging.
#ifndef RILL_RUNTIME_DEVICE_CUDA_CUDA_DEVICE_H_
#define RILL_RUNTIME_DEVICE_CUDA_CUDA_DEVICE_H_

#include <cuda_runtime.h>

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "kernels/cuda/gpu_device_context.h"
#include "runtime/device/caching_allocator.h"
#include "runtime/device/device.h"

namespace rill {

// Runs callbacks, in order, on a thread of its own: CUDA forbids calling
// CUDA from a stream's host function, and what completes a copy may launch
// the next kernels.
class CallbackThread {
 public:
  CallbackThread();
  // Runs what was queued, then joins.
  ~CallbackThread();
  CallbackThread(const CallbackThread&) = delete;
  CallbackThread& operator=(const CallbackThread&) = delete;

  void Post(std::function<void()> callback);
  // Queues `callback` to run once `stream` has done the work queued on it
  // so far; `status` then says whether the stream failed.
  void PostAfter(cudaStream_t stream, std::function<void(absl::Status)> callback);

 private:
  void Loop();
  bool HasWorkOrStops() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::deque<std::function<void()>> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

// What one (virtual) GPU has, made once per process: its streams, library
// handles and memory.
//
// Thread safety: thread-safe; see GpuDeviceContext for the library handles.
class GpuState final : public GpuDeviceContext {
 public:
  // `memory_limit_bytes` > 0 caps the device memory its allocator holds.
  // `name` (the first device's) is what errors call it.
  static absl::StatusOr<std::unique_ptr<GpuState>> Create(std::string name, int ordinal,
                                                          int64_t memory_limit_bytes);
  ~GpuState() override;

  int ordinal() const override { return ordinal_; }
  cudaStream_t compute_stream() const override { return compute_; }
  cublasHandle_t cublas() const override { return cublas_; }
  cudnnHandle_t cudnn() const override { return cudnn_; }
  absl::Mutex& library_mu() const override { return library_mu_; }

  Allocator* host_allocator() override;

  // Both run on the copy stream, ordered after the compute stream's work
  // so far (the producer of `src`, the last reader of a recycled buffer);
  // `done` runs on the callback thread. Tensors InHostMemory keeps on the
  // host are passed on at once; RESOURCE_EXHAUSTED when the memory limit
  // is reached.
  void CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) override;
  void CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) override;
  // On the compute stream.
  absl::Status CopyWithinDevice(const void* src, void* dst, size_t bytes) override;
  absl::Status CopyHostBytesToDevice(const void* src, void* dst, size_t bytes) override;

  CachingAllocator* allocator() { return allocator_.get(); }

 private:
  GpuState(std::string name, int ordinal, int64_t memory_limit_bytes);

  // `bytes` from `src` to `dst` in order with the kernels.
  absl::Status CopyOnComputeStream(const void* src, void* dst, size_t bytes, cudaMemcpyKind kind,
                                   const char* what);
  // Makes `second` wait for the work queued on `first` so far.
  absl::Status Order(cudaStream_t first, cudaStream_t second) ABSL_LOCKS_EXCLUDED(order_mu_);
  // Copies `src` into `to` (allocated on the other side) on the copy
  // stream after the compute stream's work so far, then sets `*dst`;
  // `to_device`: the compute stream's later work waits for the copy.
  void Copy(const Tensor& src, Tensor to, bool to_device, Tensor* dst, CopyDone done);

  const std::string name_;
  const int ordinal_;
  const int64_t memory_limit_bytes_;
  cudaStream_t compute_ = nullptr;
  cudaStream_t copy_ = nullptr;
  absl::Mutex order_mu_;
  cudaEvent_t order_event_ = nullptr;  // Recorded and waited on under order_mu_.
  cublasHandle_t cublas_ = nullptr;
  cudnnHandle_t cudnn_ = nullptr;
  mutable absl::Mutex library_mu_;
  std::unique_ptr<Allocator> device_memory_;
  std::unique_ptr<CachingAllocator> allocator_;
  std::unique_ptr<Allocator> pinned_memory_;
  // Page-locked host memory: copies from and to it run asynchronously.
  std::unique_ptr<CachingAllocator> pinned_;
  CallbackThread callbacks_;  // Last member: joined first, while the rest lives.
};

class CudaDevice final : public Device {
 public:
  // `gpu` is the process's and outlives the device.
  CudaDevice(std::string name, GpuState* gpu, std::shared_ptr<CpuThreads> host_threads);

  CachingAllocator* allocator() override { return gpu_->allocator(); }
  ResourceMgr* resource_manager() override { return &resource_mgr_; }
  const Eigen::ThreadPoolDevice* eigen_cpu() const override { return &host_threads_->device(); }
  const Eigen::ThreadPoolDevice* eigen_cpu_serial() const override { return &serial_; }
  DeviceContext* device_context() override { return gpu_; }
  bool RunsKernelsInline() const override { return true; }

  // Through the GPU's context (GpuState).
  void CopyToHost(const Tensor& src, Tensor* dst, StatusCallback done) override {
    gpu_->CopyToHost(src, dst, std::move(done));
  }
  void CopyFromHost(const Tensor& src, Tensor* dst, StatusCallback done) override {
    gpu_->CopyFromHost(src, dst, std::move(done));
  }

  // An NVTX range in the domain "rill", named after the node and colored
  // by its op, so that Nsight tools show each op's kernels under its name.
  // NVTX ranges are per thread: any thread may push one and pop its own.
  void BeginOpRange(const NodeDef& node) override;
  void EndOpRange() override;

 private:
  GpuState* const gpu_;
  std::shared_ptr<CpuThreads> host_threads_;
  Eigen::ThreadPoolDevice serial_;
  ResourceMgr resource_mgr_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_CUDA_CUDA_DEVICE_H_
