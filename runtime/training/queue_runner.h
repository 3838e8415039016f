// QueueRunner, as tf.train.QueueRunner: threads that run an op over and
// over (the chief's sync op, an input pipeline's enqueue) until it fails.
#ifndef RILL_RUNTIME_TRAINING_QUEUE_RUNNER_H_
#define RILL_RUNTIME_TRAINING_QUEUE_RUNNER_H_

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "runtime/session.h"

namespace rill {

struct QueueRunnerOptions {
  // Runs before each run of an op, on its thread (an elastic sync loop
  // waits here until its round can be taken whole); its error ends the
  // thread as the op's would.
  std::function<absl::Status(Session&)> before_run;
};

// Each thread ends at its op's first error. OUT_OF_RANGE and CANCELLED,
// which a closed queue or session gives, end it quietly; any other error
// is kept for status(), so that the training loop can report it (as
// TensorFlow's Coordinator re-raises a queue runner's exception).
// Thread safety: Start, RequestStop and Join from one thread; status()
// and running() from any.
class QueueRunner {
 public:
  // One thread per op in `enqueue_ops` (target names).
  explicit QueueRunner(std::vector<std::string> enqueue_ops, QueueRunnerOptions options = {});
  // Joins the threads: close their session (or queue) first.
  ~QueueRunner();
  QueueRunner(const QueueRunner&) = delete;
  QueueRunner& operator=(const QueueRunner&) = delete;

  // Starts the threads on `session`, which must stay open or at least
  // alive until Join returns. FAILED_PRECONDITION while threads run.
  absl::Status Start(Session* session);
  // Threads end after the run they are in; one that waits (a dequeue) ends
  // when its session is closed.
  void RequestStop() { stop_.store(true, std::memory_order_relaxed); }
  // Waits for every thread to end.
  void Join();
  // The first error other than a quiet end; OK when there was none.
  absl::Status status() const;
  // Whether a thread still runs.
  bool running() const;

 private:
  void Loop(Session* session, const std::string& op);

  const std::vector<std::string> enqueue_ops_;
  const QueueRunnerOptions options_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  std::atomic<int> live_threads_{0};
  mutable absl::Mutex mu_;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_QUEUE_RUNNER_H_
