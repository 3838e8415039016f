#include "runtime/device/cuda/cuda_device.h"

#include <nvtx3/nvToolsExt.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/types.h"
#include "kernels/cuda/cuda_status.h"
#include "runtime/device/device.h"
#include "runtime/device/device_query.h"
#include "runtime/device/gpu_devices.h"

namespace rill {
namespace {

constexpr size_t kCudaMallocAlignment = 256;
// Of the memory free when a GPU is first used, the share its allocator may
// hold when no limit is given: the rest is for the libraries' workspaces.
constexpr double kDefaultMemoryFraction = 0.9;

// Device memory straight from cudaMalloc, with a cap on the bytes held.
// Thread safety: thread-safe.
class CudaMallocAllocator final : public Allocator {
 public:
  CudaMallocAllocator(int ordinal, int64_t limit) : ordinal_(ordinal), limit_(limit) {}

  std::string Name() const override { return absl::StrFormat("cuda_malloc_gpu_%d", ordinal_); }

  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (alignment > kCudaMallocAlignment) return nullptr;
    const int64_t size = static_cast<int64_t>(std::max<size_t>(bytes, 1));
    {
      absl::MutexLock lock(&mu_);
      if (limit_ > 0 && in_use_ + size > limit_) return nullptr;
      in_use_ += size;
    }
    void* ptr = nullptr;
    if (cudaSetDevice(ordinal_) != cudaSuccess ||
        cudaMalloc(&ptr, static_cast<size_t>(size)) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());  // Out of memory is not sticky: clear it.
      absl::MutexLock lock(&mu_);
      in_use_ -= size;
      return nullptr;
    }
    return ptr;
  }

  void DeallocateRaw(void* ptr, size_t bytes) override {
    static_cast<void>(cudaSetDevice(ordinal_));
    static_cast<void>(cudaFree(ptr));
    absl::MutexLock lock(&mu_);
    in_use_ -= static_cast<int64_t>(std::max<size_t>(bytes, 1));
  }

 private:
  const int ordinal_;
  const int64_t limit_;  // 0: none.
  absl::Mutex mu_;
  int64_t in_use_ ABSL_GUARDED_BY(mu_) = 0;
};

// Page-locked host memory, which the copy engines reach without staging.
class PinnedHostAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cuda_pinned_host"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (alignment > kCudaMallocAlignment) return nullptr;
    void* ptr = nullptr;
    if (cudaHostAlloc(&ptr, std::max<size_t>(bytes, 1), cudaHostAllocPortable) != cudaSuccess) {
      static_cast<void>(cudaGetLastError());
      return nullptr;
    }
    return ptr;
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    static_cast<void>(bytes);
    static_cast<void>(cudaFreeHost(ptr));
  }
};

// Ends the copies that move no bytes: of an uninitialized tensor (an
// error), and of a type InHostMemory keeps on the host (passed on as it
// is). True when it called `done`.
bool SettledWithoutCopy(const Tensor& src, Tensor* dst, const std::string& device,
                        DeviceContext::CopyDone& done) {
  if (!src.IsInitialized()) {
    done(absl::InvalidArgumentError(
        absl::StrFormat("copy to or from %s: the tensor is not initialized", device)));
    return true;
  }
  if (!InHostMemory(src.dtype())) return false;
  *dst = src;
  done(absl::OkStatus());
  return true;
}

}  // namespace

CallbackThread::CallbackThread() : thread_([this] { Loop(); }) {}

CallbackThread::~CallbackThread() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  thread_.join();
}

void CallbackThread::Post(std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  queue_.push_back(std::move(callback));
}

void CallbackThread::PostAfter(cudaStream_t stream, std::function<void(absl::Status)> callback) {
  struct Pending {
    CallbackThread* thread;
    std::function<void(absl::Status)> callback;
  };
  auto* pending = new Pending{this, std::move(callback)};
  const cudaError_t error = cudaStreamAddCallback(
      stream,
      [](cudaStream_t, cudaError_t status, void* data) {
        // The driver's thread: no CUDA here, only the hand-over.
        std::unique_ptr<Pending> p(static_cast<Pending*>(data));
        absl::Status result =
            status == cudaSuccess ? absl::OkStatus() : CudaError(status, "a GPU stream failed");
        p->thread->Post([callback = std::move(p->callback), result = std::move(result)]() mutable {
          callback(std::move(result));
        });
      },
      pending, 0);
  if (error != cudaSuccess) {
    std::unique_ptr<Pending> p(pending);
    Post([callback = std::move(p->callback), error] {
      callback(CudaError(error, "cudaStreamAddCallback"));
    });
  }
}

