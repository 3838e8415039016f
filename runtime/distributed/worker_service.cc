#include "runtime/distributed/worker_service.h"

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/device_spec.h"
#include "runtime/distributed/rpc_body.h"
#include "runtime/exec/continuations.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill {

PushTensorFn PushOverRpc(ChannelCache* channels) {
  return [channels](const std::string& dst_task, uint64_t step_id, std::string key, Tensor value,
                    std::function<void(absl::Status)> done) {
    absl::StatusOr<RpcClient*> peer = channels->Get(dst_task);
    if (!peer.ok()) return done(peer.status());
    PushTensorRequest request;
    request.set_step_id(step_id);
    request.set_key(std::move(key));
    std::vector<Tensor> tensors;
    if (value.IsInitialized()) {
      tensors.push_back(std::move(value));
    } else {
      request.set_is_dead(true);
    }
    (*peer)->Call("PushTensor", RpcMessage{request.SerializeAsString(), std::move(tensors)},
                  absl::InfiniteFuture(),
                  [done = std::move(done)](absl::Status status, RpcMessage) { done(status); });
  };
}

std::vector<RpcMethod> WorkerService::Methods() {
  // Only RegisterGraph blocks (it imports a graph and builds its
  // kernels); the rest start work or answer at once, on the socket thread.
  return {
      {"GetStatus", Bind(this, &WorkerService::GetStatus), true},
      {"RegisterGraph", Bind(this, &WorkerService::RegisterGraph), false},
      {"RunGraph", Bind(this, &WorkerService::RunGraph), true},
      {"DeregisterGraph", Bind(this, &WorkerService::DeregisterGraph), true},
      {"PushTensor", Bind(this, &WorkerService::PushTensor), true},
      {"AbortStep", Bind(this, &WorkerService::AbortStep), true},
  };
}

void WorkerService::GetStatus(RpcMessage, RpcDone done) {
  GetStatusReply reply;
  for (const std::string& device : worker_->device_names()) reply.add_devices(device);
  {
    absl::MutexLock lock(&mu_);
    reply.set_running_steps(static_cast<int32_t>(running_.size()));
  }
  done(absl::OkStatus(), Reply(reply));
}

void WorkerService::RegisterGraph(RpcMessage request, RpcDone done) {
  absl::StatusOr<RegisterGraphRequest> parsed =
      ParseBody<RegisterGraphRequest>(request, "RegisterGraph");
  if (!parsed.ok()) return done(parsed.status(), {});
  // A peer in this task's cluster keeps the address the cluster gives it;
  // the others (workers that joined later) are learned.
  for (const auto& [task, address] : parsed->task_addresses()) {
    if (const absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(task);
        spec.ok() && spec->job && spec->task &&
        channels_->cluster().TaskAddress(*spec->job, *spec->task).ok()) {
      continue;
    }
    if (absl::Status learned = channels_->Learn(task, address); !learned.ok()) {
      return done(absl::InvalidArgumentError(
                      absl::StrFormat("RegisterGraph: task_addresses: %s", learned.message())),
                  {});
    }
  }
  worker_->RegisterGraph(*parsed, absl::InfiniteFuture(),
                         [done = std::move(done)](absl::StatusOr<GraphRegistration> registered) {
                           if (!registered.ok()) return done(registered.status(), {});
                           RegisterGraphReply reply;
                           reply.set_graph_handle(std::move(registered->handle));
                           if (registered->idle_timeout != absl::InfiniteDuration()) {
                             reply.set_idle_timeout_ms(std::max<int64_t>(
                                 1, absl::ToInt64Milliseconds(registered->idle_timeout)));
                           }
                           done(absl::OkStatus(), Reply(reply));
                         });
}

struct WorkerService::Run {
  uint64_t connection = 0;  // The call's.
  RunGraphRequest request;
  RunGraphCall call;
  RpcDone done;
  int64_t received_micros = 0;  // When the call came (traced calls say so).
};

WorkerService::~WorkerService() { CancelRunning(absl::CancelledError("the server is stopping")); }

int WorkerService::CancelRunning(const absl::Status& status) {
  std::vector<std::shared_ptr<Run>> running;
  {
    absl::MutexLock lock(&mu_);
    running.assign(running_.begin(), running_.end());
  }
  // Outside mu_: a cancelled step may finish on this thread.
  for (const std::shared_ptr<Run>& run : running) run->call.cancellation.Cancel(status);
  const int cancelled = static_cast<int>(running.size());
  running.clear();
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](absl::flat_hash_set<std::shared_ptr<Run>>* runs) { return runs->empty(); }, &running_));
  return cancelled;
}

namespace {

// Connections remembered by the task that pushed on them: as many as a
// server keeps open, and more only if the transport stopped saying which
// closed.
constexpr size_t kMaxPushers = 1 << 16;

}  // namespace

void WorkerService::NotePusher(uint64_t connection, std::string_view key) {
  if (connection == 0) return;  // Not from a server's connection.
  {
    absl::ReaderMutexLock lock(&pushers_mu_);
    if (pushers_.contains(connection)) return;
  }
  // The key's first field is the sending device; a key that names no task
  // there is not remembered.
  absl::StatusOr<std::string> task = TaskOfDevice(key.substr(0, key.find(';')));
  if (!task.ok() || *task == worker_->task()) return;
  absl::MutexLock lock(&pushers_mu_);
  if (pushers_.size() < kMaxPushers) pushers_.try_emplace(connection, *std::move(task));
}

