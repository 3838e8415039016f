// A step of the session core in flight: feeds checked, one RunGraph per
// task, the first error (or the deadline) cancelling every task's part, and
// the fetches and step stats gathered when the last part ends.
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "runtime/exec/executor.h"
#include "runtime/session/session_core.h"
#include "runtime/session/session_core_items.h"

namespace rill {

void SessionCore::Start(std::shared_ptr<const Resolved> resolved, const StepRequest& request,
                        StepResult* result, std::function<void(absl::Status)> done) {
  const Plan& plan = *resolved->plan;
  plan.last_started.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  // Checked here, naming the caller's tensors, before any task runs.
  for (size_t j = 0; j < plan.feeds.size(); ++j) {
    const Plan::Feed& feed = plan.feeds[j];
    const Tensor& value = request.feeds[resolved->feed_order[j]].second;
    if (absl::Status status = CheckFedValue(feed.name, feed.dtype, feed.shape, value);
        !status.ok()) {
      return done(std::move(status));
    }
  }
  auto owned = std::make_unique<StepRun>();
  StepRun* const step = owned.get();
  step->result = result;
  step->done = std::move(done);
  const size_t n = plan.parts.size();
  step->num_calls = n;
  step->calls = std::make_unique<RunGraphCall[]>(n);
  // Relaxed: the id only needs to be unique.
  const uint64_t step_id = next_step_id_.fetch_add(1, std::memory_order_relaxed);
  for (size_t p = 0; p < n; ++p) {
    const Plan::Part& part = plan.parts[p];
    RunGraphCall& call = step->calls[p];
    call.graph_handle = part.graph_handle;
    call.step_id = step_id;
    call.trace = request.options.trace;
    call.runner = request.runner;
    call.feeds.reserve(part.feeds.size());
    for (int j : part.feeds) call.feeds.push_back(request.feeds[resolved->feed_order[j]].second);
  }
  step->resolved = std::move(resolved);
  step->join.Reset(static_cast<int>(n));
  {
    absl::MutexLock lock(&running_mu_);
    if (closing_) {
      done = std::move(step->done);
      owned.reset();
      return done(absl::CancelledError("Session has been closed."));
    }
    running_.emplace(step, std::move(owned));
  }
  if (request.options.timeout_in_ms > 0) {
    step->refs.store(2, std::memory_order_relaxed);
    const int64_t timeout = request.options.timeout_in_ms;
    step->timer = Timer::Default().Schedule(absl::Now() + absl::Milliseconds(timeout), [this, step,
                                                                                        timeout] {
      Abort(step, absl::DeadlineExceededError(absl::StrFormat(
                      "Run did not finish within %d ms (RunOptions.timeout_in_ms); the step was "
                      "cancelled on every task",
                      timeout)));
      Release(step);
    });
  }
  if (n == 0) return AllPartsDone(step);
  // `step` may be gone once the last part has started.
  for (size_t p = 0; p < n; ++p) {
    const Plan::Part& part = plan.parts[p];
    part.worker->RunGraph(&step->calls[p],
                          [this, step](absl::Status status) { PartDone(step, std::move(status)); });
  }
}

void SessionCore::Abort(StepRun* step, const absl::Status& status) {
  if (step->join.Fail(status)) CancelCalls(step, status);
}

void SessionCore::CancelCalls(StepRun* step, const absl::Status& status) {
  // The step cannot finish meanwhile: the caller holds a part or the timer.
  for (size_t q = 0; q < step->num_calls; ++q) step->calls[q].cancellation.Cancel(status);
}

void SessionCore::PartDone(StepRun* step, absl::Status status) {
  if (!step->join.PartDone(status, [&](const absl::Status& error) { CancelCalls(step, error); })) {
    return;
  }
  AllPartsDone(step);
}

void SessionCore::AllPartsDone(StepRun* step) {
  // The timer's reference is dropped here when it will not run; when it
  // has run or is running, the timer drops it.
  if (step->timer != 0 && Timer::Default().Cancel(step->timer)) Release(step);
  Release(step);
}

void SessionCore::Release(StepRun* step) {
  // Acq_rel: the holder of the last reference reads what the others wrote.
  if (step->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(step);
}

void SessionCore::Finish(StepRun* step) {
  absl::Status status = step->join.status();
  const Resolved& resolved = *step->resolved;
  const Plan& plan = *resolved.plan;
  StepResult& result = *step->result;
  if (status.ok()) {
    std::vector<Tensor> fetched(plan.num_fetches);
    for (size_t p = 0; p < step->num_calls && status.ok(); ++p) {
      RunGraphCall& call = step->calls[p];
      const Plan::Part& part = plan.parts[p];
      if (call.fetched.size() != part.fetches.size()) {
        status =
            absl::InternalError(absl::StrFormat("%s returned %d tensors for %d fetches", part.task,
                                                call.fetched.size(), part.fetches.size()));
        break;
      }
      for (size_t f = 0; f < part.fetches.size(); ++f) {
        fetched[part.fetches[f]] = std::move(call.fetched[f]);
      }
    }
    result.outputs.clear();
    result.outputs.reserve(resolved.fetch_of.size());
    for (int f : resolved.fetch_of) result.outputs.push_back(fetched[f]);
    for (size_t p = 0; p < step->num_calls; ++p) {
      RunGraphCall& call = step->calls[p];
      for (NodeExecStats& node : call.stats) result.stats.push_back(std::move(node));
      if (!call.clock.task.empty()) result.clocks.push_back(std::move(call.clock));
    }
  }
  std::function<void(absl::Status)> done = std::move(step->done);
  std::unique_ptr<StepRun> finished;
  {
    absl::MutexLock lock(&running_mu_);
    finished = std::move(running_.extract(step).mapped());
  }
  // The step goes before `done`: the caller may close the session once it
  // returns.
  finished.reset();
  done(std::move(status));
}

}  // namespace rill
