// Where a step's work runs: runners that start it, and the hints a thread
// gives the executor so that nodes readied on it need no thread wake.
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
// Runs a closure: at once on the calling thread, on a pool, later. The
// executor hands a step's start to one (as TensorFlow's
// Executor::Args::runner); whoever starts the step chooses where it runs.
using Runner = std::function<void(std::function<void()>)>;

// Runs `closure` at once on the calling thread.
void RunHere(std::function<void()> closure);
// Runs `closure` at once on the calling thread inside a
// QuickContinuationsHere scope: for a thread that must stay responsive (a
// transport's socket thread), which runs only the step's quick nodes.
void RunQuickHere(std::function<void()> closure);

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
// this thread readies, and steps started here, run quick nodes only: those
// measured as quick, within a budget (Executor::kQuickRunBudgetNanos); the
// rest go to the pool. Without it readied nodes go to the pool, a thread
// wake each time.
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
