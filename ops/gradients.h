// The gradient functions of the standard ops, and AddGradients over them:
// what training code calls to differentiate a loss.
#ifndef RILL_OPS_GRADIENTS_H_
#define RILL_OPS_GRADIENTS_H_

#include <vector>

#include "absl/status/statusor.h"
#include "graph/gradients.h"
#include "graph/scope.h"

namespace rill {

void RegisterMathGradients(GradientRegistry& registry);   // gradients/math_grad.cc
void RegisterNnGradients(GradientRegistry& registry);     // gradients/nn_grad.cc
void RegisterArrayGradients(GradientRegistry& registry);  // gradients/array_grad.cc
void RegisterDataFlowGradients(GradientRegistry& registry);  // gradients/data_flow_grad.cc
void RegisterQueueGradients(GradientRegistry& registry);  // gradients/queue_grad.cc
void RegisterControlFlowGradients(GradientRegistry& registry);  // gradients/control_flow_grad.cc
void RegisterScanGradients(GradientRegistry& registry);   // gradients/scan_grad.cc
void RegisterImageGradients(GradientRegistry& registry);  // gradients/image_grad.cc
void RegisterBatchNormGradients(GradientRegistry& registry);  // gradients/batch_norm_grad.cc
void RegisterListGradients(GradientRegistry& registry);  // gradients/list_grad.cc

// Every standard op's gradient (or its no-gradient declaration).
const GradientRegistry& StandardGradients();

// AddGradients over StandardGradients().
absl::StatusOr<std::vector<Output>> AddGradients(const Scope& scope,
                                                 const std::vector<Output>& ys,
                                                 const std::vector<Output>& xs,
                                                 const std::vector<Output>& grad_ys = {});

}  // namespace rill

#endif  // RILL_OPS_GRADIENTS_H_
