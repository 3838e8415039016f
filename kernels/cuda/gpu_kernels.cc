// The GPU's kernels: the CPU kernels that run unchanged on a GPU (host
// memory types only, or never reading their data). Const and the variable
// kernels register for the GPU beside the CPU in their own files.
#include "kernels/host_kernels.h"
#include "kernels/registry.h"

namespace rill {

void RegisterGpuKernels(KernelRegistry& registry) { RegisterHostKernels(registry, kDeviceGpu); }

}  // namespace rill
