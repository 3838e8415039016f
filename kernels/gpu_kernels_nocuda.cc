// A build without CUDA has no GPU device, so no GPU kernels.
#include "kernels/registry.h"

namespace rill {

void RegisterGpuKernels(KernelRegistry& registry) { static_cast<void>(registry); }

}  // namespace rill
