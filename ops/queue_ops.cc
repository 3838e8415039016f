// Queue ops on resource handles: FIFOQueueV2 makes (or finds) a queue, and
// the QueueXxxV2 ops enqueue, dequeue, close and inspect it. Names,
// signatures and attrs follow TensorFlow's.
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

absl::Status HandleIsScalar(InferenceContext& c) { return c.WithRank(c.input(0), 0, 0).status(); }

// What a dequeue returns has the queue's element shapes, which live with
// the resource, not in the graph: the outputs stay unknown.
absl::Status DequeueShape(InferenceContext& c) {
  RETURN_IF_ERROR(HandleIsScalar(c));
  return shape_fn::Unknown(c);
}

absl::Status DequeueManyShape(InferenceContext& c) {
  RETURN_IF_ERROR(HandleIsScalar(c));
  RETURN_IF_ERROR(c.WithRank(c.input(1), 0, 1).status());
  return shape_fn::Unknown(c);
}

absl::Status HandleToScalar(InferenceContext& c) {
  RETURN_IF_ERROR(HandleIsScalar(c));
  return shape_fn::Scalar(c);
}

}  // namespace

// Every op that touches a queue is stateful, so that no pass merges two
// dequeues or folds a size.
void RegisterQueueOps(OpRegistry& r) {
  r.Add(OpDefBuilder("FIFOQueueV2").Output("handle: resource")
            .Attr("component_types: list(type) >= 1").Attr("shapes: list(shape) >= 0 = []")
            .Attr("capacity: int = -1").Attr("container: string = ''")
            .Attr("shared_name: string = ''").SetIsStateful().SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("QueueEnqueueV2").Input("handle: resource")
            .Input("components: Tcomponents").Attr("Tcomponents: list(type) >= 1")
            .Attr("timeout_ms: int = -1").SetIsStateful().SetShapeFn(HandleIsScalar));
  r.Add(OpDefBuilder("QueueEnqueueManyV2").Input("handle: resource")
            .Input("components: Tcomponents").Attr("Tcomponents: list(type) >= 1")
            .Attr("timeout_ms: int = -1").SetIsStateful().SetShapeFn(HandleIsScalar));
  r.Add(OpDefBuilder("QueueDequeueV2").Input("handle: resource")
            .Output("components: component_types").Attr("component_types: list(type) >= 1")
            .Attr("timeout_ms: int = -1").SetIsStateful().SetShapeFn(DequeueShape));
  r.Add(OpDefBuilder("QueueDequeueManyV2").Input("handle: resource").Input("n: int32")
            .Output("components: component_types").Attr("component_types: list(type) >= 1")
            .Attr("timeout_ms: int = -1").SetIsStateful().SetShapeFn(DequeueManyShape));
  r.Add(OpDefBuilder("QueueDequeueUpToV2").Input("handle: resource").Input("n: int32")
            .Output("components: component_types").Attr("component_types: list(type) >= 1")
            .Attr("timeout_ms: int = -1").SetIsStateful().SetShapeFn(DequeueManyShape));
  r.Add(OpDefBuilder("QueueCloseV2").Input("handle: resource")
            .Attr("cancel_pending_enqueues: bool = false").SetIsStateful()
            .SetShapeFn(HandleIsScalar));
  r.Add(OpDefBuilder("QueueIsClosedV2").Input("handle: resource").Output("is_closed: bool")
            .SetIsStateful().SetShapeFn(HandleToScalar));
  r.Add(OpDefBuilder("QueueSizeV2").Input("handle: resource").Output("size: int32")
            .SetIsStateful().SetShapeFn(HandleToScalar));
}

}  // namespace rill
