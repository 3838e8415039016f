// CPU kernels for the stack ops. StackV2 makes a Stack in the running
// step's container of the device's ResourceMgr and outputs a handle naming
// it; push, pop and close look it up by that handle.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/stack.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/framework/step_resources.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// StackV2: a fresh stack per run, named after the node and the run, in the
// step's container. Messages call it by stack_name (default: the node).
class StackOp final : public OpKernel {
 public:
  StackOp(const OpKernelConstruction& c, DataType elem_type, std::string stack_name)
      : OpKernel(c), elem_type_(elem_type), stack_name_(std::move(stack_name)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(DataType elem_type, GetTypeAttr(c.def(), "elem_type"));
    ASSIGN_OR_RETURN(std::string stack_name, GetStringAttr(c.def(), "stack_name"));
    if (stack_name.empty()) stack_name = c.def().name();
    return std::unique_ptr<OpKernel>(
        std::make_unique<StackOp>(c, elem_type, std::move(stack_name)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& max_size = ctx.input(0);
    if (max_size.dtype() != DT_INT32 || max_size.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: max_size must be an int32 scalar, got %s", op(), max_size.DebugString()));
    }
    const int32_t limit = max_size.scalar<int32_t>();
    ASSIGN_OR_RETURN(
        Tensor handle,
        CreateStepResource<Stack>(
            ctx, name(), runs_, [&](const std::string&) -> absl::StatusOr<std::shared_ptr<Stack>> {
              return std::make_shared<Stack>(stack_name_, elem_type_, limit);
            }));
    ctx.set_output(0, std::move(handle));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const DataType elem_type_;
  const std::string stack_name_;
  // Counts runs, to name each run's resource; the only state a run changes.
  mutable std::atomic<int64_t> runs_{0};
};

// StackPushV2 pushes `elem` and passes it on. swap_memory only matters
// for a device whose memory is not the host's.
class StackPushOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, LookupStepResource<Stack>(ctx, 0));
    const Tensor& elem = ctx.input(1);
    RETURN_IF_ERROR(stack->Push(elem));
    ctx.set_output(0, elem);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class StackPopOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, LookupStepResource<Stack>(ctx, 0));
    if (stack->elem_type() != ctx.output_type(0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Stack[%s] holds %s but %s pops %s", stack->name(), DataTypeString(stack->elem_type()),
          op(), DataTypeString(ctx.output_type(0))));
    }
    ASSIGN_OR_RETURN(Tensor value, stack->Pop());
    ctx.set_output(0, std::move(value));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// StackCloseV2: releases the values and forgets the stack, so that a later
// use of the handle is NOT_FOUND.
class StackCloseOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(std::shared_ptr<Stack> stack, LookupStepResource<Stack>(ctx, 0));
    ASSIGN_OR_RETURN(const ResourceHandleProto* handle, StepResourceHandle(ctx, 0));
    ASSIGN_OR_RETURN(ResourceMgr * resources, StepResourceMgr(ctx));
    stack->Close();
    // A concurrent close may have deleted it first: closed either way.
    static_cast<void>(resources->Delete(handle->container(), handle->name()));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

}  // namespace

void RegisterCpuStackKernels(KernelRegistry& r) {
  r.Register(KernelDef("StackV2").Device(kDeviceCpu), StackOp::Create);
  r.Register(KernelDef("StackPushV2").Device(kDeviceCpu), MakeKernel<StackPushOp>);
  r.Register(KernelDef("StackPopV2").Device(kDeviceCpu), MakeKernel<StackPopOp>);
  r.Register(KernelDef("StackCloseV2").Device(kDeviceCpu), MakeKernel<StackCloseOp>);
}

}  // namespace rill
