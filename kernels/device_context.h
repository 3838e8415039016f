// DeviceContext: what a device's kernels compute on besides the host's
// threads: an accelerator's stream and library handles. CPU kernels get none.
#ifndef RILL_KERNELS_DEVICE_CONTEXT_H_
#define RILL_KERNELS_DEVICE_CONTEXT_H_

namespace rill {

// A device that has one subclasses it (its stream, its cuBLAS and cuDNN
// handles); its kernels cast KernelContext::device_context() to that type.
// Thread safety: as the subclass says; kernels of one device share it.
class DeviceContext {
 public:
  virtual ~DeviceContext() = default;
};

}  // namespace rill

#endif  // RILL_KERNELS_DEVICE_CONTEXT_H_
