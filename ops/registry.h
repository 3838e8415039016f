// The standard op registry: every op rill defines, registered explicitly in
// one place (registry.cc), one family per file.
#ifndef RILL_OPS_REGISTRY_H_
#define RILL_OPS_REGISTRY_H_

#include "graph/op_registry.h"

namespace rill {

void RegisterArrayOps(OpRegistry& registry);        // array_ops.cc
void RegisterArrayShapeOps(OpRegistry& registry);   // array_shape_ops.cc
void RegisterSliceOps(OpRegistry& registry);        // slice_ops.cc
void RegisterConcatSplitOps(OpRegistry& registry);  // concat_split_ops.cc
void RegisterGatherOps(OpRegistry& registry);       // gather_ops.cc
void RegisterMathOps(OpRegistry& registry);         // math_ops.cc
void RegisterNnOps(OpRegistry& registry);           // nn_ops.cc
void RegisterStateOps(OpRegistry& registry);        // state_ops.cc
void RegisterRandomOps(OpRegistry& registry);       // random_ops.cc
void RegisterTrainingOps(OpRegistry& registry);     // training_ops.cc
void RegisterAccumulatorOps(OpRegistry& registry);  // accumulator_ops.cc
void RegisterSendRecvOps(OpRegistry& registry);     // sendrecv_ops.cc
void RegisterIoOps(OpRegistry& registry);           // io_ops.cc
void RegisterSummaryOps(OpRegistry& registry);      // summary_ops.cc
void RegisterQueueOps(OpRegistry& registry);        // queue_ops.cc
void RegisterDataFlowOps(OpRegistry& registry);     // data_flow_ops.cc
void RegisterControlFlowOps(OpRegistry& registry);  // control_flow_ops.cc
void RegisterFunctionalOps(OpRegistry& registry);   // functional_ops.cc
void RegisterPadOps(OpRegistry& registry);          // pad_ops.cc
void RegisterLoggingOps(OpRegistry& registry);      // logging_ops.cc
void RegisterImageOps(OpRegistry& registry);        // image_ops.cc
void RegisterBatchNormOps(OpRegistry& registry);    // batch_norm_ops.cc
void RegisterListOps(OpRegistry& registry);         // list_ops.cc

// Registers every family above into `registry`.
void RegisterStandardOps(OpRegistry& registry);

// A process-wide registry holding the standard ops, built on first use.
// Aborts if an op definition is malformed (a programmer error, pinned by
// tests/ops/registry_test.cc).
const OpRegistry& StandardOps();

}  // namespace rill

#endif  // RILL_OPS_REGISTRY_H_
