// Bounded staleness (stale synchronous parallel) between-graph training:
// updates are applied as each worker computes them, but no worker runs
// more than K steps ahead of the slowest.
//
// Each worker's step ends by ticking its clock in a WorkerClocks resource
// beside the global step (shared by every worker's graph); the tick waits,
// holding no thread, until the slowest worker is at most K steps behind.
// K = 0 runs the workers in lockstep (every worker finishes step t before
// any starts t + 1); no bound at all is asynchronous training. Unlike
// SyncReplicasOptimizer nothing is averaged: each gradient is applied once,
// by its own worker, at most K steps stale. A worker that waits longer
// than `timeout` fails with ABORTED naming who is late and when it was last
// heard, which a supervised session recovers from. A worker that has
// finished runs `retire`, so that the others do not wait for it.
#ifndef RILL_RUNTIME_TRAINING_BOUNDED_STALENESS_H_
#define RILL_RUNTIME_TRAINING_BOUNDED_STALENESS_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/scope.h"
#include "ops/variable.h"
#include "runtime/training/session_run_hook.h"

namespace rill {

struct BoundedStalenessOptions {
  int num_workers = 1;
  int worker_index = 0;
  int staleness = 0;  // K >= 0.
  absl::Duration timeout = absl::Seconds(60);
  std::string name = "staleness";
};

struct BoundedStep {
  Operation train_op;  // The worker's step: its update, then the tick.
  Output clock;        // The steps this worker finished, this one included.
  Output slowest;      // The slowest worker's steps when this one went on.
  // Run once the worker has finished training, so that the others do not
  // wait for it; a later step counts it in again.
  Operation retire;
  // The worker `retire` retires (this worker's index); the chief feeds
  // another's to retire a worker that left the job.
  Output worker_index;
};

// Builds the tick after `update` (a worker's own update, e.g. an
// optimizer's Minimize), colocated with `global_step`. INVALID_ARGUMENT
// for num_workers < 1, a worker_index outside [0, num_workers), K < 0.
absl::StatusOr<BoundedStep> BoundStaleness(const Scope& scope, const Operation& update,
                                           const Variable& global_step,
                                           const BoundedStalenessOptions& options);

// The chief's side of bounded staleness when workers come and go: every
// `period` it retires the clock of each worker index in [0, num_workers)
// that `live_workers` does not list, so that nobody waits for a worker that
// left or has not come yet; one that comes (back) counts in with its next
// tick, from the slowest live worker's step. Runs from a thread of its own
// between a session's creation and its close.
std::unique_ptr<SessionRunHook> MakeStalenessMembershipHook(
    const BoundedStep& step, int num_workers, std::function<std::vector<int>()> live_workers,
    absl::Duration period = absl::Seconds(1));

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_BOUNDED_STALENESS_H_
