// StepCancellation: stops one step from any thread. The first status
// recorded is the step's result; kernels poll it or register a callback.
#ifndef RILL_KERNELS_FRAMEWORK_CANCELLATION_H_
#define RILL_KERNELS_FRAMEWORK_CANCELLATION_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"

namespace rill {

// A kernel that waits (a blocking dequeue, a receive, a kernel waiting on
// another task) registers a callback instead of polling, so that the wait
// ends as soon as the step is cancelled, and holds no thread meanwhile.
// Thread safety: all methods may be called concurrently.
class StepCancellation {
 public:
  using Callback = std::function<void(const absl::Status&)>;
  using Token = int64_t;

  StepCancellation() = default;
  StepCancellation(const StepCancellation&) = delete;
  StepCancellation& operator=(const StepCancellation&) = delete;

  // Records `status` unless a status is already recorded, then runs the
  // registered callbacks on this thread (outside the lock).
  // REQUIRES: !status.ok().
  void Cancel(absl::Status status);
  bool cancelled() const {
    // Acquire: pairs with the release in Cancel so that status() is set.
    return cancelled_.load(std::memory_order_acquire);
  }
  // OK until cancelled.
  absl::Status status() const;
  const std::atomic<bool>* flag() const { return &cancelled_; }

  // Calls `callback` with the status when the step is cancelled. Returns
  // false, without registering, when it already is.
  bool RegisterCallback(Callback callback, Token* token);
  // Forgets the callback. Returns false when cancellation has begun; then
  // the callback has run or is running, and this waits for it to finish
  // unless called from that callback itself.
  bool DeregisterCallback(Token token);
  // Forgets the callback without waiting for it, for callbacks that stay
  // safe to run after their waiter has finished (they hold what they use).
  // A waiter finished by another step's cancellation callback must not
  // wait here: that step's canceller may be waiting on this one's. Returns
  // false when cancellation has begun; the callback may still be running.
  bool TryDeregisterCallback(Token token);

 private:
  std::atomic<bool> cancelled_{false};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  std::vector<std::pair<Token, Callback>> callbacks_ ABSL_GUARDED_BY(mu_);
  Token next_token_ ABSL_GUARDED_BY(mu_) = 0;
  // Set while Cancel runs the callbacks, and on which thread.
  bool running_callbacks_ ABSL_GUARDED_BY(mu_) = false;
  std::thread::id cancelling_thread_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_CANCELLATION_H_
