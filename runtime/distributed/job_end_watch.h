// How a task that only serves (a ps) learns that its job is over: srun and
// mpirun wait for every task, and a ps would otherwise serve forever.
#ifndef RILL_RUNTIME_DISTRIBUTED_JOB_END_WATCH_H_
#define RILL_RUNTIME_DISTRIBUTED_JOB_END_WATCH_H_

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/distributed/cluster_spec.h"
#include "transport/curve.h"
#include "transport/rpc.h"

namespace rill {

struct JobEndWatchOptions {
  // How long a worker may take to answer a ping.
  absl::Duration ping_timeout = absl::Seconds(1);
  // How long no worker may have answered, after the chief did, before the
  // job counts as over: long enough to outlast a loaded machine's stalls.
  absl::Duration grace = absl::Seconds(5);
  // The keys of a cluster that speaks CURVE; null: none.
  std::shared_ptr<const CurveKeys> curve;
};

// Pings the workers (the jobs "chief" and "worker") with the transport's
// own ping. The job is over once the chief (task 0 of "chief", else of
// "worker") has answered and then no worker has answered for `grace`: the
// chief finishing is the end of training, and a worker still answering may
// still be reading the ps's variables (its last evaluation). A worker that
// never starts does not hold the ps up. Only the chief's having answered
// counts, not when: a ps started after the chief finished serves until
// stopped, as without the watch.
// Thread compatible.
class JobEndWatch {
 public:
  // INVALID_ARGUMENT when the cluster has no worker to watch.
  static absl::StatusOr<std::unique_ptr<JobEndWatch>> Create(const ClusterSpec& cluster,
                                                             const JobEndWatchOptions& options);

  // Pings every worker at once and waits for their answers (at most
  // ping_timeout); true once the job is over.
  bool Poll();

 private:
  explicit JobEndWatch(const JobEndWatchOptions& options) : options_(options) {}

  const JobEndWatchOptions options_;
  std::vector<std::unique_ptr<RpcClient>> workers_;  // The chief first.
  bool chief_seen_ = false;
  absl::Time last_answer_;
};

// For a task that serves until stopped or until its job is over: waits for
// SIGTERM or SIGINT (blocked by BlockStopSignals) while polling `watch`
// every `interval`. Returns the signal, or 0 once the job is over.
int WaitForStopSignalOrJobEnd(JobEndWatch& watch,
                              absl::Duration interval = absl::Milliseconds(500));

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_JOB_END_WATCH_H_
