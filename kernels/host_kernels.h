// Kernels that run unchanged on a device whose memory is not the host's:
// those that touch only tensors InHostMemory keeps on the host, and those
// that never read their data (Identity, Reshape, Shape ...).
#ifndef RILL_KERNELS_HOST_KERNELS_H_
#define RILL_KERNELS_HOST_KERNELS_H_

#include <string>

#include "kernels/framework/kernel_registry.h"

namespace rill {

// Registers, for `device_type`, each CPU kernel of `registry` whose every
// input and output can only be of a type InHostMemory keeps on the host
// (int32 shape arithmetic, strings), the int32 kernels of the data
// movement ops that shapes go through (Pack, ConcatV2, StridedSlice ...),
// and the CPU kernels of the ops that only forward or describe a tensor,
// limited to int32 shapes and sizes.
// As TensorFlow does, this keeps shape computations next to the device's
// work without copies. The device's own kernels take no InHostMemory
// types, so the two never overlap.
void RegisterHostKernels(KernelRegistry& registry, const std::string& device_type);

}  // namespace rill

#endif  // RILL_KERNELS_HOST_KERNELS_H_
