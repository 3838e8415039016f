#include "kernels/cpu/worker_clocks.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

std::string Seconds(absl::Duration d) {
  return absl::StrFormat("%.1f s", absl::ToDoubleSeconds(d));
}

}  // namespace

WorkerClocks::WorkerClocks(std::string name, int num_workers)
    : name_(std::move(name)), num_workers_(num_workers), workers_(num_workers) {}

WorkerClocks::~WorkerClocks() {
  std::map<uint64_t, Waiter> waiters;
  {
    absl::MutexLock lock(&mu_);
    waiters.swap(waiters_);
  }
  for (auto& [id, waiter] : waiters) {
    Disarm(waiter);
    waiter.done(absl::AbortedError(
        absl::StrFormat("WorkerClocks '%s' was deleted while worker %d waited after step %d", name_,
                        waiter.worker, waiter.clock)));
  }
}

std::string WorkerClocks::DebugString() const {
  absl::MutexLock lock(&mu_);
  return absl::StrFormat("%d workers at steps [%s]", num_workers_,
                         absl::StrJoin(workers_, ",", [](std::string* out, const Worker& w) {
                           absl::StrAppend(out, w.clock);
                         }));
}

void WorkerClocks::TickAsync(int64_t worker, int64_t staleness, absl::Duration timeout,
                             StepCancellation* cancellation, TickDone done) {
  if (absl::Status bad = CheckWorker(worker); !bad.ok()) {
    done(std::move(bad));
    return;
  }
  std::vector<std::pair<Waiter, Release>> released;
  std::optional<Release> release;
  absl::Status failure;
  {
    absl::MutexLock lock(&mu_);
    const absl::Time now = absl::Now();
    Worker& self = workers_[worker];
    // Back after it retired (or a slot no worker held yet): nobody waited
    // for it meanwhile, so it comes back at the slowest live worker's step
    // rather than hold everyone back until it has caught up.
    if (self.retired) self.clock = std::max(self.clock, SlowestLocked(self.clock));
    ++self.clock;
    self.last_heard = now;
    self.retired = false;
    const int64_t slowest = SlowestLocked(self.clock);
    released = ReleasableLocked(slowest);
    if (staleness < 0 || self.clock - slowest <= staleness) {
      release = Release{self.clock, slowest};
    } else {
      const uint64_t id = next_waiter_id_++;
      Waiter waiter{static_cast<int>(worker), self.clock,   staleness, now,
                    std::move(done),          cancellation, 0,         0};
      // The callbacks take mu_, so registered under it they find the
      // waiter in waiters_; neither the cancellation nor the timer runs
      // its callbacks under its own lock.
      const std::weak_ptr<WorkerClocks> weak = weak_from_this();
      if (cancellation != nullptr && !cancellation->RegisterCallback(
                                         [weak, id](const absl::Status& cause) {
                                           if (auto clocks = weak.lock()) clocks->Expire(id, cause);
                                         },
                                         &waiter.token)) {
        done = std::move(waiter.done);
        failure = absl::CancelledError(
            absl::StrFormat("WorkerClocks '%s': the step was cancelled before the wait: %s", name_,
                            WaitingForLocked(waiter, now)));
      } else {
        if (timeout != absl::InfiniteDuration()) {
          waiter.timer = Timer::Default().Schedule(now + timeout, [weak, id] {
            if (auto clocks = weak.lock()) clocks->Expire(id, absl::OkStatus());
          });
        }
        waiters_.emplace(id, std::move(waiter));
      }
    }
  }
  Complete(std::move(released));
  if (release) {
    done(*release);
  } else if (!failure.ok()) {
    done(std::move(failure));
  }
}

std::vector<WorkerClocks::Worker> WorkerClocks::State() const {
  absl::MutexLock lock(&mu_);
  return workers_;
}

absl::Status WorkerClocks::Retire(int64_t worker) {
  RETURN_IF_ERROR(CheckWorker(worker));
  std::vector<std::pair<Waiter, Release>> released;
  {
    absl::MutexLock lock(&mu_);
    Worker& self = workers_[worker];
    self.retired = true;
    self.last_heard = absl::Now();
    released = ReleasableLocked(SlowestLocked(self.clock));
  }
  Complete(std::move(released));
  return absl::OkStatus();
}

