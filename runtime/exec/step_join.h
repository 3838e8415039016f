// StepJoin: where the parts of one step that run apart end (a session's
// calls to its tasks, a worker's partitions, a partition's copies): it
// counts them down and keeps the first error, which aborts the others.
#ifndef RILL_RUNTIME_EXEC_STEP_JOIN_H_
#define RILL_RUNTIME_EXEC_STEP_JOIN_H_

#include <atomic>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace rill {

// Thread safety: Fail, PartDone and status may be called concurrently;
// Reset before any part starts.
class StepJoin {
 public:
  explicit StepJoin(int parts = 0) : remaining_(parts) {}

  void Reset(int parts) { remaining_.store(parts, std::memory_order_relaxed); }

  // Keeps `status` (an error) when it is the step's first: true then, and
  // the caller aborts the step's other parts with it.
  bool Fail(const absl::Status& status) {
    absl::MutexLock lock(&mu_);
    if (!status_.ok()) return false;
    status_ = status;
    return true;
  }

  // A part ended with `status`; a first error calls `abort(status)` to end
  // the others soon. True for the last part, whose caller finishes the step
  // with status().
  template <typename Abort>
  bool PartDone(const absl::Status& status, Abort&& abort) {
    if (!status.ok() && Fail(status)) abort(status);
    // Acq_rel: the last part to end reads what the others wrote.
    return remaining_.fetch_sub(1, std::memory_order_acq_rel) == 1;
  }

  // The first error; OK when no part failed.
  absl::Status status() const {
    absl::MutexLock lock(&mu_);
    return status_;
  }

 private:
  std::atomic<int> remaining_;
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_STEP_JOIN_H_
