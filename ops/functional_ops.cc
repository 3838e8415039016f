// Function calls (PartitionedCall, StatefulPartitionedCall) and functional
// control flow (If, Case, While), as TensorFlow 2 writes them. None has a
// kernel that runs it: a graph's import inlines every call and lowers the
// rest (graph/function_inline.h).
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "ops/registry.h"

namespace rill {
namespace {

// A call's results take their shapes from the body once it is inlined.
absl::Status UnknownOutputShapes(InferenceContext& c) {
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, PartialTensorShape());
  return absl::OkStatus();
}

// TensorFlow's signature for both; only statefulness differs.
OpDefBuilder CallOp(const char* name) {
  OpDefBuilder builder(name);
  builder.Input("args: Tin").Output("output: Tout").Attr("Tin: list(type) >= 0")
      .Attr("Tout: list(type) >= 0").Attr("f: func").Attr("config: string = ''")
      .Attr("config_proto: string = ''").Attr("executor_type: string = ''")
      .SetShapeFn(UnknownOutputShapes);
  return builder;
}

OpDefBuilder IfOp(const char* name) {
  OpDefBuilder builder(name);
  builder.Input("cond: Tcond").Input("input: Tin").Output("output: Tout").Attr("Tcond: type")
      .Attr("Tin: list(type) >= 0").Attr("Tout: list(type) >= 0").Attr("then_branch: func")
      .Attr("else_branch: func").Attr("output_shapes: list(shape) = []")
      .SetShapeFn(UnknownOutputShapes);
  return builder;
}

OpDefBuilder CaseOp(const char* name) {
  OpDefBuilder builder(name);
  builder.Input("branch_index: int32").Input("input: Tin").Output("output: Tout")
      .Attr("Tin: list(type) >= 0").Attr("Tout: list(type) >= 0")
      .Attr("branches: list(func) >= 1").Attr("output_shapes: list(shape) = []")
      .SetShapeFn(UnknownOutputShapes);
  return builder;
}

OpDefBuilder WhileOp(const char* name) {
  OpDefBuilder builder(name);
  builder.Input("input: T").Output("output: T").Attr("T: list(type) >= 0").Attr("cond: func")
      .Attr("body: func").Attr("output_shapes: list(shape) = []")
      .Attr("parallel_iterations: int = 10").SetShapeFn(UnknownOutputShapes);
  return builder;
}

}  // namespace

// Functional control flow, lowered to the primitives on import
// (graph/lower_functional_ops.h): registered for their signatures.
void RegisterFunctionalOps(OpRegistry& r) {
  r.Add(CallOp("PartitionedCall"));
  r.Add(CallOp("StatefulPartitionedCall").SetIsStateful());
  r.Add(IfOp("If").SetIsStateful());
  r.Add(IfOp("StatelessIf"));
  r.Add(CaseOp("Case").SetIsStateful());
  r.Add(CaseOp("StatelessCase"));
  r.Add(WhileOp("While").SetIsStateful());
  r.Add(WhileOp("StatelessWhile"));
}

}  // namespace rill
