// Gradients of the TensorArray ops, after TensorFlow's tensor_array_grad.py:
// each op's gradient goes through the gradient array of its array
// (TensorArrayGradV3), one per gradients call: a read's gradient is a write
// there, a write's a read, gather and scatter swap, and so do concat and
// split. The float flows carry the order: an op's gradient for flow_in is
// the flow its gradient op left, so later gradient reads wait for the
// writes. The stacks, and the array's creation, size and close, have none.
#include <string>
#include <vector>

#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::Out;
using Outputs = std::vector<Output>;

// The name of this gradients call, which keys its gradient arrays: the
// path up to the first "gradients*" part of the gradient scope
// ("gradients", "outer/gradients_1"), as TensorFlow's _GetGradSource.
std::string GradSource(const Scope& scope) {
  const std::string& prefix = scope.name_prefix();
  size_t begin = 0;
  while (begin < prefix.size()) {
    size_t end = prefix.find('/', begin);
    if (end == std::string::npos) end = prefix.size();
    if (prefix.compare(begin, 9, "gradients") == 0) return prefix.substr(0, end);
    begin = end + 1;
  }
  return "gradients";
}

// The gradient array of the array `handle` names, ordered after `flow`.
ops::TensorArrayGradV3 GradArray(const Scope& s, const Output& handle, const Output& flow) {
  return ops::TensorArrayGradV3(s, handle, flow, GradSource(s));
}

// The incoming gradient of a writing op's flow_out, made to wait for that
// flow_out: the gradient array must not be made (and sized) before the
// forward op's last write has run.
Output AfterForward(const Scope& s, const Operation& op, const Output& dflow) {
  const Output flow_out = ops::Identity(s.WithOpName("flow_out"), Out(op, 0));
  return ops::Identity(s.WithControlDependencies(flow_out).WithOpName("write_barrier"), dflow);
}

// Read(handle, index, flow_in): write the value's gradient at the index.
absl::Status ReadGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output flow = In(op, 2);
  const ops::TensorArrayGradV3 g = GradArray(s, In(op, 0), flow);
  const ops::TensorArrayWriteV3 w(s, g.grad_handle, In(op, 1), dy[0], flow);
  *dx = {Output(), Output(), w.flow_out};
  return absl::OkStatus();
}

// Write(handle, index, value, flow_in): read the value's gradient back.
absl::Status WriteGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(grad::Def(op), "T"));
  const Output flow = AfterForward(s, op, dy[0]);
  const ops::TensorArrayGradV3 g = GradArray(s, In(op, 0), flow);
  const ops::TensorArrayReadV3 r(s, g.grad_handle, In(op, 1), flow, dtype);
  *dx = {Output(), Output(), r.value, flow};
  return absl::OkStatus();
}

// Gather(handle, indices, flow_in): scatter the gradient to the indices.
absl::Status GatherGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output flow = In(op, 2);
  const ops::TensorArrayGradV3 g = GradArray(s, In(op, 0), flow);
  const ops::TensorArrayScatterV3 w(s, g.grad_handle, In(op, 1), dy[0], flow);
  *dx = {Output(), Output(), w.flow_out};
  return absl::OkStatus();
}

// Scatter(handle, indices, value, flow_in): gather the rows' gradients.
absl::Status ScatterGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(grad::Def(op), "T"));
  const Output flow = AfterForward(s, op, dy[0]);
  const ops::TensorArrayGradV3 g = GradArray(s, In(op, 0), flow);
  const ops::TensorArrayGatherV3 r(s, g.grad_handle, In(op, 1), flow, dtype);
  *dx = {Output(), Output(), r.value, flow};
  return absl::OkStatus();
}

// Concat(handle, flow_in) -> value, lengths: split the gradient back into
// the elements' lengths.
absl::Status ConcatGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output flow = In(op, 1);
  const ops::TensorArrayGradV3 g = GradArray(s, In(op, 0), flow);
  const Output dvalue = grad::OrZeros(s, dy[0], Out(op, 0));
  const ops::TensorArraySplitV3 w(s, g.grad_handle, dvalue, Out(op, 1), flow);
  *dx = {Output(), w.flow_out};
  return absl::OkStatus();
}

// Split(handle, value, lengths, flow_in): the elements' gradients joined.
absl::Status SplitGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(grad::Def(op), "T"));
  const Output flow = AfterForward(s, op, dy[0]);
  const ops::TensorArrayGradV3 g = GradArray(s, In(op, 0), flow);
  const ops::TensorArrayConcatV3 r(s, g.grad_handle, flow, dtype);
  *dx = {Output(), r.value, Output(), flow};
  return absl::OkStatus();
}

}  // namespace

void RegisterDataFlowGradients(GradientRegistry& r) {
  r.Register("TensorArrayReadV3", ReadGrad);
  r.Register("TensorArrayWriteV3", WriteGrad);
  r.Register("TensorArrayGatherV3", GatherGrad);
  r.Register("TensorArrayScatterV3", ScatterGrad);
  r.Register("TensorArrayConcatV3", ConcatGrad);
  r.Register("TensorArraySplitV3", SplitGrad);
  // As in TensorFlow: making, sizing and closing an array, its gradient
  // array, and the stacks (which loop gradients use, not differentiate).
  for (const char* op :
       {"TensorArrayV3", "TensorArrayGradV3", "TensorArrayGradWithShape", "TensorArraySizeV3",
        "TensorArrayCloseV3", "StackV2", "StackPushV2", "StackPopV2", "StackCloseV2"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace rill
