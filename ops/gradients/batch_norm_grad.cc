// Gradients of FusedBatchNorm, V2 and V3, after TensorFlow's nn_grad.py:
// each builds its matching FusedBatchNormGrad op.
#include <string>
#include <vector>

#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::OrZeros;
using grad::Out;
using Outputs = std::vector<Output>;

// The attrs the gradient op takes from the forward op.
template <typename GradOp>
absl::StatusOr<typename GradOp::Attrs> GradAttrs(const Operation& op) {
  const NodeDef& def = grad::Def(op);
  ASSIGN_OR_RETURN(const float epsilon, GetFloatAttr(def, "epsilon"));
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(def, "data_format"));
  ASSIGN_OR_RETURN(const bool is_training, GetBoolAttr(def, "is_training"));
  return typename GradOp::Attrs().Epsilon(epsilon).DataFormat(format).IsTraining(is_training);
}

// In training the statistics came from x, and the reserve spaces hold what
// the forward kernel saved of them; in inference they are the population
// mean and variance inputs. Only y's gradient flows back, as in
// TensorFlow: the gradients into batch_mean and batch_variance (running
// averages) are ignored. The CPU kernels read NCHW directly, so unlike
// TensorFlow's (written for cuDNN) no transposes are built.
template <typename GradOp, int kVersion>
absl::Status FusedBatchNormGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                Outputs* dx) {
  ASSIGN_OR_RETURN(const typename GradOp::Attrs attrs, GradAttrs<GradOp>(op));
  ASSIGN_OR_RETURN(const bool is_training, GetBoolAttr(grad::Def(op), "is_training"));
  const Output y_backprop = OrZeros(s, dy[0], Out(op, 0));
  const Output x = In(op, 0);
  const Output scale = In(op, 1);
  const Output mean = is_training ? Out(op, 3) : In(op, 3);
  const Output variance = is_training ? Out(op, 4) : In(op, 4);
  Output dx_out, dscale, doffset;
  if constexpr (kVersion == 3) {
    const GradOp g(s, y_backprop, x, scale, mean, variance, Out(op, 5), attrs);
    dx_out = g.x_backprop;
    dscale = g.scale_backprop;
    doffset = g.offset_backprop;
  } else {
    const GradOp g(s, y_backprop, x, scale, mean, variance, attrs);
    dx_out = g.x_backprop;
    dscale = g.scale_backprop;
    doffset = g.offset_backprop;
  }
  *dx = {dx_out, dscale, doffset, Output(), Output()};
  return absl::OkStatus();
}

}  // namespace

void RegisterBatchNormGradients(GradientRegistry& r) {
  r.Register("FusedBatchNorm", FusedBatchNormGrad<ops::FusedBatchNormGrad, 1>);
  r.Register("FusedBatchNormV2", FusedBatchNormGrad<ops::FusedBatchNormGradV2, 2>);
  r.Register("FusedBatchNormV3", FusedBatchNormGrad<ops::FusedBatchNormGradV3, 3>);
  // Second derivatives of batch normalization are not provided.
  for (const char* op : {"FusedBatchNormGrad", "FusedBatchNormGradV2", "FusedBatchNormGradV3"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace rill
