// TensorList ops: lists of tensors held in DT_VARIANT scalars, which
// TensorFlow 2's functional While loops (every Keras RNN) carry from one
// iteration to the next. Names, args and attrs are TensorFlow's.
#include <cstdint>
#include <utility>

#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/registry.h"

namespace rill {
namespace {

// An element_shape input: a shape vector (-1 for an unknown dimension), or
// a scalar (-1) for an unknown shape.
absl::StatusOr<PartialTensorShape> ElementShapeInput(const InferenceContext& c, int i) {
  const PartialTensorShape& given = c.input(i);
  if (!given.unknown_rank() && given.dims() == 0) return PartialTensorShape();
  const Tensor* value = c.input_tensor(i);
  if (value != nullptr && value->dims() == 0) return PartialTensorShape();
  return c.MakeShapeFromShapeTensor(i);
}

absl::Status CheckScalarInput(InferenceContext& c, int i) {
  return c.WithRank(c.input(i), 0, i).status();
}

// Ops whose only output is a list.
absl::Status ListOutput(InferenceContext& c) {
  c.set_output(0, PartialTensorShape({}));
  return absl::OkStatus();
}

// handle, element_shape -> item; also PopBack's (handle, tensor).
absl::Status ElementOutput(InferenceContext& c, int shape_input, int output) {
  ASSIGN_OR_RETURN(PartialTensorShape element, ElementShapeInput(c, shape_input));
  c.set_output(output, std::move(element));
  return absl::OkStatus();
}

// The element shape with a leading dimension of `rows`.
PartialTensorShape Stacked(int64_t rows, const PartialTensorShape& element) {
  if (element.unknown_rank()) return PartialTensorShape();
  PartialTensorShape out({rows});
  for (int64_t d : element.dim_sizes()) out.AddDim(d);
  return out;
}

absl::Status GetItemShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckScalarInput(c, 1));
  return ElementOutput(c, 2, 0);
}

absl::Status StackShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape element, ElementShapeInput(c, 1));
  ASSIGN_OR_RETURN(int64_t num_elements, c.GetIntAttr("num_elements"));
  c.set_output(0, Stacked(num_elements, element));
  return absl::OkStatus();
}

absl::Status GatherShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape indices, c.WithRank(c.input(1), 1, 1));
  ASSIGN_OR_RETURN(PartialTensorShape element, ElementShapeInput(c, 2));
  c.set_output(0, Stacked(indices.dim_size(0), element));
  return absl::OkStatus();
}

absl::Status PopBackShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape({}));
  return ElementOutput(c, 1, 1);
}

// The elements joined on their first dimension, and each one's length.
absl::Status ConcatShape(InferenceContext& c, const PartialTensorShape& element) {
  if (element.unknown_rank() || element.dims() == 0) {
    c.set_output(0, PartialTensorShape());
  } else {
    PartialTensorShape out({-1});
    for (int d = 1; d < element.dims(); ++d) out.AddDim(element.dim_size(d));
    c.set_output(0, std::move(out));
  }
  c.set_output(1, PartialTensorShape({-1}));
  return absl::OkStatus();
}

absl::Status ConcatV1Shape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape element, c.GetShapeAttr("element_shape"));
  return ConcatShape(c, element);
}

absl::Status ConcatV2Shape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape element, ElementShapeInput(c, 1));
  return ConcatShape(c, element);
}

// A tensor of rank >= 1 split into a list.
absl::Status FromTensorShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRankAtLeast(c.input(0), 1, 0).status());
  return ListOutput(c);
}

absl::Status SplitShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRankAtLeast(c.input(0), 1, 0).status());
  RETURN_IF_ERROR(c.WithRank(c.input(2), 1, 2).status());
  return ListOutput(c);
}

// A list made from a list and, at input 1, a scalar: SetItem's index,
// Resize's size.
absl::Status ListAndScalarShape(InferenceContext& c) {
  RETURN_IF_ERROR(CheckScalarInput(c, 1));
  return ListOutput(c);
}

absl::Status ScatterIntoExistingShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRankAtLeast(c.input(1), 1, 1).status());
  RETURN_IF_ERROR(c.WithRank(c.input(2), 1, 2).status());
  return ListOutput(c);
}

// The element shape's rank is not in the graph: a vector of unknown length.
absl::Status ElementShapeShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape());
  return absl::OkStatus();
}

}  // namespace

