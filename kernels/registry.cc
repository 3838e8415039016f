#include "kernels/registry.h"

#include "kernels/host_computed_kernels.h"
#include "kernels/host_kernels.h"

namespace rill {

void RegisterCpuKernels(KernelRegistry& registry) {
  RegisterCpuCwiseKernels(registry);
  RegisterCpuClipKernels(registry);
  RegisterCpuReductionKernels(registry);
  RegisterCpuLogicKernels(registry);
  RegisterCpuMatMulKernels(registry);
  RegisterCpuNnKernels(registry);
  RegisterCpuConvKernels(registry);
  RegisterCpuDepthwiseConvKernels(registry);
  RegisterCpuArrayKernels(registry);
  RegisterCpuTransformKernels(registry);
  RegisterCpuSliceKernels(registry);
  RegisterCpuConcatSplitKernels(registry);
  RegisterCpuGatherKernels(registry);
  RegisterCpuTopKKernels(registry);
  RegisterCpuGatherNdKernels(registry);
  RegisterCpuPadKernels(registry);
  RegisterCpuResizeBilinearKernels(registry);
  RegisterCpuScanKernels(registry);
  RegisterCpuAssertKernels(registry);
  RegisterCpuBatchNormKernels(registry);
  RegisterCpuRandomKernels(registry);
  RegisterCpuStateKernels(registry);
  RegisterCpuTrainingKernels(registry);
  RegisterCpuAccumulatorKernels(registry);
  RegisterCpuTensorArrayKernels(registry);
  RegisterCpuStackKernels(registry);
  RegisterCpuListKernels(registry);
  RegisterCpuBincountKernels(registry);
  RegisterSendRecvKernels(registry);
  RegisterCpuIoKernels(registry);
  RegisterCpuSummaryKernels(registry);
  RegisterCpuQueueKernels(registry);
  RegisterControlFlowKernels(registry);
  RegisterFunctionCallKernels(registry);
}

void RegisterGpuKernels(KernelRegistry& registry) {
  RegisterHostKernels(registry, kDeviceGpu);
  RegisterCudaKernels(registry);
  // Last: only what no CUDA kernel takes.
  RegisterHostComputedKernels(registry, kDeviceGpu);
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
