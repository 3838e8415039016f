// Kernels of the control-flow primitives. Each moves its input to an
// output (sharing the buffer, or the variable for the Ref twins); a Switch
// leaves its untaken output unset, which the executor reads as dead, and a
// Merge takes the one input that is not dead. Frames and iterations are
// the executor's, so Enter, Exit and NextIteration are forwards here.
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/host_computed_kernels.h"
#include "kernels/registry.h"

namespace rill {
namespace {

void Forward(KernelContext& ctx, int input, int output) {
  if (ctx.input_is_ref(input)) {
    ctx.forward_ref_input_to_ref_output(input, output);
  } else {
    ctx.set_output(output, ctx.input(input));
  }
}

absl::Status CheckScalarPredicate(const Tensor& pred, const char* what) {
  if (pred.dtype() != DT_BOOL || pred.shape().dims() != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be a bool scalar, but has shape %s", what,
                        pred.shape().DebugString()));
  }
  return absl::OkStatus();
}

// The predicate's value. On a device with memory of its own it is read
// back, waiting for the device: a Switch decides on the host, as
// TensorFlow's GPU Switch does with its predicate in host memory.
absl::StatusOr<bool> ScalarPredicate(const KernelContext& ctx, int input, const char* what) {
  const Tensor& pred = ctx.input(input);
  RETURN_IF_ERROR(CheckScalarPredicate(pred, what));
  if (ctx.device_context() == nullptr) return pred.scalar<bool>();
  ASSIGN_OR_RETURN(const Tensor host, ReadToHost(*ctx.device_context(), pred));
  return host.scalar<bool>();
}

// Switch and RefSwitch: data goes to output_true when pred holds, else to
// output_false; the other output stays dead.
class SwitchOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(bool pred, ScalarPredicate(ctx, 1, "pred"));
    Forward(ctx, 0, pred ? 1 : 0);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// Merge and RefMerge: the executor runs it once an input has a value (or
// never, when every input is dead); it forwards the first such input and
// its index.
class MergeOp final : public OpKernel {
 public:
  explicit MergeOp(const OpKernelConstruction& c) : OpKernel(c) {
    // The value_index tensors, made once: a loop's Merge runs every
    // iteration, and an allocation would cost more than the rest of it.
    for (int i = 0; i < c.num_inputs(); ++i) indices_.push_back(Tensor::Scalar<int32_t>(i));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!ctx.has_input(i)) continue;
      Forward(ctx, i, 0);
      ctx.set_output(1, indices_[i]);
      return absl::OkStatus();
    }
    return absl::InternalError("none of its inputs has a value");
  }
  bool IsExpensive() const override { return false; }

 private:
  std::vector<Tensor> indices_;
};

// Enter, Exit, NextIteration and their Ref twins.
class ForwardOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    Forward(ctx, 0, 0);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class LoopCondOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(CheckScalarPredicate(ctx.input(0), "the loop condition"));
    ctx.set_output(0, ctx.input(0));
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

class ControlTriggerOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext&) const override { return absl::OkStatus(); }
  bool IsExpensive() const override { return false; }
};

// Abort ends the step with ABORTED (or, with exit_without_error, quietly
// with OUT_OF_RANGE, as a stop signal). TensorFlow ends the process; a
// server here runs other clients' steps and must stay up.
class AbortOp final : public OpKernel {
 public:
  AbortOp(const OpKernelConstruction& c, std::string message, bool quiet)
      : OpKernel(c), message_(std::move(message)), quiet_(quiet) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(std::string message, GetStringAttr(c.def(), "error_msg"));
    ASSIGN_OR_RETURN(bool quiet, GetBoolAttr(c.def(), "exit_without_error"));
    return std::unique_ptr<OpKernel>(std::make_unique<AbortOp>(c, std::move(message), quiet));
  }
  absl::Status Compute(KernelContext&) const override {
    if (quiet_) return absl::OutOfRangeError("Abort with exit_without_error: the step stops");
    return absl::AbortedError(absl::StrFormat("Abort op: %s", message_));
  }
  bool IsExpensive() const override { return false; }

 private:
  const std::string message_;
  const bool quiet_;
};

}  // namespace

void RegisterControlFlowKernels(KernelRegistry& r) {
  // On a GPU too: they only hand buffers on, and a Switch reads its
  // predicate back to the host. Abort stops a step only on the CPU.
  for (const char* device : {kDeviceCpu, kDeviceGpu}) {
    for (const char* op : {"Merge", "RefMerge"}) {
      r.Register(KernelDef(op).Device(device), MakeKernel<MergeOp>);
    }
    for (const char* op : {"Enter", "RefEnter", "Exit", "RefExit", "NextIteration",
                           "RefNextIteration"}) {
      r.Register(KernelDef(op).Device(device), MakeKernel<ForwardOp>);
    }
    for (const char* op : {"Switch", "RefSwitch"}) {
      r.Register(KernelDef(op).Device(device), MakeKernel<SwitchOp>);
    }
    r.Register(KernelDef("LoopCond").Device(device), MakeKernel<LoopCondOp>);
    r.Register(KernelDef("ControlTrigger").Device(device), MakeKernel<ControlTriggerOp>);
  }
  r.Register(KernelDef("Abort").Device(kDeviceCpu), AbortOp::Create);
}

}  // namespace rill
