// WorkerStepTable: the steps of one task that other tasks reach by step
// id: a tensor they push finds the step's rendezvous, and an AbortStep its
// rendezvous and its cancellation. Pushes for steps not begun are bounded.
#ifndef RILL_RUNTIME_SESSION_WORKER_STEP_TABLE_H_
#define RILL_RUNTIME_SESSION_WORKER_STEP_TABLE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "kernels/framework/cancellation.h"
#include "runtime/exec/remote_rendezvous.h"

namespace rill {

// What pushes for steps that have not begun here (no RunGraph yet) may
// hold: a peer that pushes for steps that never run stops here.
struct PendingPushLimits {
  // A step not begun this long after its first push is dropped with its
  // tensors.
  absl::Duration deadline = absl::Seconds(60);
  // Steps not begun, and the bytes of their tensors, at once; a push over
  // either is refused with RESOURCE_EXHAUSTED.
  int max_steps = 1024;
  int64_t max_bytes = int64_t{4} << 30;
};

// A push may arrive before the RunGraph that receives it, so either one
// creates the step.
// Thread safety: all methods may be called concurrently.
class WorkerStepTable {
 public:
  // Limits that trip are logged to `log` (null: stderr).
  WorkerStepTable(std::string task, PushTensorFn push, const PendingPushLimits& limits = {},
                  LogSink* log = nullptr);

  // A tensor another task pushed: to the step's rendezvous, created when
  // absent. Dropped (OK) once the step has ended here. Errors:
  // RESOURCE_EXHAUSTED when a step not begun would go over the limits.
  absl::Status Deliver(uint64_t step_id, std::string_view key, const Tensor& value);
  // As Rendezvous, for the step starting here: until End, an Abort also
  // cancels `cancellation`.
  std::shared_ptr<RemoteRendezvous> Begin(uint64_t step_id,
                                          std::shared_ptr<StepCancellation> cancellation);
  // The step is over here; it is refused from now on (the last
  // kRememberEnded ended steps are remembered).
  void End(uint64_t step_id);
  // Ends the step, failing its receives and cancelling its kernels with
  // `status`. REQUIRES: !status.ok().
  void Abort(uint64_t step_id, const absl::Status& status);
  // Aborts the steps not begun whose first push is older than the
  // deadline at `now`; returns how many.
  int ExpirePending(absl::Time now);

  // Steps not begun, and their bytes.
  std::pair<int, int64_t> pending();

  static constexpr size_t kRememberEnded = 4096;
  // What a pushed tensor's slot costs beyond its bytes and its key's.
  static constexpr int64_t kPushOverheadBytes = 64;

 private:
  struct Entry {
    std::shared_ptr<RemoteRendezvous> rendezvous;
    std::shared_ptr<StepCancellation> cancellation;  // Null until Begin.
    bool begun = false;
    absl::Time first_push;     // While not begun.
    int64_t pushed_bytes = 0;  // While not begun.
  };
  Entry* FindOrCreate(uint64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the step, remembering that it ended.
  Entry Remove(uint64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The step's pushed bytes leave the pending count.
  void Settle(Entry& entry) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  absl::Status PendingFull(uint64_t step_id, int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string task_;
  const PushTensorFn push_;
  const PendingPushLimits limits_;
  LogSink* const log_;
  absl::Mutex mu_;
  int pending_steps_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t pending_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;  // Pushes since the limits last had room.
  absl::flat_hash_map<uint64_t, Entry> live_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> ended_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_WORKER_STEP_TABLE_H_
