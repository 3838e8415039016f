#include "kernels/registry.h"

namespace rill {

void RegisterCpuKernels(KernelRegistry& registry) {
  RegisterCpuCwiseKernels(registry);
  RegisterCpuClipKernels(registry);
  RegisterCpuReductionKernels(registry);
  RegisterCpuLogicKernels(registry);
  RegisterCpuMatMulKernels(registry);
  RegisterCpuNnKernels(registry);
  RegisterCpuConvKernels(registry);
  RegisterCpuArrayKernels(registry);
  RegisterCpuTransformKernels(registry);
  RegisterCpuSliceKernels(registry);
  RegisterCpuConcatSplitKernels(registry);
  RegisterCpuGatherKernels(registry);
  RegisterCpuRandomKernels(registry);
  RegisterCpuStateKernels(registry);
  RegisterCpuTrainingKernels(registry);
  RegisterCpuAccumulatorKernels(registry);
  RegisterSendRecvKernels(registry);
  RegisterCpuIoKernels(registry);
  RegisterCpuSummaryKernels(registry);
  RegisterCpuQueueKernels(registry);
}

void RegisterStandardKernels(KernelRegistry& registry) {
  RegisterCpuKernels(registry);
  // After the CPU's: the GPU reuses some CPU kernels (host_kernels.h).
  RegisterGpuKernels(registry);
}

const KernelRegistry& StandardKernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry;
    RegisterStandardKernels(*r);
    return r;
  }();
  return *registry;
}

}  // namespace rill
