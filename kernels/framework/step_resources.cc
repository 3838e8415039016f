#include "kernels/framework/step_resources.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace rill {

std::string StepContainer(int64_t step_id) { return absl::StrCat("__step_", step_id); }

void CleanupStepResources(ResourceMgr& resources, int64_t step_id) {
  resources.Cleanup(StepContainer(step_id));
}

bool MakesStepResources(std::string_view op) {
  return op == "TensorArrayV3" || op == "TensorArrayGradV3" || op == "TensorArrayGradWithShape" ||
         op == "StackV2";
}

absl::StatusOr<ResourceMgr*> StepResourceMgr(const KernelContext& ctx) {
  if (ctx.resource_manager() == nullptr) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "%s needs the device's resource manager to hold its state, and has none", ctx.node().op()));
  }
  return ctx.resource_manager();
}

Tensor MakeStepResourceHandle(const KernelContext& ctx, std::string name, const char* type_name) {
  Tensor handle(DT_RESOURCE, TensorShape());
  ResourceHandleProto& proto = handle.scalar<ResourceHandleProto>();
  proto.set_device(ctx.node().device());
  proto.set_container(StepContainer(ctx.step_id()));
  proto.set_name(std::move(name));
  proto.set_maybe_type_name(type_name);
  return handle;
}

absl::StatusOr<const ResourceHandleProto*> StepResourceHandle(const KernelContext& ctx, int input) {
  const Tensor& handle = ctx.input(input);
  if (handle.dtype() != DT_RESOURCE || handle.NumElements() != 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: input %d must be one handle, got %s", ctx.node().op(), input, handle.DebugString()));
  }
  const ResourceHandleProto* proto = handle.data<ResourceHandleProto>();
  if (proto->container() != StepContainer(ctx.step_id())) {
    return absl::NotFoundError(absl::StrFormat(
        "%s: handle '%s' (container '%s') was not made by this step (%s): per-step state "
        "cannot be used by another step",
        ctx.node().op(), proto->name(), proto->container(), StepContainer(ctx.step_id())));
  }
  return proto;
}

}  // namespace rill