absl::Status WorkerClocks::CheckWorker(int64_t worker) const {
  if (worker >= 0 && worker < num_workers_) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("WorkerClocks '%s' counts workers 0 to %d; worker %d is not one of them",
                      name_, num_workers_ - 1, worker));
}

int64_t WorkerClocks::SlowestLocked(int64_t fallback) const {
  std::optional<int64_t> slowest;
  for (const Worker& w : workers_) {
    if (!w.retired && (!slowest || w.clock < *slowest)) slowest = w.clock;
  }
  return slowest.value_or(fallback);
}

std::vector<std::pair<WorkerClocks::Waiter, WorkerClocks::Release>> WorkerClocks::ReleasableLocked(
    int64_t slowest) {
  std::vector<std::pair<Waiter, Release>> released;
  for (auto it = waiters_.begin(); it != waiters_.end();) {
    if (it->second.clock - slowest <= it->second.staleness) {
      const int64_t clock = it->second.clock;
      released.emplace_back(std::move(it->second), Release{clock, slowest});
      it = waiters_.erase(it);
    } else {
      ++it;
    }
  }
  return released;
}

void WorkerClocks::Complete(std::vector<std::pair<Waiter, Release>> released) {
  for (auto& [waiter, outcome] : released) {
    Disarm(waiter);
    waiter.done(outcome);
  }
}

void WorkerClocks::Expire(uint64_t id, const absl::Status& cancel_cause) {
  std::optional<Waiter> waiter;
  std::string waiting_for;
  absl::Duration waited;
  {
    absl::MutexLock lock(&mu_);
    auto it = waiters_.find(id);
    if (it == waiters_.end()) return;  // Released, timed out or cancelled already.
    waiter = std::move(it->second);
    waiters_.erase(it);
    const absl::Time now = absl::Now();
    waiting_for = WaitingForLocked(*waiter, now);
    waited = now - waiter->since;
  }
  Disarm(*waiter);
  if (cancel_cause.ok()) {
    // ABORTED rather than DEADLINE_EXCEEDED: a supervised session retries
    // aborted steps, and a late worker may yet come back.
    waiter->done(absl::AbortedError(
        absl::StrFormat("WorkerClocks '%s': %s (waited %s)", name_, waiting_for, Seconds(waited))));
  } else {
    waiter->done(absl::CancelledError(
        absl::StrFormat("WorkerClocks '%s': the step was cancelled after waiting %s: %s (%s)",
                        name_, Seconds(waited), waiting_for, cancel_cause.ToString())));
  }
}

std::string WorkerClocks::WaitingForLocked(const Waiter& waiter, absl::Time now) const {
  const int64_t slowest = SlowestLocked(waiter.clock);
  std::string text =
      absl::StrFormat("worker %d finished step %d and may run at most %d %s ahead", waiter.worker,
                      waiter.clock, waiter.staleness, waiter.staleness == 1 ? "step" : "steps");
  for (int i = 0; i < num_workers_; ++i) {
    const Worker& w = workers_[i];
    if (w.retired || w.clock != slowest) continue;
    if (w.last_heard == absl::InfinitePast()) {
      absl::StrAppendFormat(&text, "; worker %d is at step %d, never heard", i, w.clock);
    } else {
      absl::StrAppendFormat(&text, "; worker %d is at step %d, last heard %s ago", i, w.clock,
                            Seconds(now - w.last_heard));
    }
  }
  return text;
}

void WorkerClocks::Disarm(const Waiter& waiter) {
  // From the timer's own callback Cancel returns at once, and from the
  // cancellation's callback DeregisterCallback does; both are no-ops then.
  if (waiter.timer != 0) Timer::Default().Cancel(waiter.timer);
  if (waiter.cancellation != nullptr) waiter.cancellation->DeregisterCallback(waiter.token);
}

}  // namespace rill
