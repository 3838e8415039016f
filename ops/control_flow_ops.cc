// TensorFlow's control-flow primitives: Switch and Merge (conds), Enter,
// Exit, NextIteration and LoopCond (loops), ControlTrigger and Abort, each
// with its Ref twin. Their kernels only move values; what makes them
// control flow (dead values, frames, iterations) is the executor's.
#include <vector>

#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

absl::Status SwitchShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(1), 0, 1).status());
  c.set_output(0, c.input(0));
  c.set_output(1, c.input(0));
  return absl::OkStatus();
}

// The inputs' common shape: dimensions they disagree on are unknown, and so
// is the rank when theirs differ (a loop's value may change shape from one
// iteration to the next).
absl::Status MergeShape(InferenceContext& c) {
  PartialTensorShape out = c.input(0);
  for (int i = 1; i < c.num_inputs() && !out.unknown_rank(); ++i) {
    const PartialTensorShape& in = c.input(i);
    if (in.unknown_rank() || in.dims() != out.dims()) {
      out = PartialTensorShape();
      break;
    }
    std::vector<int64_t> dims;
    for (int d = 0; d < out.dims(); ++d) {
      dims.push_back(out.dim_size(d) == in.dim_size(d) ? out.dim_size(d) : -1);
    }
    out = PartialTensorShape(absl::MakeConstSpan(dims));
  }
  c.set_output(0, out);
  c.set_output(1, TensorShape());
  return absl::OkStatus();
}

absl::Status LoopCondShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape scalar, c.WithRank(c.input(0), 0, 0));
  c.set_output(0, scalar);
  return absl::OkStatus();
}

void AddForwardOp(OpRegistry& r, const char* name, bool ref) {
  r.Add(OpDefBuilder(name)
            .Input(ref ? "data: Ref(T)" : "data: T")
            .Output(ref ? "output: Ref(T)" : "output: T")
            .Attr("T: type")
            .SetShapeFn(shape_fn::Unchanged));
}

void AddEnter(OpRegistry& r, const char* name, bool ref) {
  r.Add(OpDefBuilder(name)
            .Input(ref ? "data: Ref(T)" : "data: T")
            .Output(ref ? "output: Ref(T)" : "output: T")
            .Attr("T: type")
            .Attr("frame_name: string")
            .Attr("is_constant: bool = false")
            .Attr("parallel_iterations: int = 10")
            .SetShapeFn(shape_fn::Unchanged));
}

}  // namespace

void RegisterControlFlowOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Switch").Input("data: T").Input("pred: bool").Output("output_false: T")
            .Output("output_true: T").Attr("T: type").SetShapeFn(SwitchShape));
  r.Add(OpDefBuilder("RefSwitch").Input("data: Ref(T)").Input("pred: bool")
            .Output("output_false: Ref(T)").Output("output_true: Ref(T)").Attr("T: type")
            .SetAllowsUninitializedInput().SetShapeFn(SwitchShape));
  r.Add(OpDefBuilder("Merge").Input("inputs: N * T").Output("output: T")
            .Output("value_index: int32").Attr("T: type").Attr("N: int >= 1")
            .SetShapeFn(MergeShape));
  r.Add(OpDefBuilder("RefMerge").Input("inputs: Ref(N * T)").Output("output: Ref(T)")
            .Output("value_index: int32").Attr("T: type").Attr("N: int >= 1")
            .SetAllowsUninitializedInput().SetShapeFn(MergeShape));
  AddEnter(r, "Enter", false);
  AddEnter(r, "RefEnter", true);
  AddForwardOp(r, "Exit", false);
  AddForwardOp(r, "RefExit", true);
  AddForwardOp(r, "NextIteration", false);
  AddForwardOp(r, "RefNextIteration", true);
  r.Add(OpDefBuilder("LoopCond").Input("input: bool").Output("output: bool")
            .SetShapeFn(LoopCondShape));
  r.Add(OpDefBuilder("ControlTrigger").SetShapeFn(shape_fn::NoOutputs));
  r.Add(OpDefBuilder("Abort").Attr("error_msg: string = ''")
            .Attr("exit_without_error: bool = false").SetShapeFn(shape_fn::NoOutputs));
}

}  // namespace rill
