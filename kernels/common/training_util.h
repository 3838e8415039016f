// What the kernels that update variables in place (Apply*, AssignAdd/Sub)
// share on every device: attrs, the locking of variables, operand checks.
#ifndef RILL_KERNELS_COMMON_TRAINING_UTIL_H_
#define RILL_KERNELS_COMMON_TRAINING_UTIL_H_

#include <algorithm>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"

namespace rill::training_util {

// Holds the distinct mutexes of some reference inputs, taken in address
// order so that updates sharing variables (or a mutex) cannot deadlock.
class RefInputLocks {
 public:
  RefInputLocks(const KernelContext& ctx, const std::vector<int>& inputs, bool lock) {
    if (!lock) return;
    for (int i : inputs) mutexes_.push_back(ctx.input_ref_mutex(i));
    std::sort(mutexes_.begin(), mutexes_.end());
    mutexes_.erase(std::unique(mutexes_.begin(), mutexes_.end()), mutexes_.end());
    for (absl::Mutex* mu : mutexes_) mu->Lock();
  }
  ~RefInputLocks() {
    for (auto it = mutexes_.rbegin(); it != mutexes_.rend(); ++it) (*it)->Unlock();
  }
  RefInputLocks(const RefInputLocks&) = delete;
  RefInputLocks& operator=(const RefInputLocks&) = delete;

 private:
  std::vector<absl::Mutex*> mutexes_;
};

// The tensor of reference input `i`: the variable itself when its lock is
// held, else the snapshot read when the context was made (which shares the
// variable's buffer). FAILED_PRECONDITION naming it when uninitialized.
inline absl::StatusOr<Tensor> RefTensor(const KernelContext& ctx, int i, bool locked) {
  const Tensor& t = locked ? *ctx.mutable_input(i) : ctx.input(i);
  if (!t.IsInitialized()) return UninitializedValueError(ctx, i);
  return t;
}

// The inputs of an optimizer update, in order: its variables are reference
// inputs 0..num_vars-1, input `grad` has the shape of var, and every other
// input is a scalar hyper-parameter. Names are for messages.
struct UpdateLayout {
  std::vector<const char*> inputs;
  int num_vars;
  int grad;

  std::vector<int> VariableInputs() const {
    std::vector<int> vars(num_vars);
    for (int i = 0; i < num_vars; ++i) vars[i] = i;
    return vars;
  }
};

inline const UpdateLayout kGradientDescentLayout = {{"var", "alpha", "delta"}, 1, 2};
inline const UpdateLayout kMomentumLayout = {{"var", "accum", "lr", "grad", "momentum"}, 2, 3};
inline const UpdateLayout kAdamLayout = {
    {"var", "m", "v", "beta1_power", "beta2_power", "lr", "beta1", "beta2", "epsilon", "grad"},
    3,
    9};

// The variables of an update whose locks the caller holds (when `locked`),
// after checking every operand against `layout`: INVALID_ARGUMENT naming the
// first that is wrong, FAILED_PRECONDITION for an uninitialized variable.
inline absl::StatusOr<std::vector<Tensor>> CheckedVariables(const KernelContext& ctx,
                                                            const UpdateLayout& layout,
                                                            bool locked) {
  std::vector<Tensor> vars;
  for (int i = 0; i < layout.num_vars; ++i) {
    ASSIGN_OR_RETURN(Tensor var, RefTensor(ctx, i, locked));
    vars.push_back(std::move(var));
  }
  const TensorShape& shape = vars[0].shape();
  for (int i = 1; i < static_cast<int>(layout.inputs.size()); ++i) {
    const Tensor& t = i < layout.num_vars ? vars[i] : ctx.input(i);
    if (i < layout.num_vars || i == layout.grad) {
      if (t.shape() == shape) continue;
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: var %s and %s do not have the same shape: %s vs %s", ctx.node().op(),
          RefInputName(ctx, 0), layout.inputs[i], shape.DebugString(), t.shape().DebugString()));
    }
    if (t.dims() != 0) {
      return absl::InvalidArgumentError(absl::StrFormat("%s: %s is not a scalar: %s",
                                                        ctx.node().op(), layout.inputs[i],
                                                        t.shape().DebugString()));
    }
  }
  return vars;
}

// The variable of AssignAdd or AssignSub (whose lock the caller holds when
// `locked`), checked initialized and of the value's shape.
inline absl::StatusOr<Tensor> AssignUpdateVariable(const KernelContext& ctx, bool locked) {
  ASSIGN_OR_RETURN(Tensor var, RefTensor(ctx, 0, locked));
  const Tensor& value = ctx.input(1);
  if (var.shape() == value.shape()) return var;
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: the value of shape %s does not match variable %s of shape %s", ctx.node().op(),
      value.shape().DebugString(), RefInputName(ctx, 0), var.shape().DebugString()));
}

struct ApplyAttrs {
  bool use_locking;
  bool use_nesterov;

  static ApplyAttrs From(const OpKernelConstruction& c) {
    return {GetBoolAttr(c.def(), "use_locking").value_or(false),
            GetBoolAttr(c.def(), "use_nesterov").value_or(false)};
  }
};

// The kernel of an optimizer update on any device: locks the variables
// (with use_locking) and checks the operands as `layout` says, runs the
// device's Update on the variables, then forwards var's reference.
class ApplyOp : public OpKernel {
 public:
  ApplyOp(const OpKernelConstruction& c, const UpdateLayout& layout)
      : OpKernel(c), layout_(layout), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const final {
    {
      RefInputLocks locks(ctx, layout_.VariableInputs(), attrs_.use_locking);
      ASSIGN_OR_RETURN(std::vector<Tensor> vars,
                       CheckedVariables(ctx, layout_, attrs_.use_locking));
      RETURN_IF_ERROR(Update(ctx, vars));
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 protected:
  // `vars` are the layout's variables, in order; the other inputs are
  // checked.
  virtual absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const = 0;
  bool use_nesterov() const { return attrs_.use_nesterov; }

 private:
  const UpdateLayout& layout_;
  const ApplyAttrs attrs_;
};

}  // namespace rill::training_util

#endif  // RILL_KERNELS_COMMON_TRAINING_UTIL_H_