bool CallbackThread::HasWorkOrStops() const { return stopping_ || !queue_.empty(); }

void CallbackThread::Loop() {
  while (true) {
    std::function<void()> callback;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(this, &CallbackThread::HasWorkOrStops));
      if (queue_.empty()) return;  // Stopping, and everything ran.
      callback = std::move(queue_.front());
      queue_.pop_front();
    }
    callback();
  }
}

GpuState::GpuState(std::string name, int ordinal, int64_t memory_limit_bytes)
    : name_(std::move(name)), ordinal_(ordinal), memory_limit_bytes_(memory_limit_bytes) {}

absl::StatusOr<std::unique_ptr<GpuState>> GpuState::Create(std::string name, int ordinal,
                                                           int64_t memory_limit_bytes) {
  std::unique_ptr<GpuState> gpu(new GpuState(std::move(name), ordinal, memory_limit_bytes));
  const std::string where = absl::StrFormat("GPU %d", ordinal);
  RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal), where + ": cudaSetDevice");
  RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&gpu->compute_, cudaStreamNonBlocking),
                       where + ": creating the compute stream");
  RETURN_IF_CUDA_ERROR(cudaStreamCreateWithFlags(&gpu->copy_, cudaStreamNonBlocking),
                       where + ": creating the copy stream");
  RETURN_IF_CUDA_ERROR(cudaEventCreateWithFlags(&gpu->order_event_, cudaEventDisableTiming),
                       where + ": creating the event that orders the streams");
  // A failed create leaves no handle for the destructor to destroy.
  if (absl::Status s = CublasResult(cublasCreate(&gpu->cublas_), where + ": cublasCreate");
      !s.ok()) {
    gpu->cublas_ = nullptr;
    return s;
  }
  RETURN_IF_ERROR(
      CublasResult(cublasSetStream(gpu->cublas_, gpu->compute_), where + ": cublasSetStream"));
  if (absl::Status s = CudnnResult(cudnnCreate(&gpu->cudnn_), where + ": cudnnCreate"); !s.ok()) {
    gpu->cudnn_ = nullptr;
    return s;
  }
  RETURN_IF_ERROR(
      CudnnResult(cudnnSetStream(gpu->cudnn_, gpu->compute_), where + ": cudnnSetStream"));
  gpu->device_memory_ = std::make_unique<CudaMallocAllocator>(ordinal, memory_limit_bytes);
  // The cache may hold everything the limit allows: device memory given
  // back to the driver is only needed again.
  gpu->allocator_ = std::make_unique<CachingAllocator>(
      gpu->device_memory_.get(),
      memory_limit_bytes > 0 ? static_cast<size_t>(memory_limit_bytes) : size_t{1} << 40);
  gpu->pinned_memory_ = std::make_unique<PinnedHostAllocator>();
  gpu->pinned_ = std::make_unique<CachingAllocator>(gpu->pinned_memory_.get());
  return gpu;
}

Allocator* GpuState::host_allocator() { return CpuCachingAllocator(); }

GpuState::~GpuState() {
  static_cast<void>(cudaSetDevice(ordinal_));
  if (compute_ != nullptr) static_cast<void>(cudaStreamSynchronize(compute_));
  if (copy_ != nullptr) static_cast<void>(cudaStreamSynchronize(copy_));
  if (cudnn_ != nullptr) cudnnDestroy(cudnn_);
  if (cublas_ != nullptr) cublasDestroy(cublas_);
  if (allocator_ != nullptr) allocator_->ReleaseCache();
  if (pinned_ != nullptr) pinned_->ReleaseCache();
  if (order_event_ != nullptr) static_cast<void>(cudaEventDestroy(order_event_));
  if (compute_ != nullptr) static_cast<void>(cudaStreamDestroy(compute_));
  if (copy_ != nullptr) static_cast<void>(cudaStreamDestroy(copy_));
}

