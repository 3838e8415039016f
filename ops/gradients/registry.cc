#include <string>
#include <vector>

#include "ops/gradients.h"

namespace rill {
namespace {

// A resource variable's read passes its gradient to the handle, as in
// TensorFlow, so a handle may be one of the xs.
absl::Status ReadVariableGrad(const Scope&, const Operation&, const std::vector<Output>& dy,
                              std::vector<Output>* dx) {
  *dx = dy;
  return absl::OkStatus();
}

void RegisterStateAndRandomGradients(GradientRegistry& r) {
  r.Register("ReadVariableOp", ReadVariableGrad);
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
    RegisterBatchNormGradients(*r);
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
