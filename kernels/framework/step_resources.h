// Resources that belong to one step (TensorArrays, stacks): the container
// they live in within the device's ResourceMgr, the handles that name them,
// and the call that drops them when the step ends.
#ifndef RILL_KERNELS_FRAMEWORK_STEP_RESOURCES_H_
#define RILL_KERNELS_FRAMEWORK_STEP_RESOURCES_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"

namespace rill {

// The container of step `step_id`'s resources: "__step_<id>". No node
// attr names it by accident: containers users choose never start with
// "__".
std::string StepContainer(int64_t step_id);

// Drops every resource step `step_id` created in `resources`. The runtime
// calls it once the step has finished on the device (no kernel of the step
// can still use them); a holder that still has one keeps it alive until it
// lets go, but no lookup finds it any more.
void CleanupStepResources(ResourceMgr& resources, int64_t step_id);
// Whether nodes of op `op` make resources of their step (so that an
// executor without any skips the cleanup).
bool MakesStepResources(std::string_view op);

// The device's resource manager; FAILED_PRECONDITION when the kernel runs
// without one.
absl::StatusOr<ResourceMgr*> StepResourceMgr(const KernelContext& ctx);

// A DT_RESOURCE scalar naming resource `name` of type `type_name` in the
// running step's container on this node's device.
Tensor MakeStepResourceHandle(const KernelContext& ctx, std::string name, const char* type_name);

// Makes a resource of type T in the running step's container under a name
// no other resource there has, "<base>#<n>" with n taken from `next` (a
// counter the calling kernel keeps: the same node runs once per loop
// iteration, and a kernel made again starts its count again, so a taken
// name is skipped). `make(name)` builds the resource; returns its handle.
template <typename T>
absl::StatusOr<Tensor> CreateStepResource(
    const KernelContext& ctx, std::string_view base, std::atomic<int64_t>& next,
    const std::function<absl::StatusOr<std::shared_ptr<T>>(const std::string& name)>& make) {
  ASSIGN_OR_RETURN(ResourceMgr * resources, StepResourceMgr(ctx));
  for (;;) {
    // Relaxed: only uniqueness matters, and the manager's lock decides it.
    std::string name =
        absl::StrCat(std::string(base), "#", next.fetch_add(1, std::memory_order_relaxed));
    Tensor handle = MakeStepResourceHandle(ctx, name, T::kTypeName);
    bool created = false;
    RETURN_IF_ERROR(resources
                        ->LookupOrCreate<T>(StepContainer(ctx.step_id()), name,
                                            [&]() -> absl::StatusOr<std::shared_ptr<T>> {
                                              created = true;
                                              return make(name);
                                            })
                        .status());
    if (created) return handle;
  }
}

// The handle input `input` holds. INVALID_ARGUMENT unless it is one
// resource handle; NOT_FOUND, naming the handle, when it names a resource
// of another step.
absl::StatusOr<const ResourceHandleProto*> StepResourceHandle(const KernelContext& ctx, int input);

// The resource of type T that input `input`'s handle names in this step.
// NOT_FOUND naming the handle when there is none: it was closed, or made by
// another step.
template <typename T>
absl::StatusOr<std::shared_ptr<T>> LookupStepResource(const KernelContext& ctx, int input) {
  ASSIGN_OR_RETURN(const ResourceHandleProto* handle, StepResourceHandle(ctx, input));
  ASSIGN_OR_RETURN(ResourceMgr * resources, StepResourceMgr(ctx));
  absl::StatusOr<std::shared_ptr<T>> found =
      resources->Lookup<T>(handle->container(), handle->name());
  if (absl::IsNotFound(found.status())) {
    return absl::NotFoundError(absl::StrCat(
        T::kTypeName, " '", handle->name(),
        "' does not exist: it was closed, or its step has ended (a handle is valid only in the "
        "step that made it)"));
  }
  return found;
}

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_STEP_RESOURCES_H_
