// Variable ops: reference variables (Variable, VariableV2) with the ops
// that update them in place, and resource variables (VarHandleOp) with their
// read, assign and is-initialized ops. Attrs follow TensorFlow's.
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

// With validate_shape the value must fit the variable; without it the
// assignment may change the variable's shape, so the value's shape wins.
absl::Status AssignShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(bool validate_shape, c.GetBoolAttr("validate_shape"));
  if (!validate_shape) {
    c.set_output(0, c.input(1));
    return absl::OkStatus();
  }
  auto merged = c.Merge(c.input(0), c.input(1));
  if (!merged.ok()) {
    return ShapeError("Assign: value of shape %s does not match the variable's shape %s",
                      c.input(1).DebugString(), c.input(0).DebugString());
  }
  c.set_output(0, *merged);
  return absl::OkStatus();
}

absl::Status AssignUpdateShape(InferenceContext& c) {
  auto merged = c.Merge(c.input(0), c.input(1));
  if (!merged.ok()) {
    return ShapeError("%s: value of shape %s does not match the variable's shape %s",
                      c.node().op(), c.input(1).DebugString(), c.input(0).DebugString());
  }
  c.set_output(0, *merged);
  return absl::OkStatus();
}

// The variable's value shape lives with the resource, not in the graph.
absl::Status ReadVariableShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(0), 0, 0).status());
  c.set_output(0, PartialTensorShape());
  return absl::OkStatus();
}

absl::Status AssignVariableShape(InferenceContext& c) {
  return c.WithRank(c.input(0), 0, 0).status();
}

}  // namespace

void RegisterStateOps(OpRegistry& r) {
  r.Add(OpDefBuilder("VariableV2").Output("ref: Ref(dtype)").Attr("shape: shape")
            .Attr("dtype: type").Attr("container: string = ''")
            .Attr("shared_name: string = ''").SetIsStateful()
            .SetShapeFn(shape_fn::FromShapeAttr));
  r.Add(OpDefBuilder("Variable").Output("ref: Ref(dtype)").Attr("shape: shape")
            .Attr("dtype: type").Attr("container: string = ''")
            .Attr("shared_name: string = ''").SetIsStateful()
            .SetShapeFn(shape_fn::FromShapeAttr));
  r.Add(OpDefBuilder("VarHandleOp").Output("resource: resource")
            .Attr("container: string = ''").Attr("shared_name: string = ''")
            .Attr("debug_name: string = ''").Attr("dtype: type").Attr("shape: shape")
            .Attr("allowed_devices: list(string) = []").SetIsStateful()
            .SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("ReadVariableOp").Input("resource: resource").Output("value: dtype")
            .Attr("dtype: type").SetIsStateful().SetShapeFn(ReadVariableShape));
  r.Add(OpDefBuilder("AssignVariableOp").Input("resource: resource").Input("value: dtype")
            .Attr("dtype: type").Attr("validate_shape: bool = false").SetIsStateful()
            .SetShapeFn(AssignVariableShape));
  for (const char* op : {"AssignAddVariableOp", "AssignSubVariableOp"}) {
    r.Add(OpDefBuilder(op).Input("resource: resource").Input("value: dtype")
              .Attr("dtype: type").SetIsStateful().SetShapeFn(AssignVariableShape));
  }
  r.Add(OpDefBuilder("VarIsInitializedOp").Input("resource: resource")
            .Output("is_initialized: bool").SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("ResourceGather").Input("resource: resource").Input("indices: Tindices")
            .Output("output: dtype").Attr("batch_dims: int = 0")
            .Attr("validate_indices: bool = true").Attr("dtype: type")
            .Attr("Tindices: {int32, int64}").SetIsStateful().SetShapeFn(shape_fn::Unknown));
  r.Add(OpDefBuilder("DisableCopyOnRead").Input("resource: resource").SetIsStateful()
            .SetShapeFn(shape_fn::NoOutputs));
  r.Add(OpDefBuilder("Assign").Input("ref: Ref(T)").Input("value: T").Output("output_ref: Ref(T)")
            .Attr("T: type").Attr("validate_shape: bool = true").Attr("use_locking: bool = true")
            .SetAllowsUninitializedInput().SetShapeFn(AssignShape));
  r.Add(OpDefBuilder("AssignAdd").Input("ref: Ref(T)").Input("value: T")
            .Output("output_ref: Ref(T)").Attr("T: numbertype")
            .Attr("use_locking: bool = false").SetShapeFn(AssignUpdateShape));
  r.Add(OpDefBuilder("AssignSub").Input("ref: Ref(T)").Input("value: T")
            .Output("output_ref: Ref(T)").Attr("T: numbertype")
            .Attr("use_locking: bool = false").SetShapeFn(AssignUpdateShape));
  r.Add(OpDefBuilder("IsVariableInitialized").Input("ref: Ref(dtype)")
            .Output("is_initialized: bool").Attr("dtype: type").SetAllowsUninitializedInput()
            .SetShapeFn(shape_fn::Scalar));
}

}  // namespace rill
