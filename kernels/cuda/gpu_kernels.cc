// The CUDA families, each registered by its own file under kernels/cuda/.
// Const and the variable kernels register for the GPU beside the CPU in
// their own files.
#include "kernels/cuda/gpu_kernels.h"

#include "kernels/registry.h"

namespace rill {

void RegisterCudaKernels(KernelRegistry& registry) {
  RegisterGpuCwiseKernels(registry);
  RegisterGpuArrayKernels(registry);
  RegisterGpuTrainingKernels(registry);
  RegisterGpuReductionKernels(registry);
  RegisterGpuNnKernels(registry);
  RegisterGpuTransformKernels(registry);
  RegisterGpuMatMulKernels(registry);
  RegisterGpuConvKernels(registry);
  RegisterGpuPoolingKernels(registry);
  RegisterGpuRandomKernels(registry);
}

}  // namespace rill
