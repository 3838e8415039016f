// The operand checks the element-wise kernels of every device share: the
// gradients' y and dy, AddN's inputs and Select's condition.
#ifndef RILL_KERNELS_COMMON_CWISE_CHECKS_H_
#define RILL_KERNELS_COMMON_CWISE_CHECKS_H_

#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/tensor.h"
#include "kernels/framework/op_kernel.h"

namespace rill::cwise_checks {

// SigmoidGrad and its kin: y and dy of one shape.
inline absl::Status CheckGradShapes(std::string_view op, const Tensor& y, const Tensor& dy) {
  if (y.shape() == dy.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s: y %s and dy %s must have one shape", op,
                                                    y.shape().DebugString(),
                                                    dy.shape().DebugString()));
}

// AddN: every input of the first one's shape.
inline absl::Status CheckAddNShapes(const KernelContext& ctx) {
  const Tensor& first = ctx.input(0);
  for (int i = 1; i < ctx.num_inputs(); ++i) {
    if (!(ctx.input(i).shape() == first.shape())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AddN inputs must have one shape: input 0 is %s, input %d is %s",
                          first.shape().DebugString(), i, ctx.input(i).shape().DebugString()));
    }
  }
  return absl::OkStatus();
}

// How Select's condition picks between t and e.
enum class SelectCondition {
  kScalar,       // One choice for every element.
  kElementwise,  // The shape of t and e.
  kRows,         // A vector with one choice per row (dimension 0) of t and e.
};

// Select(cond, t, e): t and e of one shape and a condition of one of the
// forms above; INVALID_ARGUMENT otherwise.
inline absl::StatusOr<SelectCondition> CheckSelectShapes(const Tensor& cond, const Tensor& t,
                                                         const Tensor& e) {
  if (!(t.shape() == e.shape())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Select: t and e must have one shape, got %s and %s",
                        t.shape().DebugString(), e.shape().DebugString()));
  }
  if (cond.dims() == 0) return SelectCondition::kScalar;
  if (cond.shape() == t.shape()) return SelectCondition::kElementwise;
  if (cond.dims() == 1 && t.dims() >= 1 && cond.dim_size(0) == t.dim_size(0)) {
    return SelectCondition::kRows;
  }
  return absl::InvalidArgumentError(absl::StrFormat(
      "Select: condition %s must be a scalar, have the shape of t and e %s, or be a vector "
      "with one element per row",
      cond.shape().DebugString(), t.shape().DebugString()));
}

}  // namespace rill::cwise_checks

#endif  // RILL_KERNELS_COMMON_CWISE_CHECKS_H_