absl::Status GpuState::Order(cudaStream_t first, cudaStream_t second) {
  RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal_), "cudaSetDevice");
  // One event serves every ordering: a wait takes the record made just
  // before it, and the lock keeps another record from coming between.
  // Creating an event per copy cost more than the copy of a small tensor.
  absl::MutexLock lock(&order_mu_);
  RETURN_IF_CUDA_ERROR(cudaEventRecord(order_event_, first), "cudaEventRecord");
  RETURN_IF_CUDA_ERROR(cudaStreamWaitEvent(second, order_event_, 0), "cudaStreamWaitEvent");
  return absl::OkStatus();
}

void GpuState::CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) {
  if (SettledWithoutCopy(src, dst, name_, done)) return;
  absl::StatusOr<Tensor> host = Tensor::Allocate(pinned_.get(), src.dtype(), src.shape());
  if (!host.ok()) {
    done(host.status());
    return;
  }
  Copy(src, *std::move(host), /*to_device=*/false, dst, std::move(done));
}

void GpuState::CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) {
  if (SettledWithoutCopy(src, dst, name_, done)) return;
  absl::StatusOr<Tensor> device = Tensor::Allocate(allocator_.get(), src.dtype(), src.shape());
  if (!device.ok()) {
    done(absl::ResourceExhaustedError(absl::StrFormat(
        "%s: out of memory for a %s %s tensor (%d bytes; the allocator holds at most %d)", name_,
        DataTypeString(src.dtype()), src.shape().DebugString(), src.TotalBytes(),
        memory_limit_bytes_)));
    return;
  }
  Copy(src, *std::move(device), /*to_device=*/true, dst, std::move(done));
}

absl::Status GpuState::CopyWithinDevice(const void* src, void* dst, size_t bytes) {
  return CopyOnComputeStream(src, dst, bytes, cudaMemcpyDeviceToDevice,
                             "copying within the device");
}

absl::Status GpuState::CopyHostBytesToDevice(const void* src, void* dst, size_t bytes) {
  // From pageable memory the call returns once the bytes are staged.
  return CopyOnComputeStream(src, dst, bytes, cudaMemcpyHostToDevice,
                             "copying host bytes to the device");
}

absl::Status GpuState::CopyOnComputeStream(const void* src, void* dst, size_t bytes,
                                           cudaMemcpyKind kind, const char* what) {
  if (bytes == 0) return absl::OkStatus();
  RETURN_IF_CUDA_ERROR(cudaSetDevice(ordinal_), name_ + ": cudaSetDevice");
  RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(dst, src, bytes, kind, compute_),
                       absl::StrCat(name_, ": ", what));
  return absl::OkStatus();
}

void GpuState::Copy(const Tensor& src, Tensor to, bool to_device, Tensor* dst, CopyDone done) {
  // After the producer of `src`, and after the last reader of a recycled
  // buffer `to`.
  absl::Status status = Order(compute_, copy_);
  if (status.ok() && src.TotalBytes() > 0) {
    if (const cudaError_t e =
            cudaMemcpyAsync(to.raw_data(), src.raw_data(), src.TotalBytes(),
                            to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost, copy_);
        e != cudaSuccess) {
      status =
          CudaError(e, name_ + (to_device ? ": copying from the host" : ": copying to the host"));
    }
  }
  if (status.ok() && to_device) status = Order(copy_, compute_);
  if (!status.ok()) {
    done(std::move(status));
    return;
  }
  // The source stays alive until the copy has read it.
  callbacks_.PostAfter(
      copy_, [src, to = std::move(to), dst, done = std::move(done)](absl::Status copied) mutable {
        if (copied.ok()) *dst = std::move(to);
        done(std::move(copied));
      });
}

CudaDevice::CudaDevice(std::string name, GpuState* gpu, std::shared_ptr<CpuThreads> host_threads)
    : Device(std::move(name), kDeviceGpu, /*annotates_ops=*/true),
      gpu_(gpu),
      host_threads_(std::move(host_threads)),
      serial_(host_threads_->device().getPool(), 1) {}

