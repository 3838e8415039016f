#include "runtime/training/bounded_staleness.h"

#include <memory>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "ops/ops.h"

namespace rill {

absl::StatusOr<BoundedStep> BoundStaleness(const Scope& scope, const Operation& update,
                                           const Variable& global_step,
                                           const BoundedStalenessOptions& options) {
  RETURN_IF_ERROR(scope.status());
  if (options.num_workers < 1 || options.worker_index < 0 ||
      options.worker_index >= options.num_workers || options.staleness < 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "bounded staleness: want num_workers >= 1, 0 <= worker_index < num_workers and a "
        "staleness >= 0; got %d workers, worker %d, staleness %d",
        options.num_workers, options.worker_index, options.staleness));
  }
  if (!global_step.ok() || update.node() == nullptr) {
    return absl::InvalidArgumentError("bounded staleness: the update and global step are required");
  }
  const Scope beside_step = scope.ColocateWith(global_step.ref().op());
  const ops::WorkerClocks clocks(beside_step.WithOpName(options.name + "/worker_clocks"),
                                 options.num_workers,
                                 ops::WorkerClocks::SharedName(options.name + "/worker_clocks"));
  const ops::Const worker(beside_step.WithOpName(options.name + "/worker_index"),
                          Tensor::Scalar<int32_t>(options.worker_index), DT_INT32);
  const int64_t timeout_ms =
      options.timeout == absl::InfiniteDuration() ? -1 : absl::ToInt64Milliseconds(options.timeout);
  const ops::WorkerClocksTick tick(
      beside_step.WithOpName(options.name + "/tick").WithControlDependencies({update}),
      clocks.handle, worker,
      ops::WorkerClocksTick::Staleness(options.staleness).TimeoutMs(timeout_ms));
  const ops::WorkerClocksRetire retire(beside_step.WithOpName(options.name + "/retire"),
                                       clocks.handle, worker);
  RETURN_IF_ERROR(scope.status());
  return BoundedStep{tick.operation, tick.clock, tick.slowest, retire.operation, worker};
}

namespace {

class StalenessMembershipHook final : public SessionRunHook {
 public:
  StalenessMembershipHook(std::string retire, std::string worker_index, int num_workers,
                          std::function<std::vector<int>()> live_workers, absl::Duration period)
      : retire_(std::move(retire)),
        worker_index_(std::move(worker_index)),
        num_workers_(num_workers),
        live_workers_(std::move(live_workers)),
        period_(period) {}
  ~StalenessMembershipHook() override { Stop(); }

  absl::Status AfterCreateSession(Session& session) override {
    Stop();
    // The first pass before any step: the workers not live yet hold
    // nobody back from the start.
    RetireTheGone(session);
    stop_ = std::make_unique<absl::Notification>();
    thread_ = std::thread([this, &session, stop = stop_.get()] {
      while (!stop->WaitForNotificationWithTimeout(period_)) RetireTheGone(session);
    });
    return absl::OkStatus();
  }

  absl::Status End(Session& session) override {
    (void)session;
    Stop();
    return absl::OkStatus();
  }

  void AfterCloseSession(Session& session) override {
    (void)session;
    Stop();
  }

 private:
  // Retires each worker that is not live. Again on every pass: a worker's
  // own tick counts it in, even one that has left since (Retire is cheap
  // and changes nothing for a worker retired already).
  void RetireTheGone(Session& session) {
    const std::vector<int> live_list = live_workers_();
    const std::set<int> live(live_list.begin(), live_list.end());
    for (int worker = 0; worker < num_workers_; ++worker) {
      if (live.contains(worker)) continue;
      // A failure (the session closing) is the next pass's to retry.
      (void)session.Run({{worker_index_, Tensor::Scalar<int32_t>(worker)}}, {}, {retire_});
    }
  }

  void Stop() {
    if (!thread_.joinable()) return;
    stop_->Notify();
    thread_.join();
  }

  const std::string retire_;
  const std::string worker_index_;
  const int num_workers_;
  const std::function<std::vector<int>()> live_workers_;
  const absl::Duration period_;
  std::unique_ptr<absl::Notification> stop_;
  std::thread thread_;
};

}  // namespace

std::unique_ptr<SessionRunHook> MakeStalenessMembershipHook(
    const BoundedStep& step, int num_workers, std::function<std::vector<int>()> live_workers,
    absl::Duration period) {
  return std::make_unique<StalenessMembershipHook>(step.retire.node()->name(),
                                                   step.worker_index.name(), num_workers,
                                                   std::move(live_workers), period);
}

}  // namespace rill
