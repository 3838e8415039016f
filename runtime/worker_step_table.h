// WorkerStepTable: the steps of one task that other tasks reach by step
// id: a tensor they push finds the step's rendezvous, and an AbortStep its
// rendezvous and its cancellation.
#ifndef RILL_RUNTIME_WORKER_STEP_TABLE_H_
#define RILL_RUNTIME_WORKER_STEP_TABLE_H_

#include <cstdint>
#include <deque>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "kernels/cancellation.h"
#include "runtime/remote_rendezvous.h"

namespace rill {

// A push may arrive before the RunGraph that receives it, so either one
// creates the step.
// Thread safety: all methods may be called concurrently.
class WorkerStepTable {
 public:
  WorkerStepTable(std::string task, PushTensorFn push);

  // The step's rendezvous, created when absent; nullptr once the step has
  // ended here (a late push for it is dropped).
  std::shared_ptr<RemoteRendezvous> Rendezvous(uint64_t step_id);
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

  static constexpr size_t kRememberEnded = 4096;

 private:
  struct Entry {
    std::shared_ptr<RemoteRendezvous> rendezvous;
    std::shared_ptr<StepCancellation> cancellation;  // Null until Begin.
  };
  Entry* FindOrCreate(uint64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the step, remembering that it ended.
  Entry Remove(uint64_t step_id) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string task_;
  const PushTensorFn push_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, Entry> live_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> ended_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_WORKER_STEP_TABLE_H_
