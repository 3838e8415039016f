// What GPU kernels share on the host side: the device context they queue
// on (with its GPU current on the calling thread), launch checks that name
// the node, and host-memory inputs moved to the device.
#ifndef RILL_KERNELS_CUDA_GPU_KERNEL_UTIL_H_
#define RILL_KERNELS_CUDA_GPU_KERNEL_UTIL_H_

#include <string_view>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_device_context.h"
#include "kernels/framework/op_kernel.h"

namespace rill {

// The kernel's GPU, made current on this thread (kernels of several GPUs
// launch from one pool). FAILED_PRECONDITION when the kernel was given no
// GPU context.
absl::StatusOr<GpuDeviceContext*> GpuContext(const KernelContext& ctx);

// The error of the launch just made, if any, as "<node>: <what>: <CUDA's
// words>".
absl::Status CheckLaunch(const KernelContext& ctx, std::string_view what);

// Input `i` in device memory: as it is unless InHostMemory kept it on the
// host (int32 indices, labels), then copied to a device temporary on the
// compute stream.
absl::StatusOr<Tensor> InputOnDevice(KernelContext& ctx, GpuDeviceContext& gpu, int i);

// A device tensor's bytes on the host, after the work queued so far. It
// waits for the stream: for the few kernels whose output shape depends on
// device values.
absl::StatusOr<Tensor> ReadToHost(GpuDeviceContext& gpu, const Tensor& device);

}  // namespace rill

#endif  // RILL_KERNELS_CUDA_GPU_KERNEL_UTIL_H_
