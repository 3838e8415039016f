#include "runtime/distributed/job_end_watch.h"

#include <csignal>
#include <ctime>
#include <utility>

#include "absl/status/status.h"
#include "absl/synchronization/blocking_counter.h"
#include "absl/synchronization/mutex.h"
#include "graph/status_macros.h"

namespace rill {

absl::StatusOr<std::unique_ptr<JobEndWatch>> JobEndWatch::Create(
    const ClusterSpec& cluster, const JobEndWatchOptions& options) {
  auto watch = std::unique_ptr<JobEndWatch>(new JobEndWatch(options));
  for (const char* job : {"chief", "worker"}) {
    for (const int task : cluster.TaskIndices(job)) {
      ASSIGN_OR_RETURN(const std::string address, cluster.TaskAddress(job, task));
      RpcClientOptions client;
      client.address = address;
      // Over tcp only: a worker's ipc endpoint says nothing more about it.
      client.prefer_ipc = false;
      client.curve = options.curve;
      ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> connected, RpcClient::Connect(client));
      watch->workers_.push_back(std::move(connected));
    }
  }
  if (watch->workers_.empty()) {
    return absl::InvalidArgumentError(
        "the cluster has no chief or worker task whose end would end the job");
  }
  return watch;
}

bool JobEndWatch::Poll() {
  absl::Mutex mu;
  bool chief_answered = false;
  bool any_answered = false;
  absl::BlockingCounter pending(static_cast<int>(workers_.size()));
  const absl::Time deadline = absl::Now() + options_.ping_timeout;
  for (size_t i = 0; i < workers_.size(); ++i) {
    workers_[i]->Call("_ping", {}, deadline, [&, i](absl::Status status, RpcMessage) {
      if (status.ok()) {
        absl::MutexLock lock(&mu);
        any_answered = true;
        chief_answered = chief_answered || i == 0;
      }
      pending.DecrementCount();
    });
  }
  pending.Wait();
  const absl::Time now = absl::Now();
  absl::MutexLock lock(&mu);
  chief_seen_ = chief_seen_ || chief_answered;
  if (any_answered) last_answer_ = now;
  return chief_seen_ && now - last_answer_ >= options_.grace;
}

int WaitForStopSignalOrJobEnd(JobEndWatch& watch, absl::Duration interval) {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  const timespec timeout = absl::ToTimespec(interval);
  while (true) {
    const int signal = sigtimedwait(&signals, nullptr, &timeout);
    if (signal > 0) return signal;
    if (watch.Poll()) return 0;
  }
}

}  // namespace rill
