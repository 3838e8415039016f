// The GPU's kernels: the CPU kernels that run unchanged on a GPU (host
// memory types only, or never reading their data), then each CUDA family.
// Const and the variable kernels register for the GPU beside the CPU in
// their own files.
#include "kernels/cuda/gpu_kernels.h"

#include "kernels/host_kernels.h"
#include "kernels/registry.h"

namespace rill {

void RegisterGpuKernels(KernelRegistry& registry) {
  RegisterHostKernels(registry, kDeviceGpu);
  RegisterGpuCwiseKernels(registry);
  RegisterGpuTrainingKernels(registry);
  RegisterGpuReductionKernels(registry);
  RegisterGpuNnKernels(registry);
  RegisterGpuTransformKernels(registry);
  RegisterGpuMatMulKernels(registry);
  RegisterGpuDnnKernels(registry);
  RegisterGpuRandomKernels(registry);
}

}  // namespace rill
