// Ops that gather work across replicas: TensorFlow's conditional
// accumulators (sync replicas), with names, signatures and attrs as in
// TensorFlow so that its graphs replay, and rill's WorkerClocks, which bound
// how far workers may run ahead of the slowest (bounded staleness).
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

constexpr char kReductionType[] = "reduction_type: {'MEAN', 'SUM'} = 'MEAN'";

// TensorFlow's reference handle is the string vector [container, name].
absl::Status RefHandleShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape({2}));
  return absl::OkStatus();
}

// Resource handles are scalars in rill. (TensorFlow's shape function gives
// ResourceConditionalAccumulator's handle the reference handle's [2]; no
// consumer depends on it.)
absl::Status ResourceHandleShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape(TensorShape()));
  return absl::OkStatus();
}

// Checks that the handle (for resource handles) and input 1 are scalars.
absl::Status ScalarSecondInput(InferenceContext& c) {
  if (c.input_type(0) == DT_RESOURCE) RETURN_IF_ERROR(c.WithRank(c.input(0), 0, 0).status());
  return c.WithRank(c.input(1), 0, 1).status();
}

// The average has the accumulator's shape, which the handle does not carry.
absl::Status TakeGradientShape(InferenceContext& c) {
  RETURN_IF_ERROR(ScalarSecondInput(c));
  c.set_output(0, PartialTensorShape());
  return absl::OkStatus();
}

absl::Status NumAccumulatedShape(InferenceContext& c) {
  if (c.input_type(0) == DT_RESOURCE) RETURN_IF_ERROR(c.WithRank(c.input(0), 0, 0).status());
  c.set_output(0, PartialTensorShape(TensorShape()));
  return absl::OkStatus();
}

absl::Status WorkerClocksTickShape(InferenceContext& c) {
  RETURN_IF_ERROR(ScalarSecondInput(c));
  return shape_fn::Scalar(c);
}

// One entry per worker; the count lives with the resource.
absl::Status WorkerClocksStateShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(0), 0, 0).status());
  c.set_output(0, PartialTensorShape({-1}));
  c.set_output(1, PartialTensorShape({-1}));
  return absl::OkStatus();
}

// The accumulator ops come in two flavours that differ only in the handle:
// ConditionalAccumulator, AccumulatorApplyGradient, AccumulatorTakeGradient,
// AccumulatorSetGlobalStep and AccumulatorNumAccumulated take TensorFlow's
// reference handle; the same names prefixed "Resource" take a resource.
void RegisterAccumulatorFamily(OpRegistry& r, const std::string& prefix, const char* handle) {
  r.Add(OpDefBuilder(prefix + "ConditionalAccumulator").Output(handle)
            .Attr("dtype: numbertype").Attr("shape: shape").Attr("container: string = ''")
            .Attr("shared_name: string = ''").Attr(kReductionType)
            .SetIsStateful()
            .SetShapeFn(prefix.empty() ? RefHandleShape : ResourceHandleShape));
  r.Add(OpDefBuilder(prefix + "AccumulatorApplyGradient").Input(handle)
            .Input("local_step: int64").Input("gradient: dtype").Attr("dtype: numbertype")
            .SetIsStateful().SetShapeFn(ScalarSecondInput));
  r.Add(OpDefBuilder(prefix + "AccumulatorTakeGradient").Input(handle)
            .Input("num_required: int32").Output("average: dtype").Attr("dtype: numbertype")
            .SetIsStateful().SetShapeFn(TakeGradientShape));
  r.Add(OpDefBuilder(prefix + "AccumulatorSetGlobalStep").Input(handle)
            .Input("new_global_step: int64").SetIsStateful().SetShapeFn(ScalarSecondInput));
  r.Add(OpDefBuilder(prefix + "AccumulatorNumAccumulated").Input(handle)
            .Output("num_accumulated: int32").SetIsStateful().SetShapeFn(NumAccumulatedShape));
}

}  // namespace

void RegisterAccumulatorOps(OpRegistry& r) {
  RegisterAccumulatorFamily(r, "", "handle: Ref(string)");
  RegisterAccumulatorFamily(r, "Resource", "handle: resource");

  r.Add(OpDefBuilder("WorkerClocks").Output("handle: resource").Attr("num_workers: int >= 1")
            .Attr("container: string = ''").Attr("shared_name: string = ''").SetIsStateful()
            .SetShapeFn(ResourceHandleShape));
  // staleness -1: no bound; timeout_ms -1: wait for ever.
  r.Add(OpDefBuilder("WorkerClocksTick").Input("handle: resource").Input("worker: int32")
            .Output("clock: int64").Output("slowest: int64").Attr("staleness: int >= -1 = -1")
            .Attr("timeout_ms: int >= -1 = -1").SetIsStateful()
            .SetShapeFn(WorkerClocksTickShape));
  // A worker that finished training: nobody waits for it any more.
  r.Add(OpDefBuilder("WorkerClocksRetire").Input("handle: resource").Input("worker: int32")
            .SetIsStateful().SetShapeFn(ScalarSecondInput));
  r.Add(OpDefBuilder("WorkerClocksState").Input("handle: resource").Output("clocks: int64")
            .Output("seconds_since_heard: double").SetIsStateful()
            .SetShapeFn(WorkerClocksStateShape));
}

}  // namespace rill
