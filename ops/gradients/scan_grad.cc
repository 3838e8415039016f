// Gradients of the scans, after TensorFlow's math_grad.py: a cumulative
// sum's gradient is the cumulative sum of its gradient the other way; a
// cumulative product's is that of the products times the gradient,
// divided by x with DivNoNan (0 where x is 0, as TensorFlow's).
#include <vector>

#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::Out;
using Outputs = std::vector<Output>;

// dy scanned back: the same exclusivity, the other direction.
absl::StatusOr<Output> ReverseCumsum(const Scope& s, const Operation& op, const Output& dy) {
  ASSIGN_OR_RETURN(const bool exclusive, GetBoolAttr(grad::Def(op), "exclusive"));
  ASSIGN_OR_RETURN(const bool reverse, GetBoolAttr(grad::Def(op), "reverse"));
  return Output(ops::Cumsum(s, dy, In(op, 1), ops::Cumsum::Exclusive(exclusive).Reverse(!reverse)));
}

absl::Status CumsumGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const Output g, ReverseCumsum(s, op, dy[0]));
  *dx = {g, Output()};
  return absl::OkStatus();
}

absl::Status CumprodGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const Output g, ReverseCumsum(s, op, ops::Mul(s, Out(op, 0), dy[0])));
  *dx = {ops::DivNoNan(s, g, In(op, 0)), Output()};
  return absl::OkStatus();
}

}  // namespace

void RegisterScanGradients(GradientRegistry& r) {
  r.Register("Cumsum", CumsumGrad);
  r.Register("Cumprod", CumprodGrad);
}

}  // namespace rill
