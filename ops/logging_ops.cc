// Assert: a step fails, with the data it names, when a condition is false.
// Its name, args and attrs are TensorFlow's (tf.debugging.assert_* build it).
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "ops/registry.h"

namespace rill {

void RegisterLoggingOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Assert")
            .Input("condition: bool")
            .Input("data: T")
            .Attr("T: list(type)")
            .Attr("summarize: int = 3")
            .SetIsStateful()
            .SetShapeFn(shape_fn::NoOutputs));
}

}  // namespace rill
