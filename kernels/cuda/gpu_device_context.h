// GpuDeviceContext: what the CUDA kernels of one GPU compute on: its compute
// stream and the cuBLAS and cuDNN handles bound to that stream.
#ifndef RILL_KERNELS_CUDA_GPU_DEVICE_CONTEXT_H_
#define RILL_KERNELS_CUDA_GPU_DEVICE_CONTEXT_H_

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "kernels/framework/device_context.h"

namespace rill {

// A GPU kernel queues its work on compute_stream() and returns: the stream
// runs it after the work that produced its inputs (queued earlier on the
// same stream) and before the work that consumes its outputs. Memory a
// kernel frees may be handed out again at once for the same reason.
//
// Thread safety: kernels of one device launch from several threads. Stream
// launches are thread-safe; a cuBLAS or cuDNN call must hold library_mu()
// (their handles are not to be used by two threads at once).
class GpuDeviceContext : public DeviceContext {
 public:
  // The device's CUDA ordinal (several virtual devices may share one).
  virtual int ordinal() const = 0;
  virtual cudaStream_t compute_stream() const = 0;
  virtual cublasHandle_t cublas() const = 0;
  virtual cudnnHandle_t cudnn() const = 0;
  virtual absl::Mutex& library_mu() const = 0;
};

}  // namespace rill

#endif  // RILL_KERNELS_CUDA_GPU_DEVICE_CONTEXT_H_
