// Gradients of a cond's primitives, as TensorFlow's control_flow_grad.py:
// a Merge sends its gradient back through a Switch to the branch that was
// taken, and a Switch merges the gradients of its two branches. Loops are
// differentiated whole (graph/while_gradients.h), not op by op.
#include <vector>

#include "absl/strings/str_format.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

// Input i gets the gradient when the Merge forwarded input i: a Switch on
// value_index == i, whose untaken side is dead.
absl::Status MergeGrad(const Scope& scope, const Operation& op, const std::vector<Output>& dy,
                       std::vector<Output>* dx) {
  const int n = op.node()->num_inputs();
  for (int i = 0; i < n; ++i) {
    if (!dy[0].ok()) {
      dx->push_back(Output());
      continue;
    }
    const auto taken = ops::Equal(scope, grad::Out(op, 1), i);
    dx->push_back(ops::Switch(scope, dy[0], taken).output_true);
  }
  return scope.status();
}

// The branch not taken sends nothing (its gradient is dead): the Merge
// forwards the live one. A branch without a gradient sends zeros shaped
// like its value, which is live exactly when that branch runs.
absl::Status SwitchGrad(const Scope& scope, const Operation& op, const std::vector<Output>& dy,
                        std::vector<Output>* dx) {
  if (!dy[0].ok() && !dy[1].ok()) {
    *dx = {Output(), Output()};
    return absl::OkStatus();
  }
  const Output on_false = dy[0].ok() ? dy[0] : ops::ZerosLike(scope, grad::Out(op, 0));
  const Output on_true = dy[1].ok() ? dy[1] : ops::ZerosLike(scope, grad::Out(op, 1));
  *dx = {ops::Merge(scope, {on_false, on_true}).output, Output()};
  return scope.status();
}

// A loop's Enter reached one by one: AddGradients called inside the loop's
// body, where the gradient stays in the body's frame, and what lies outside
// the loop is differentiated there too, its values entering as the body's
// builder brings them in (TensorFlow's _EnterGrad outside a gradient loop).
absl::Status EnterGrad(const Scope& scope, const Operation&, const std::vector<Output>& dy,
                       std::vector<Output>* dx) {
  *dx = {dy[0]};
  return scope.status();
}

// AddGradients differentiates a loop as a whole (graph/while_gradients.h);
// its Exits and NextIterations are never differentiated one by one.
absl::Status LoopPrimitiveGrad(const Scope&, const Operation& op, const std::vector<Output>&,
                               std::vector<Output>*) {
  return absl::InternalError(absl::StrFormat(
      "'%s' (%s) belongs to a loop, whose gradient is built for the whole loop", op.name(),
      op.node()->op()));
}

}  // namespace

void RegisterControlFlowGradients(GradientRegistry& r) {
  r.Register("Merge", MergeGrad);
  r.Register("RefMerge", MergeGrad);
  r.Register("Switch", SwitchGrad);
  r.Register("RefSwitch", SwitchGrad);
  r.Register("Enter", EnterGrad);
  r.Register("RefEnter", EnterGrad);
  for (const char* op : {"Exit", "RefExit", "NextIteration", "RefNextIteration"}) {
    r.Register(op, LoopPrimitiveGrad);
  }
  for (const char* op : {"LoopCond", "ControlTrigger", "Abort"}) r.RegisterNoGradient(op);
}

}  // namespace rill