int WorkerService::ConnectionClosed(uint64_t connection) {
  std::optional<std::string> pusher;
  {
    absl::MutexLock lock(&pushers_mu_);
    if (auto it = pushers_.find(connection); it != pushers_.end()) {
      pusher = std::move(it->second);
      pushers_.erase(it);
    }
  }
  // A task that was killed and started again listens on another ipc
  // endpoint: a new client finds it, where the old one would send every
  // tensor by tcp from now on.
  if (pusher.has_value() && channels_->Reconnect(*pusher)) {
    OrDefault(log_)->Log(
        "%s: the connection %s pushed tensors on closed (it may have restarted): pushes to it "
        "go over a new connection",
        worker_->task(), *pusher);
  }
  std::vector<std::shared_ptr<Run>> orphans;
  {
    absl::MutexLock lock(&mu_);
    for (const std::shared_ptr<Run>& run : running_) {
      if (run->connection == connection) orphans.push_back(run);
    }
  }
  if (orphans.empty()) return 0;
  // Outside mu_: a cancelled step may finish on this thread.
  for (const std::shared_ptr<Run>& run : orphans) {
    run->call.cancellation.Cancel(
        absl::CancelledError("the connection of the step's master closed"));
  }
  OrDefault(log_)->Log(
      "%s: a master's connection closed mid-step: cancelled %d of its steps (step %d, graph %s%s)",
      worker_->task(), static_cast<int>(orphans.size()), orphans[0]->call.step_id,
      orphans[0]->call.graph_handle, orphans.size() > 1 ? ", ..." : "");
  return static_cast<int>(orphans.size());
}

void WorkerService::RunGraph(RpcMessage request, RpcDone done) {
  const int64_t received_micros = absl::ToUnixMicros(absl::Now());
  absl::StatusOr<RunGraphRequest> parsed = ParseBody<RunGraphRequest>(request, "RunGraph");
  if (!parsed.ok()) return done(parsed.status(), {});
  auto run = std::make_shared<Run>();
  run->received_micros = received_micros;
  run->connection = request.connection;
  run->request = *std::move(parsed);
  run->done = std::move(done);
  RunGraphCall& call = run->call;
  call.graph_handle = run->request.graph_handle();
  call.step_id = run->request.step_id();
  call.trace = run->request.trace();
  call.feeds = std::move(request.tensors);
  // On the transport's socket thread: quick nodes run right here, which
  // saves a small step two thread wakes.
  call.runner = RunQuickHere;
  call.abortable_by_step_id = true;
  {
    absl::MutexLock lock(&mu_);
    running_.insert(run);
  }
  worker_->RunGraph(&call, [this, run](absl::Status status) {
    RpcMessage reply;
    if (status.ok()) {
      RunGraphReply body;
      if (run->call.trace) {
        AppendStepStats(run->call.stats, body.mutable_step_stats());
        body.set_received_micros(run->received_micros);
        body.set_replied_micros(absl::ToUnixMicros(absl::Now()));
      }
      reply = Reply(body);
      reply.tensors = std::move(run->call.fetched);
    }
    RpcDone done = std::move(run->done);
    {
      absl::MutexLock lock(&mu_);
      running_.erase(run);
    }
    done(std::move(status), std::move(reply));
  });
}

void WorkerService::DeregisterGraph(RpcMessage request, RpcDone done) {
  absl::StatusOr<DeregisterGraphRequest> parsed =
      ParseBody<DeregisterGraphRequest>(request, "DeregisterGraph");
  if (!parsed.ok()) return done(parsed.status(), {});
  for (const std::string& handle : parsed->graph_handles()) worker_->DeregisterGraph(handle);
  done(absl::OkStatus(), {});
}

void WorkerService::PushTensor(RpcMessage request, RpcDone done) {
  absl::StatusOr<PushTensorRequest> parsed = ParseBody<PushTensorRequest>(request, "PushTensor");
  if (!parsed.ok()) return done(parsed.status(), {});
  const size_t expected = parsed->is_dead() ? 0 : 1;
  if (request.tensors.size() != expected) {
    return done(absl::InvalidArgumentError(
                    absl::StrFormat("PushTensor: %d tensors under '%s', expected %d%s",
                                    request.tensors.size(), parsed->key(), expected,
                                    parsed->is_dead() ? " (a dead value)" : "")),
                {});
  }
  NotePusher(request.connection, parsed->key());
  absl::Status delivered;
  {
    // The receiver's quick nodes run here, on the socket thread.
    QuickContinuationsHere quick;
    delivered = worker_->Deliver(parsed->step_id(), parsed->key(),
                                 parsed->is_dead() ? Tensor() : request.tensors[0]);
  }
  done(std::move(delivered), {});
}

void WorkerService::AbortStep(RpcMessage request, RpcDone done) {
  absl::StatusOr<AbortStepRequest> parsed = ParseBody<AbortStepRequest>(request, "AbortStep");
  if (!parsed.ok()) return done(parsed.status(), {});
  absl::Status status(static_cast<absl::StatusCode>(parsed->status_code()),
                      parsed->status_message());
  if (status.ok()) status = absl::AbortedError("the step was aborted");
  worker_->AbortStep(parsed->step_id(), status);
  done(absl::OkStatus(), {});
}

}  // namespace rill
