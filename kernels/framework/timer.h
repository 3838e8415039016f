// Timer: runs callbacks at deadlines on one thread of its own, so that a
// step's deadline (or a blocking kernel's timeout) needs no waiting thread.
#ifndef RILL_KERNELS_FRAMEWORK_TIMER_H_
#define RILL_KERNELS_FRAMEWORK_TIMER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace rill {

// Callbacks run one at a time on the timer's thread, so they must be
// quick (cancel something, post work elsewhere).
// Thread safety: all methods may be called concurrently.
class Timer {
 public:
  using Id = uint64_t;

  Timer();
  // Callbacks not yet due never run.
  ~Timer();
  Timer(const Timer&) = delete;
  Timer& operator=(const Timer&) = delete;

  // The process's timer; its thread starts with the first Schedule.
  static Timer& Default();

  // Runs `callback` at `when` (at once, on the timer's thread, when it is
  // past).
  Id Schedule(absl::Time when, std::function<void()> callback);
  // True when the callback will not run; false when it has run or is
  // running (then this waits for it to finish, unless called from it).
  bool Cancel(Id id);

 private:
  void Loop();

  absl::Mutex mu_;
  std::map<std::pair<absl::Time, Id>, std::function<void()>> due_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<Id, absl::Time> when_ ABSL_GUARDED_BY(mu_);
  Id next_id_ ABSL_GUARDED_BY(mu_) = 1;
  Id running_ ABSL_GUARDED_BY(mu_) = 0;  // The callback running now, or 0.
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  absl::CondVar changed_;   // Signalled for an earlier deadline or a stop.
  absl::CondVar finished_;  // Signalled when a callback has run.
  std::thread thread_;      // Started by the first Schedule, under mu_.
};

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_TIMER_H_
