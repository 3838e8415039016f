// GPU kernels that run the op's CPU kernel on host copies of their inputs:
// for ops whose output size depends on device values, or whose work is a
// few bytes, once per graph (initializers, readiness checks).
#ifndef RILL_KERNELS_HOST_COMPUTED_KERNELS_H_
#define RILL_KERNELS_HOST_COMPUTED_KERNELS_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/kernel_registry.h"

namespace rill {

// Registers for `device_type`, for each op of a fixed list (Where,
// IsVariableInitialized, the random ops' other shape and value types ...),
// every CPU kernel of `registry` again: each reads its device inputs to
// the host (waiting for the device, as TensorFlow's Where does), runs the
// CPU kernel, and copies its outputs to the device. Register after the
// device's own kernels: a node one of those takes never gets this one.
void RegisterHostComputedKernels(KernelRegistry& registry, const std::string& device_type);

// `tensor`, a device's input, in host memory once the device's queued
// work is done: the tensor itself for a type InHostMemory keeps there or
// an empty one, else a copy, waited for.
absl::StatusOr<Tensor> ReadToHost(DeviceContext& device, const Tensor& tensor);

// The kernel above around `cpu` (tests build it directly).
std::unique_ptr<OpKernel> ComputeOnHost(const OpKernelConstruction& c,
                                        std::unique_ptr<OpKernel> cpu);

}  // namespace rill

#endif  // RILL_KERNELS_HOST_COMPUTED_KERNELS_H_
