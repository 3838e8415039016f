#include "kernels/cuda/gpu_kernel_util.h"

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "kernels/framework/device_context.h"

namespace rill {

absl::StatusOr<GpuDeviceContext*> GpuContext(const KernelContext& ctx) {
  auto* gpu = dynamic_cast<GpuDeviceContext*>(ctx.device_context());
  if (gpu == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("%s: a GPU kernel was run without a GPU", ctx.node().name()));
  }
  RETURN_IF_CUDA_ERROR(cudaSetDevice(gpu->ordinal()), ctx.node().name() + ": cudaSetDevice");
  return gpu;
}

absl::Status CheckLaunch(const KernelContext& ctx, std::string_view what) {
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess) {
    return CudaError(e, absl::StrFormat("%s: %s", ctx.node().name(), what));
  }
  return absl::OkStatus();
}

absl::StatusOr<Tensor> InputOnDevice(KernelContext& ctx, GpuDeviceContext& gpu, int i) {
  const Tensor& input = ctx.input(i);
  if (!InHostMemory(input.dtype())) return input;
  ASSIGN_OR_RETURN(Tensor on_device,
                   Tensor::Allocate(ctx.allocator(), input.dtype(), input.shape()));
  if (input.TotalBytes() > 0) {
    // From pageable memory the call returns once the bytes are staged, so
    // `input` may go as soon as it returns.
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(on_device.raw_data(), input.raw_data(), input.TotalBytes(),
                                         cudaMemcpyHostToDevice, gpu.compute_stream()),
                         absl::StrFormat("%s: copying input %d to the GPU", ctx.node().name(), i));
  }
  return on_device;
}

absl::StatusOr<Tensor> ReadToHost(GpuDeviceContext& gpu, const Tensor& device) {
  Tensor host(device.dtype(), device.shape());
  if (device.TotalBytes() > 0) {
    RETURN_IF_CUDA_ERROR(cudaMemcpyAsync(host.raw_data(), device.raw_data(), device.TotalBytes(),
                                         cudaMemcpyDeviceToHost, gpu.compute_stream()),
                         "reading a GPU tensor");
    RETURN_IF_CUDA_ERROR(cudaStreamSynchronize(gpu.compute_stream()), "reading a GPU tensor");
  }
  return host;
}

}  // namespace rill