// Not stateful: a list is a value, and each op that changes one makes a
// new one, so two equal reads may be merged as for any tensor.
void RegisterListOps(OpRegistry& r) {
  r.Add(OpDefBuilder("EmptyTensorList")
            .Input("element_shape: shape_type")
            .Input("max_num_elements: int32")
            .Output("handle: variant")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(ListOutput));
  r.Add(OpDefBuilder("TensorListReserve")
            .Input("element_shape: shape_type")
            .Input("num_elements: int32")
            .Output("handle: variant")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(ListOutput));
  r.Add(OpDefBuilder("TensorListFromTensor")
            .Input("tensor: element_dtype")
            .Input("element_shape: shape_type")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(FromTensorShape));
  r.Add(OpDefBuilder("TensorListLength")
            .Input("input_handle: variant")
            .Output("length: int32")
            .SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("TensorListElementShape")
            .Input("input_handle: variant")
            .Output("element_shape: shape_type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(ElementShapeShape));
  r.Add(OpDefBuilder("TensorListGetItem")
            .Input("input_handle: variant")
            .Input("index: int32")
            .Input("element_shape: int32")
            .Output("item: element_dtype")
            .Attr("element_dtype: type")
            .SetShapeFn(GetItemShape));
  r.Add(OpDefBuilder("TensorListSetItem")
            .Input("input_handle: variant")
            .Input("index: int32")
            .Input("item: element_dtype")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .Attr("resize_if_index_out_of_bounds: bool = false")
            .SetShapeFn(ListAndScalarShape));
  r.Add(OpDefBuilder("TensorListPushBack")
            .Input("input_handle: variant")
            .Input("tensor: element_dtype")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .SetShapeFn(ListOutput));
  r.Add(OpDefBuilder("TensorListPopBack")
            .Input("input_handle: variant")
            .Input("element_shape: int32")
            .Output("output_handle: variant")
            .Output("tensor: element_dtype")
            .Attr("element_dtype: type")
            .SetShapeFn(PopBackShape));
  r.Add(OpDefBuilder("TensorListStack")
            .Input("input_handle: variant")
            .Input("element_shape: int32")
            .Output("tensor: element_dtype")
            .Attr("element_dtype: type")
            .Attr("num_elements: int = -1")
            .SetShapeFn(StackShape));
  r.Add(OpDefBuilder("TensorListGather")
            .Input("input_handle: variant")
            .Input("indices: int32")
            .Input("element_shape: int32")
            .Output("values: element_dtype")
            .Attr("element_dtype: type")
            .SetShapeFn(GatherShape));
  r.Add(OpDefBuilder("TensorListScatter")
            .Input("tensor: element_dtype")
            .Input("indices: int32")
            .Input("element_shape: shape_type")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(ListOutput));
  r.Add(OpDefBuilder("TensorListScatterV2")
            .Input("tensor: element_dtype")
            .Input("indices: int32")
            .Input("element_shape: shape_type")
            .Input("num_elements: int32")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(ListOutput));
  r.Add(OpDefBuilder("TensorListScatterIntoExistingList")
            .Input("input_handle: variant")
            .Input("tensor: element_dtype")
            .Input("indices: int32")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .SetShapeFn(ScatterIntoExistingShape));
  r.Add(OpDefBuilder("TensorListConcat")
            .Input("input_handle: variant")
            .Output("tensor: element_dtype")
            .Output("lengths: int64")
            .Attr("element_dtype: type")
            .Attr("element_shape: shape = { unknown_rank: true }")
            .SetShapeFn(ConcatV1Shape));
  r.Add(OpDefBuilder("TensorListConcatV2")
            .Input("input_handle: variant")
            .Input("element_shape: shape_type")
            .Input("leading_dims: int64")
            .Output("tensor: element_dtype")
            .Output("lengths: int64")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(ConcatV2Shape));
  r.Add(OpDefBuilder("TensorListSplit")
            .Input("tensor: element_dtype")
            .Input("element_shape: shape_type")
            .Input("lengths: int64")
            .Output("output_handle: variant")
            .Attr("element_dtype: type")
            .Attr("shape_type: {int32, int64}")
            .SetShapeFn(SplitShape));
  r.Add(OpDefBuilder("TensorListResize")
            .Input("input_handle: variant")
            .Input("size: int32")
            .Output("output_handle: variant")
            .SetShapeFn(ListAndScalarShape));
  r.Add(OpDefBuilder("TensorListConcatLists")
            .Input("input_a: variant")
            .Input("input_b: variant")
            .Attr("element_dtype: type")
            .Output("output: variant")
            .SetShapeFn(shape_fn::MergeAllInputs));
}

}  // namespace rill
