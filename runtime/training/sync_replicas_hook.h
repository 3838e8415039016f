// SyncReplicasOptimizer's session hook: the workers' and the chief's
// initialisation around every session, and the chief's sync loop.
#ifndef RILL_RUNTIME_TRAINING_SYNC_REPLICAS_HOOK_H_
#define RILL_RUNTIME_TRAINING_SYNC_REPLICAS_HOOK_H_

#include <memory>

#include "runtime/training/session_run_hook.h"
#include "runtime/training/sync_replicas_optimizer.h"

namespace rill {

// The hook of a built SyncReplicasOptimizer (its `names`, `options` and W);
// the chief hands out `num_tokens` tokens at start. The optimizer checks
// the arguments (SyncReplicasOptimizer::MakeSessionRunHook).
std::unique_ptr<SessionRunHook> NewSyncReplicasHook(const SyncReplicasNames& names, bool is_chief,
                                                    int num_tokens,
                                                    const SyncReplicasOptions& options,
                                                    int total_num_replicas);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_SYNC_REPLICAS_HOOK_H_
