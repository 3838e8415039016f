// The standard kernel registry: every kernel rill has, registered explicitly
// in one place (registry.cc), one family per file under kernels/cpu/.
#ifndef RILL_KERNELS_REGISTRY_H_
#define RILL_KERNELS_REGISTRY_H_

#include <string_view>
#include <vector>

#include "kernels/framework/kernel_registry.h"

namespace rill {

void RegisterCpuCwiseKernels(KernelRegistry& registry);        // cpu/cwise_*.cc
void RegisterCpuClipKernels(KernelRegistry& registry);         // cpu/clip_ops.cc
void RegisterCpuReductionKernels(KernelRegistry& registry);    // cpu/reduction_ops.cc
void RegisterCpuLogicKernels(KernelRegistry& registry);        // cpu/logic_ops.cc
void RegisterCpuMatMulKernels(KernelRegistry& registry);       // cpu/matmul_ops.cc
void RegisterCpuNnKernels(KernelRegistry& registry);           // cpu/nn_ops.cc
void RegisterCpuConvKernels(KernelRegistry& registry);         // cpu/conv_ops.cc, pooling_ops.cc
void RegisterCpuDepthwiseConvKernels(KernelRegistry& registry);  // cpu/depthwise_conv_ops.cc
void RegisterCpuArrayKernels(KernelRegistry& registry);        // cpu/array_ops.cc (Const: CPU, GPU)
void RegisterCpuTransformKernels(KernelRegistry& registry);    // cpu/transform_ops.cc
void RegisterCpuSliceKernels(KernelRegistry& registry);        // cpu/slice_ops.cc
void RegisterCpuConcatSplitKernels(KernelRegistry& registry);  // cpu/concat_split_ops.cc
void RegisterCpuGatherKernels(KernelRegistry& registry);       // cpu/gather_ops.cc
void RegisterCpuTopKKernels(KernelRegistry& registry);         // cpu/topk_op.cc
void RegisterCpuGatherNdKernels(KernelRegistry& registry);     // cpu/gather_nd_ops.cc
void RegisterCpuPadKernels(KernelRegistry& registry);          // cpu/pad_ops.cc
void RegisterCpuResizeBilinearKernels(KernelRegistry& registry);  // cpu/resize_bilinear_ops.cc
void RegisterCpuScanKernels(KernelRegistry& registry);         // cpu/scan_ops.cc
void RegisterCpuAssertKernels(KernelRegistry& registry);       // cpu/assert_op.cc
void RegisterCpuBatchNormKernels(KernelRegistry& registry);    // cpu/batch_norm_ops.cc
void RegisterCpuRandomKernels(KernelRegistry& registry);       // cpu/random_ops.cc
void RegisterCpuStateKernels(KernelRegistry& registry);        // cpu/state_ops.cc (CPU, GPU)
void RegisterCpuTrainingKernels(KernelRegistry& registry);     // cpu/training_ops.cc
void RegisterCpuAccumulatorKernels(KernelRegistry& registry);  // cpu/accumulator_ops.cc
void RegisterCpuTensorArrayKernels(KernelRegistry& registry);  // cpu/tensor_array_ops.cc
void RegisterCpuStackKernels(KernelRegistry& registry);        // cpu/stack_ops.cc
void RegisterCpuBincountKernels(KernelRegistry& registry);     // cpu/bincount_ops.cc
void RegisterCpuListKernels(KernelRegistry& registry);         // cpu/list_ops.cc
void RegisterCpuListGatherKernels(KernelRegistry& registry);   // cpu/list_gather_ops.cc
void RegisterSendRecvKernels(KernelRegistry& registry);        // sendrecv_ops.cc (CPU, GPU)
void RegisterCpuIoKernels(KernelRegistry& registry);           // cpu/io_ops.cc
void RegisterCpuSummaryKernels(KernelRegistry& registry);      // cpu/summary_ops.cc
void RegisterCpuQueueKernels(KernelRegistry& registry);        // cpu/queue_ops.cc
void RegisterControlFlowKernels(KernelRegistry& registry);     // cpu/control_flow_ops.cc (CPU, GPU)
void RegisterFunctionCallKernels(KernelRegistry& registry);    // cpu/function_call_ops.cc
// The CUDA families' kernels (cuda/gpu_kernels.cc). A build without CUDA
// registers the same definitions (CudaKernelDefs) with kernels that fail
// when built, so that it can still place graphs for GPUs it cannot run.
void RegisterCudaKernels(KernelRegistry& registry);
// Those definitions as text (KernelDefText), one per CUDA kernel; a test
// pins them to what cuda/ registers.
const std::vector<std::string_view>& CudaKernelDefs();  // cuda_kernel_defs.cc
// Every GPU kernel: the CPU kernels that run unchanged on a GPU
// (host_kernels.h), the ones computed on the host (host_computed_kernels.h),
// and the CUDA families.
void RegisterGpuKernels(KernelRegistry& registry);

// Every CPU kernel; then the standard set: the CPU's and the GPU's.
void RegisterCpuKernels(KernelRegistry& registry);
void RegisterStandardKernels(KernelRegistry& registry);

// A process-wide registry holding the standard kernels, built on first use.
const KernelRegistry& StandardKernels();

}  // namespace rill

#endif  // RILL_KERNELS_REGISTRY_H_
