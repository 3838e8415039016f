// TensorArray (V3) and stack (V2) ops: the per-step data structures that
// loops write and read (tf.nn.dynamic_rnn, while-loop gradients). Names,
// signatures and attrs follow TensorFlow's.
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

// Input `i` is a handle. Ours are resource scalars; TensorFlow's shape
// functions declare them [2] (the string pair the V2 ops used), so a graph
// that carries that shape is accepted too.
absl::Status CheckHandle(InferenceContext& c, int i) {
  const PartialTensorShape& shape = c.input(i);
  if (shape.unknown_rank() || shape.dims() == 0) return absl::OkStatus();
  if (shape.dims() == 1 && (shape.dim_size(0) == 2 || shape.dim_size(0) < 0)) {
    return absl::OkStatus();
  }
  return ShapeError("%s: input %d must be a handle (a scalar), got shape %s", c.node().op(), i,
                    shape.DebugString());
}

absl::Status CheckScalar(InferenceContext& c, int i) {
  return c.WithRank(c.input(i), 0, i).status();
}

absl::Status CheckVector(InferenceContext& c, int i) {
  return c.WithRank(c.input(i), 1, i).status();
}

// size -> handle, flow.
absl::Status TensorArrayShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckScalar(c, 0));
  return shape_fn::Scalar(c);
}

// handle, flow_in [, shape_to_prepend] -> grad_handle, flow_out.
absl::Status TensorArrayGradShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  if (c.num_inputs() > 2) RETURN_IF_ERROR(CheckVector(c, 2));
  return shape_fn::Scalar(c);
}

// handle, index, value, flow_in -> flow_out.
absl::Status TensorArrayWriteShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  RETURN_IF_ERROR(CheckScalar(c, 1));
  RETURN_IF_ERROR(CheckScalar(c, 3));
  return shape_fn::Scalar(c);
}

// handle, index, flow_in -> value. The element shape lives with the
// array, not in the graph.
absl::Status TensorArrayReadShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  RETURN_IF_ERROR(CheckScalar(c, 1));
  RETURN_IF_ERROR(CheckScalar(c, 2));
  return shape_fn::Unknown(c);
}

// handle, indices, flow_in -> value: [len(indices)] + element_shape.
absl::Status TensorArrayGatherShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  ASSIGN_OR_RETURN(PartialTensorShape indices, c.WithRank(c.input(1), 1, 1));
  RETURN_IF_ERROR(CheckScalar(c, 2));
  ASSIGN_OR_RETURN(PartialTensorShape element_shape, c.GetShapeAttr("element_shape"));
  if (element_shape.unknown_rank()) {
    c.set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  PartialTensorShape out({indices.dim_size(0)});
  for (int64_t d : element_shape.dim_sizes()) out.AddDim(d);
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

// handle, indices, value, flow_in -> flow_out; one row of value per index.
absl::Status TensorArrayScatterShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  ASSIGN_OR_RETURN(PartialTensorShape indices, c.WithRank(c.input(1), 1, 1));
  ASSIGN_OR_RETURN(PartialTensorShape value, c.WithRankAtLeast(c.input(2), 1, 2));
  RETURN_IF_ERROR(CheckScalar(c, 3));
  if (!value.unknown_rank() && !c.MergeDim(indices.dim_size(0), value.dim_size(0)).ok()) {
    return ShapeError("%s: %d indices but value has %d rows (shape %s)", c.node().op(),
                      indices.dim_size(0), value.dim_size(0), value.DebugString());
  }
  return shape_fn::Scalar(c);
}

// handle, flow_in -> value (unknown), lengths: [?].
absl::Status TensorArrayConcatShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  RETURN_IF_ERROR(CheckScalar(c, 1));
  c.set_output(0, PartialTensorShape());
  c.set_output(1, PartialTensorShape({-1}));
  return absl::OkStatus();
}

// handle, value, lengths, flow_in -> flow_out.
absl::Status TensorArraySplitShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  RETURN_IF_ERROR(CheckVector(c, 2));
  RETURN_IF_ERROR(CheckScalar(c, 3));
  return shape_fn::Scalar(c);
}

// handle [, flow_in] -> a scalar, or nothing (close).
absl::Status HandleToScalars(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  return shape_fn::Scalar(c);
}

absl::Status StackPushShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  c.set_output(0, c.input(1));
  return absl::OkStatus();
}

