// Function calls: PartitionedCall and StatefulPartitionedCall, as
// TensorFlow 2 writes them. They have no kernels: every call is replaced by
// its function's body when a graph is imported (graph/function_inline.h).
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

}  // namespace

void RegisterFunctionalOps(OpRegistry& r) {
  r.Add(CallOp("PartitionedCall"));
  r.Add(CallOp("StatefulPartitionedCall").SetIsStateful());
}

}  // namespace rill
