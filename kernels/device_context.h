// DeviceContext: what a device's kernels compute on besides the host's
// threads: an accelerator's stream and library handles. CPU kernels get none.
#ifndef RILL_KERNELS_DEVICE_CONTEXT_H_
#define RILL_KERNELS_DEVICE_CONTEXT_H_

#include <functional>

#include "absl/status/status.h"
#include "graph/tensor.h"

namespace rill {

// A device whose memory is not the host's has one (its stream, its cuBLAS
// and cuDNN handles); its kernels cast KernelContext::device_context() to
// that type, and the kernels that move tensors between devices (_Send,
// _Recv) copy through it.
// Thread safety: as the subclass says; kernels of one device share it.
class DeviceContext {
 public:
  using CopyDone = std::function<void(absl::Status)>;

  virtual ~DeviceContext() = default;

  // Copies between the device's memory and the host's, after the work
  // queued on the device so far. `done` runs once `*dst` holds the copy,
  // possibly on another thread; `dst` must stay valid until then.
  virtual void CopyToHost(const Tensor& src, Tensor* dst, CopyDone done) = 0;
  virtual void CopyFromHost(const Tensor& src, Tensor* dst, CopyDone done) = 0;
};

}  // namespace rill

#endif  // RILL_KERNELS_DEVICE_CONTEXT_H_