namespace {

// The NVTX domain of the op ranges, apart from the libraries' own ranges
// (cuDNN's, cuBLAS's); one for the process, made on first use. Without a
// profiler attached, NVTX's calls return at once.
nvtxDomainHandle_t OpRangeDomain() {
  static const nvtxDomainHandle_t domain = nvtxDomainCreateA("rill");
  return domain;
}

// Opaque, with the op's hash as its color: the ops of one type look alike.
uint32_t OpColor(const std::string& op) {
  return 0xff000000u | (static_cast<uint32_t>(std::hash<std::string>{}(op)) & 0x00ffffffu);
}

}  // namespace

void CudaDevice::BeginOpRange(const NodeDef& node) {
  nvtxEventAttributes_t attributes = {};
  attributes.version = NVTX_VERSION;
  attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
  attributes.colorType = NVTX_COLOR_ARGB;
  attributes.color = OpColor(node.op());
  attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
  attributes.message.ascii = node.name().c_str();
  nvtxDomainRangePushEx(OpRangeDomain(), &attributes);
}

void CudaDevice::EndOpRange() { nvtxDomainRangePop(OpRangeDomain()); }

namespace {

// The process's GPUs, made on first use and never destroyed: tensors in
// their memory may outlive every session.
struct ProcessGpus {
  absl::Mutex mu;
  bool made ABSL_GUARDED_BY(mu) = false;
  GpuOptions options ABSL_GUARDED_BY(mu);
  std::vector<std::unique_ptr<GpuState>> gpus ABSL_GUARDED_BY(mu);  // Logical devices in order.
  absl::Status status ABSL_GUARDED_BY(mu);
};

ProcessGpus& TheProcessGpus() {
  static ProcessGpus* const gpus = new ProcessGpus;
  return *gpus;
}

absl::Status MakeProcessGpus(ProcessGpus& p, const GpuOptions& options)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(p.mu) {
  const GpuQuery query = QueryGpuDevices();
  for (const GpuDeviceInfo& info : query.devices) {
    int64_t limit = options.memory_limit_bytes;
    if (limit == 0) {
      size_t free_bytes = 0;
      size_t total_bytes = 0;
      RETURN_IF_CUDA_ERROR(cudaSetDevice(info.ordinal), "cudaSetDevice");
      RETURN_IF_CUDA_ERROR(cudaMemGetInfo(&free_bytes, &total_bytes),
                           absl::StrFormat("GPU %d: cudaMemGetInfo", info.ordinal));
      limit = static_cast<int64_t>(static_cast<double>(free_bytes) * kDefaultMemoryFraction);
    }
    const int slices = options.virtual_devices_per_gpu;
    for (int v = 0; v < slices; ++v) {
      ASSIGN_OR_RETURN(std::unique_ptr<GpuState> gpu,
                       GpuState::Create(absl::StrFormat("GPU:%d", p.gpus.size()), info.ordinal,
                                        std::max<int64_t>(limit / slices, 1)));
      p.gpus.push_back(std::move(gpu));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::vector<std::unique_ptr<Device>>> CreateGpuDevices(
    const std::string& task, int max_count, std::shared_ptr<CpuThreads> host_threads,
    const GpuOptions& options) {
  RETURN_IF_ERROR(ValidateGpuOptions(max_count, options));
  std::vector<std::unique_ptr<Device>> devices;
  if (max_count == 0) return devices;
  ProcessGpus& p = TheProcessGpus();
  absl::MutexLock lock(&p.mu);
  if (!p.made) {
    p.made = true;
    p.options = options;
    p.status = MakeProcessGpus(p, options);
  }
  RETURN_IF_ERROR(p.status);
  if (p.options.memory_limit_bytes != options.memory_limit_bytes ||
      p.options.virtual_devices_per_gpu != options.virtual_devices_per_gpu) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "this process's GPUs were made with a memory limit of %d bytes and %d virtual devices "
        "per GPU; a later session cannot ask for %d bytes and %d",
        p.options.memory_limit_bytes, p.options.virtual_devices_per_gpu, options.memory_limit_bytes,
        options.virtual_devices_per_gpu));
  }
  const int count = std::min<int>(max_count, static_cast<int>(p.gpus.size()));
  for (int i = 0; i < count; ++i) {
    devices.push_back(std::make_unique<CudaDevice>(absl::StrFormat("%s/device:GPU:%d", task, i),
                                                   p.gpus[i].get(), host_threads));
  }
  return devices;
}

}  // namespace rill
