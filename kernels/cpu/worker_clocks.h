// WorkerClocks: how many steps each worker of a data-parallel job has
// finished and when it was last heard, to bound staleness and name laggards.
#ifndef RILL_KERNELS_CPU_WORKER_CLOCKS_H_
#define RILL_KERNELS_CPU_WORKER_CLOCKS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/framework/timer.h"

namespace rill {

// A worker ticks when it finishes a step; with a staleness bound K the tick
// then waits until the worker is at most K steps ahead of the slowest
// worker (K = 0: lockstep). A wait that times out says whom it waited for,
// so that a stalled job explains itself.
//
// Create with std::make_shared: waiting ticks reach it through weak
// pointers, so that deleting it from the resource manager fails them
// (ABORTED) instead of leaving them waiting for ever.
//
// Thread safety: all methods may be called concurrently. A waiting tick
// completes on the thread of the tick that releases it, of its timeout
// (the Timer's) or of its step's cancellation; never under the lock.
class WorkerClocks final : public ResourceBase, public std::enable_shared_from_this<WorkerClocks> {
 public:
  static constexpr char kTypeName[] = "WorkerClocks";

  struct Worker {
    int64_t clock = 0;                             // Steps finished.
    absl::Time last_heard = absl::InfinitePast();  // InfinitePast: never.
    bool retired = false;                          // Finished training: nobody waits for it.
  };
  // What a tick returns when released: the step count its tick reached and
  // the slowest worker's count at that moment.
  struct Release {
    int64_t clock;
    int64_t slowest;
  };
  using TickDone = std::function<void(absl::StatusOr<Release>)>;

  // REQUIRES: num_workers >= 1.
  WorkerClocks(std::string name, int num_workers);
  // Ticks still waiting fail with ABORTED.
  ~WorkerClocks() override;
  WorkerClocks(const WorkerClocks&) = delete;
  WorkerClocks& operator=(const WorkerClocks&) = delete;

  // "3 workers at steps [4,7,5]".
  std::string DebugString() const override;
  int num_workers() const { return num_workers_; }

  // Records that `worker` finished a step and releases the waiting ticks
  // that this lets run, then calls `done` once the worker is at most
  // `staleness` steps ahead of the slowest (at once when staleness < 0).
  // INVALID_ARGUMENT for a worker outside [0, num_workers); ABORTED, naming
  // the workers at the minimum and when they were last heard, when
  // `timeout` passes first (the step stays counted); CANCELLED when
  // `cancellation` (may be null) cancels the step. `done` runs exactly once.
  void TickAsync(int64_t worker, int64_t staleness, absl::Duration timeout,
                 StepCancellation* cancellation, TickDone done);

  // `worker` has finished training (or left the job): the others no longer
  // wait for it, and the ticks that waited only for it are released. Its
  // next tick, if it comes back, counts it in again, from the slowest live
  // worker's step when that is ahead of its own. INVALID_ARGUMENT for a
  // worker outside [0, num_workers).
  absl::Status Retire(int64_t worker);

  // Every worker's clock and when it was last heard.
  std::vector<Worker> State() const;

 private:
  struct Waiter {
    int worker;
    int64_t clock;  // The count its tick reached.
    int64_t staleness;
    absl::Time since;
    TickDone done;
    StepCancellation* cancellation;  // Null: the step cannot be cancelled.
    StepCancellation::Token token;
    Timer::Id timer;  // 0: no timeout.
  };

  absl::Status CheckWorker(int64_t worker) const;
  // The smallest clock of the workers not retired; `fallback` when all are.
  int64_t SlowestLocked(int64_t fallback) const ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Takes the waiters that `slowest` lets go from waiters_.
  std::vector<std::pair<Waiter, Release>> ReleasableLocked(int64_t slowest)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Completes what ReleasableLocked took; never under mu_.
  static void Complete(std::vector<std::pair<Waiter, Release>> released);
  // Ends the wait of tick `id` if it is still waiting: ABORTED for its
  // timeout when `cancel_cause` is OK, else CANCELLED.
  void Expire(uint64_t id, const absl::Status& cancel_cause);
  // "worker 0 finished step 7 and may run at most 2 steps ahead; worker 1
  // is at step 4, last heard 31.0 s ago".
  std::string WaitingForLocked(const Waiter& waiter, absl::Time now) const
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Stops the timeout and the cancellation callback of a waiter that has
  // left waiters_. Waits for either that is running elsewhere (it then
  // finds nothing to do), so never call it under mu_.
  static void Disarm(const Waiter& waiter);

  // Constant after construction.
  const std::string name_;
  const int num_workers_;

  mutable absl::Mutex mu_;
  std::vector<Worker> workers_ ABSL_GUARDED_BY(mu_);
  std::map<uint64_t, Waiter> waiters_ ABSL_GUARDED_BY(mu_);  // By arrival.
  uint64_t next_waiter_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace rill

#endif  // RILL_KERNELS_CPU_WORKER_CLOCKS_H_