absl::Status StackPopShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckHandle(c, 0));
  return shape_fn::Unknown(c);
}

}  // namespace

// Every op here touches state that lives outside the graph: all are
// stateful, so that no pass merges two reads or prunes a write by value.
void RegisterDataFlowOps(OpRegistry& r) {
  r.Add(OpDefBuilder("TensorArrayV3").Input("size: int32").Attr("dtype: type")
            .Attr("element_shape: shape = { unknown_rank: true }")
            .Attr("dynamic_size: bool = false").Attr("clear_after_read: bool = true")
            .Attr("identical_element_shapes: bool = false")
            .Attr("tensor_array_name: string = ''").Output("handle: resource")
            .Output("flow: float").SetIsStateful().SetShapeFn(TensorArrayShape));
  r.Add(OpDefBuilder("TensorArrayGradV3").Input("handle: resource").Input("flow_in: float")
            .Output("grad_handle: resource").Output("flow_out: float").Attr("source: string")
            .SetIsStateful().SetShapeFn(TensorArrayGradShape));
  r.Add(OpDefBuilder("TensorArrayGradWithShape").Input("handle: resource")
            .Input("flow_in: float").Input("shape_to_prepend: int32")
            .Output("grad_handle: resource").Output("flow_out: float").Attr("source: string")
            .SetIsStateful().SetShapeFn(TensorArrayGradShape));
  r.Add(OpDefBuilder("TensorArrayWriteV3").Input("handle: resource").Input("index: int32")
            .Input("value: T").Input("flow_in: float").Output("flow_out: float")
            .Attr("T: type").SetIsStateful().SetShapeFn(TensorArrayWriteShape));
  r.Add(OpDefBuilder("TensorArrayReadV3").Input("handle: resource").Input("index: int32")
            .Input("flow_in: float").Output("value: dtype").Attr("dtype: type")
            .SetIsStateful().SetShapeFn(TensorArrayReadShape));
  r.Add(OpDefBuilder("TensorArrayGatherV3").Input("handle: resource").Input("indices: int32")
            .Input("flow_in: float").Output("value: dtype").Attr("dtype: type")
            .Attr("element_shape: shape = { unknown_rank: true }").SetIsStateful()
            .SetShapeFn(TensorArrayGatherShape));
  r.Add(OpDefBuilder("TensorArrayScatterV3").Input("handle: resource").Input("indices: int32")
            .Input("value: T").Input("flow_in: float").Output("flow_out: float")
            .Attr("T: type").SetIsStateful().SetShapeFn(TensorArrayScatterShape));
  r.Add(OpDefBuilder("TensorArrayConcatV3").Input("handle: resource").Input("flow_in: float")
            .Output("value: dtype").Output("lengths: int64").Attr("dtype: type")
            .Attr("element_shape_except0: shape = { unknown_rank: true }").SetIsStateful()
            .SetShapeFn(TensorArrayConcatShape));
  r.Add(OpDefBuilder("TensorArraySplitV3").Input("handle: resource").Input("value: T")
            .Input("lengths: int64").Input("flow_in: float").Output("flow_out: float")
            .Attr("T: type").SetIsStateful().SetShapeFn(TensorArraySplitShape));
  r.Add(OpDefBuilder("TensorArraySizeV3").Input("handle: resource").Input("flow_in: float")
            .Output("size: int32").SetIsStateful().SetShapeFn(HandleToScalars));
  r.Add(OpDefBuilder("TensorArrayCloseV3").Input("handle: resource").SetIsStateful()
            .SetShapeFn(HandleToScalars));

  r.Add(OpDefBuilder("StackV2").Input("max_size: int32").Output("handle: resource")
            .Attr("elem_type: type").Attr("stack_name: string = ''").SetIsStateful()
            .SetShapeFn(TensorArrayShape));
  r.Add(OpDefBuilder("StackPushV2").Input("handle: resource").Input("elem: T")
            .Output("output: T").Attr("T: type").Attr("swap_memory: bool = false")
            .SetIsStateful().SetShapeFn(StackPushShape));
  r.Add(OpDefBuilder("StackPopV2").Input("handle: resource").Output("elem: elem_type")
            .Attr("elem_type: type").SetIsStateful().SetShapeFn(StackPopShape));
  r.Add(OpDefBuilder("StackCloseV2").Input("handle: resource").SetIsStateful()
            .SetShapeFn(HandleToScalars));
}

}  // namespace rill
