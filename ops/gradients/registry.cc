#include <string>
#include <vector>

#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

// A resource variable's read passes its gradient to the handle, as in
// TensorFlow, so a handle may be one of the xs.
absl::Status ReadVariableGrad(const Scope&, const Operation&, const std::vector<Output>& dy,
                              std::vector<Output>* dx) {
  *dx = dy;
  return absl::OkStatus();
}

// ResourceGather: the gathered rows' gradients scattered into zeros shaped
// like the variable, summed where an index repeats. TensorFlow sends them
// as IndexedSlices; gradients here are dense tensors.
absl::Status ResourceGatherGrad(const Scope& s, const Operation& op, const std::vector<Output>& dy,
                                std::vector<Output>* dx) {
  ASSIGN_OR_RETURN(const DataType dtype, GetTypeAttr(grad::Def(op), "dtype"));
  const Output shape = ops::Shape(s, ops::ReadVariableOp(s, grad::In(op, 0), dtype));
  const Output indices = ops::ExpandDims(s, grad::ToInt32(s, grad::In(op, 1)), -1);
  *dx = {ops::ScatterNd(s, indices, dy[0], shape), Output()};
  return absl::OkStatus();
}

void RegisterStateAndRandomGradients(GradientRegistry& r) {
  r.Register("ReadVariableOp", ReadVariableGrad);
  r.Register("ResourceGather", ResourceGatherGrad);
  for (const char* op :
       {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "IsVariableInitialized",
        "VarIsInitializedOp", "DisableCopyOnRead", "Assert"}) {
    r.RegisterNoGradient(op);
  }
}

// Accumulators and worker clocks carry state between steps and replicas;
// no path from an x to a y crosses them. TensorFlow declares its
// accumulator ops not differentiable too.
void RegisterAccumulatorGradients(GradientRegistry& r) {
  for (const std::string prefix : {"", "Resource"}) {
    for (const char* op :
         {"ConditionalAccumulator", "AccumulatorApplyGradient", "AccumulatorTakeGradient",
          "AccumulatorSetGlobalStep", "AccumulatorNumAccumulated"}) {
      r.RegisterNoGradient(prefix + op);
    }
  }
  for (const char* op :
       {"WorkerClocks", "WorkerClocksTick", "WorkerClocksRetire", "WorkerClocksState"}) {
    r.RegisterNoGradient(op);
  }
}

// Summaries only report values, as in TensorFlow, which declares them not
// differentiable.
void RegisterSummaryGradients(GradientRegistry& r) {
  for (const char* op : {"ScalarSummary", "HistogramSummary", "MergeSummary"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace

const GradientRegistry& StandardGradients() {
  static const GradientRegistry* const registry = [] {
    auto* r = new GradientRegistry;
    RegisterMathGradients(*r);
    RegisterNnGradients(*r);
    RegisterArrayGradients(*r);
    RegisterDataFlowGradients(*r);
    RegisterStateAndRandomGradients(*r);
    RegisterAccumulatorGradients(*r);
    RegisterSummaryGradients(*r);
    RegisterQueueGradients(*r);
    RegisterControlFlowGradients(*r);
    RegisterScanGradients(*r);
    RegisterImageGradients(*r);
    RegisterBatchNormGradients(*r);
    RegisterListGradients(*r);
    return r;
  }();
  return *registry;
}

absl::StatusOr<std::vector<Output>> AddGradients(const Scope& scope, const std::vector<Output>& ys,
                                                 const std::vector<Output>& xs,
                                                 const std::vector<Output>& grad_ys) {
  return AddGradients(scope, ys, xs, grad_ys, StandardGradients());
}

}  // namespace rill
