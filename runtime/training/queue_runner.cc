#include "runtime/training/queue_runner.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace rill {

QueueRunner::QueueRunner(std::vector<std::string> enqueue_ops, QueueRunnerOptions options)
    : enqueue_ops_(std::move(enqueue_ops)), options_(std::move(options)) {}

QueueRunner::~QueueRunner() { Join(); }

absl::Status QueueRunner::Start(Session* session) {
  if (!threads_.empty()) {
    return absl::FailedPreconditionError("the queue runner's threads run already; Join them first");
  }
  stop_.store(false, std::memory_order_relaxed);
  {
    absl::MutexLock lock(&mu_);
    status_ = absl::OkStatus();
  }
  live_threads_.store(static_cast<int>(enqueue_ops_.size()), std::memory_order_relaxed);
  for (const std::string& op : enqueue_ops_) {
    threads_.emplace_back([this, session, &op] { Loop(session, op); });
  }
  return absl::OkStatus();
}

void QueueRunner::Loop(Session* session, const std::string& op) {
  while (!stop_.load(std::memory_order_relaxed)) {
    absl::Status status = options_.before_run ? options_.before_run(*session) : absl::OkStatus();
    if (status.ok()) status = session->Run({}, {}, {op}).status();
    if (status.ok()) continue;
    if (!absl::IsOutOfRange(status) && !absl::IsCancelled(status)) {
      absl::MutexLock lock(&mu_);
      if (status_.ok()) {
        status_ = absl::Status(status.code(),
                               absl::StrFormat("queue runner op %s: %s", op, status.message()));
      }
    }
    break;
  }
  // Release: status_ is written before a caller sees the thread gone.
  live_threads_.fetch_sub(1, std::memory_order_release);
}

void QueueRunner::Join() {
  for (std::thread& thread : threads_) thread.join();
  threads_.clear();
}

absl::Status QueueRunner::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

bool QueueRunner::running() const { return live_threads_.load(std::memory_order_acquire) > 0; }

}  // namespace rill
