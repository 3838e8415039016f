// The queue ops have no gradient: they move values between steps, and
// TensorFlow declares them not differentiable.
#include "ops/gradients.h"

namespace rill {

void RegisterQueueGradients(GradientRegistry& r) {
  for (const char* op : {"FIFOQueueV2", "QueueEnqueueV2", "QueueEnqueueManyV2", "QueueDequeueV2",
                         "QueueDequeueManyV2", "QueueDequeueUpToV2", "QueueCloseV2",
                         "QueueIsClosedV2", "QueueSizeV2"}) {
    r.RegisterNoGradient(op);
  }
}

}  // namespace rill
