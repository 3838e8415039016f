// DeviceContext: what a device's kernels compute on besides the host's
// threads: an accelerator's stream and library handles. CPU kernels get none.
#ifndef RILL_KERNELS_FRAMEWORK_DEVICE_CONTEXT_H_
#define RILL_KERNELS_FRAMEWORK_DEVICE_CONTEXT_H_

#include <cstddef>
#include <functional>

#include "absl/status/status.h"
#include "graph/allocator.h"
#include "graph/tensor.h"

namespace rill {

// Tensors of these types stay in host memory on every device, as in
// TensorFlow: int32 (shapes, axes and sizes, which host code reads to size
// and launch the device's work) and the types whose elements are not plain
// bytes (string, resource, variant). A device's kernels allocate them from
// the host allocator, take them as host inputs, and copies pass them on as
// they are.
inline bool InHostMemory(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_INT32:
    case DT_STRING:
    case DT_RESOURCE:
    case DT_VARIANT:
      return true;
    default:
      return false;
  }
}

// A device whose memory is not the host's has one (its stream, its cuBLAS
// and cuDNN handles); its kernels cast KernelContext::device_context() to
// that type, and the kernels that move tensors between devices (_Send,
// _Recv) copy through it.
// Thread safety: as the subclass says; kernels of one device share it.
class DeviceContext {
 public:
  using CopyDone = std::function<void(absl::Status)>;

  virtual ~DeviceContext() = default;

  // Where the device's kernels allocate the tensors that InHostMemory
  // keeps on the host.
  virtual Allocator* host_allocator() = 0;

  // Copies between the device's memory and the host's, after the work
  // queued on the device so far. A tensor InHostMemory keeps on the host is
  // passed on as it is, without a copy. `done` runs once `*dst` holds the copy,
  // possibly on another thread; `dst` must stay valid until then.
  virtual void CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) = 0;
  virtual void CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) = 0;

  // Queued in order with the device's kernels, so they return at once:
  // `bytes` from device memory at `src` to device memory at `dst`, and
  // from host memory (which may go as soon as the call returns) to device
  // memory, for values a kernel computed on the host.
  virtual absl::Status CopyWithinDevice(const void* src, void* dst, size_t bytes) = 0;
  virtual absl::Status CopyHostBytesToDevice(const void* src, void* dst, size_t bytes) = 0;
};

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_DEVICE_CONTEXT_H_
