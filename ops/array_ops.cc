// Array ops that make or pass tensors along: constants, placeholders,
// identities and zeros/ones like another tensor. Signatures and attrs
// follow TensorFlow's so that its GraphDefs validate unchanged.
#include <string>

#include "absl/status/status.h"
#include "graph/node_def_util.h"
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "graph/tensor_shape.h"
#include "ops/registry.h"

namespace rill {
namespace {

absl::Status ConstShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const TensorProto* value, GetTensorAttr(c.node(), "value"));
  ASSIGN_OR_RETURN(DataType dtype, c.GetTypeAttr("dtype"));
  if (value->dtype() != dtype) {
    return ShapeError("Const value holds %s but dtype is %s", DataTypeString(value->dtype()),
                      DataTypeString(dtype));
  }
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::FromProto(value->tensor_shape()));
  c.set_output(0, shape);
  return absl::OkStatus();
}

// The output is the `shape` attr, which may be less precise than the default
// input; the input only has to be compatible with it.
absl::Status PlaceholderWithDefaultShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape shape, c.GetShapeAttr("shape"));
  RETURN_IF_ERROR(c.Merge(c.input(0), shape).status());
  c.set_output(0, shape);
  return absl::OkStatus();
}

absl::Status IdentityNShape(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, c.input(i));
  return absl::OkStatus();
}

}  // namespace

void RegisterArrayOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Const").Output("output: dtype").Attr("value: tensor").Attr("dtype: type")
            .SetShapeFn(ConstShape));
  r.Add(OpDefBuilder("Placeholder").Output("output: dtype").Attr("dtype: type")
            .Attr("shape: shape = { unknown_rank: true }").SetShapeFn(shape_fn::FromShapeAttr));
  r.Add(OpDefBuilder("PlaceholderWithDefault").Input("input: dtype").Output("output: dtype")
            .Attr("dtype: type").Attr("shape: shape").SetShapeFn(PlaceholderWithDefaultShape));
  r.Add(OpDefBuilder("Identity").Input("input: T").Output("output: T").Attr("T: type")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("IdentityN").Input("input: T").Output("output: T")
            .Attr("T: list(type)").SetShapeFn(IdentityNShape));
  r.Add(OpDefBuilder("NoOp").SetShapeFn(shape_fn::NoOutputs));
  r.Add(OpDefBuilder("StopGradient").Input("input: T").Output("output: T").Attr("T: type")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("ZerosLike").Input("x: T").Output("y: T").Attr("T: type")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("OnesLike").Input("x: T").Output("y: T")
            .Attr("T: {bfloat16, half, float, double, int8, uint8, int16, uint16, int32, uint32, "
                  "int64, uint64, complex64, complex128, bool}")
            .SetShapeFn(shape_fn::Unchanged));
}

}  // namespace rill
