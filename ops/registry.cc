#include "ops/registry.h"

#include <cstdio>
#include <cstdlib>

namespace rill {

void RegisterStandardOps(OpRegistry& registry) {
  RegisterArrayOps(registry);
  RegisterArrayShapeOps(registry);
  RegisterSliceOps(registry);
  RegisterConcatSplitOps(registry);
  RegisterGatherOps(registry);
  RegisterMathOps(registry);
  RegisterNnOps(registry);
  RegisterStateOps(registry);
  RegisterRandomOps(registry);
  RegisterTrainingOps(registry);
  RegisterAccumulatorOps(registry);
  RegisterSendRecvOps(registry);
  RegisterIoOps(registry);
  RegisterSummaryOps(registry);
  RegisterQueueOps(registry);
  RegisterDataFlowOps(registry);
  RegisterControlFlowOps(registry);
  RegisterFunctionalOps(registry);
  RegisterPadOps(registry);
  RegisterLoggingOps(registry);
  RegisterImageOps(registry);
  RegisterBatchNormOps(registry);
  RegisterListOps(registry);
}

const OpRegistry& StandardOps() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry;
    RegisterStandardOps(*r);
    if (!r->status().ok()) {
      std::fprintf(stderr, "rill: invalid op definition: %s\n", r->status().ToString().c_str());
      std::abort();
    }
    return r;
  }();
  return *registry;
}

}  // namespace rill
