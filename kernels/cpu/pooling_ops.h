// The CPU pooling kernels (MaxPool, MaxPoolGrad, AvgPool); registered by
// RegisterCpuConvKernels with the convolutions.
#ifndef RILL_KERNELS_CPU_POOLING_OPS_H_
#define RILL_KERNELS_CPU_POOLING_OPS_H_

#include "kernels/framework/kernel_registry.h"

namespace rill {

void RegisterCpuPoolingKernels(KernelRegistry& registry);

}  // namespace rill

#endif  // RILL_KERNELS_CPU_POOLING_OPS_H_
