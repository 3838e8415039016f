// The GPU kernel families, one registration function per file under
// kernels/cuda/; RegisterCudaKernels (registry.h) calls them all.
#ifndef RILL_KERNELS_CUDA_GPU_KERNELS_H_
#define RILL_KERNELS_CUDA_GPU_KERNELS_H_

#include "kernels/framework/kernel_registry.h"

namespace rill {

void RegisterGpuCwiseKernels(KernelRegistry& registry);      // cuda/cwise_ops.cc
void RegisterGpuArrayKernels(KernelRegistry& registry);      // cuda/array_ops.cc
void RegisterGpuTrainingKernels(KernelRegistry& registry);   // cuda/training_ops.cc
void RegisterGpuReductionKernels(KernelRegistry& registry);  // cuda/reduction_ops.cc
void RegisterGpuNnKernels(KernelRegistry& registry);         // cuda/nn_ops.cc
void RegisterGpuTransformKernels(KernelRegistry& registry);  // cuda/transform_ops.cc
void RegisterGpuMatMulKernels(KernelRegistry& registry);     // cuda/matmul_ops.cc
void RegisterGpuConvKernels(KernelRegistry& registry);       // cuda/dnn_conv_ops.cc
void RegisterGpuPoolingKernels(KernelRegistry& registry);    // cuda/dnn_pooling_ops.cc
void RegisterGpuRandomKernels(KernelRegistry& registry);     // cuda/random_ops.cc

}  // namespace rill

#endif  // RILL_KERNELS_CUDA_GPU_KERNELS_H_
