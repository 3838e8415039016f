#include "kernels/cuda/gpu_kernels.h"

#include "kernels/host_kernels.h"
#include "kernels/registry.h"

namespace rill {

void RegisterGpuKernels(KernelRegistry& registry) {
  RegisterHostKernels(registry, kDeviceGpu);
  RegisterGpuStateKernels(registry);
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
