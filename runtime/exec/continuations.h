// Scheduling hints that a thread gives the executor: nodes readied on
// this thread wait for it (or run here) instead of waking a pool thread.
#ifndef RILL_RUNTIME_EXEC_CONTINUATIONS_H_
#define RILL_RUNTIME_EXEC_CONTINUATIONS_H_

#include <functional>

#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

// While one is alive on a thread, nodes that another partition's _Send
// readies from this thread (completing a receive) wait for this thread
// instead of waking a pool thread: the outermost scope runs them when it
// ends, and the thread hands them to the pool before it starts a kernel
// that may run long. A wake costs tens of microseconds; a partitioned step
// that ping-pongs between devices would pay it at every crossing.
class InlineContinuations {
 public:
  InlineContinuations();
  ~InlineContinuations();
  InlineContinuations(const InlineContinuations&) = delete;
  InlineContinuations& operator=(const InlineContinuations&) = delete;

  // Queues `run` when a scope is alive on this thread; false otherwise.
  // `pool` (may be null) is where it goes if handed off.
  static bool Defer(Eigen::ThreadPoolInterface* pool, std::function<void()> run);
  // Hands what is queued here to its pools.
  static void HandOff();
  static bool AnyQueued();

 private:
  bool outermost_;
};

// While one is alive on a thread (a transport's socket thread delivering a
// tensor from another task), nodes that an async kernel's completion on
// this thread readies run here as Executor::RunAsyncQuickHere runs them:
// quick ones within its budget, the rest on the pool. Without it they go
// to the pool, a thread wake each time.
class QuickContinuationsHere {
 public:
  QuickContinuationsHere();
  ~QuickContinuationsHere();
  QuickContinuationsHere(const QuickContinuationsHere&) = delete;
  QuickContinuationsHere& operator=(const QuickContinuationsHere&) = delete;

  static bool Active();

 private:
  const bool was_active_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_CONTINUATIONS_H_
