#include "runtime/distributed/master_service.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "runtime/distributed/rpc_body.h"
#include "runtime/exec/continuations.h"
#include "runtime/session/secure_random.h"
#include "runtime/session/session_core.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill {

// The cluster as a master's sessions see it: this task's worker in
// process, the others over RPC.
class MasterService::Workers final : public WorkerCache {
 public:
  Workers(std::string task, Worker* local, ChannelCache* channels)
      : task_(std::move(task)), local_(local), channels_(channels) {}

  std::vector<std::string> Tasks() const override { return channels_->cluster().TaskNames(); }

  absl::StatusOr<WorkerInterface*> GetWorker(const std::string& task) override {
    if (task == task_) return local_;
    absl::MutexLock lock(&mu_);
    std::unique_ptr<RemoteWorker>& remote = remote_[task];
    if (remote == nullptr) {
      absl::StatusOr<RpcClient*> client = channels_->Get(task);
      if (!client.ok()) {
        remote_.erase(task);
        return client.status();
      }
      remote = std::make_unique<RemoteWorker>(task, *client, channels_);
    }
    return remote.get();
  }

 private:
  const std::string task_;
  Worker* const local_;
  ChannelCache* const channels_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<RemoteWorker>> remote_ ABSL_GUARDED_BY(mu_);
};

struct MasterService::MasterSession {
  std::string handle;
  std::unique_ptr<SessionCore> core;
  // Guarded by the service's mu_.
  absl::Time last_used;
  int running_steps = 0;
};

MasterService::MasterService(const MasterServiceOptions& options)
    : options_(options),
      task_name_(
          absl::StrFormat("/job:%s/replica:0/task:%d", options.task.job, options.task.index)),
      log_(OrDefault(options.log)),
      workers_(std::make_unique<Workers>(task_name_, options.local_worker, options.channels)),
      blocking_pool_(std::make_unique<Eigen::ThreadPool>(2, /*allow_spinning=*/false)) {}

MasterService::~MasterService() {
  // Runs what is queued first: those tasks use the rest.
  blocking_pool_.reset();
  absl::flat_hash_map<std::string, std::shared_ptr<MasterSession>> sessions;
  {
    absl::MutexLock lock(&mu_);
    sessions.swap(sessions_);
  }
  // Each core deregisters its plans as it goes.
}

std::vector<RpcMethod> MasterService::Methods() {
  // A step whose plan exists starts at once, on the socket thread; what may
  // wait for other tasks (discovery) runs on the master's own threads.
  return {
      {"CreateSession", Later(Bind(this, &MasterService::CreateSession)), true},
      {"ExtendSession", Bind(this, &MasterService::ExtendSession), false},
      {"RunStep", Bind(this, &MasterService::RunStep), true},
      {"RenewSession", Bind(this, &MasterService::RenewSession), true},
      {"CloseSession", Bind(this, &MasterService::CloseSession), false},
      {"ListDevices", Later(Bind(this, &MasterService::ListDevices)), true},
  };
}

RpcHandler MasterService::Later(RpcHandler handler) {
  return [this, handler = std::move(handler)](RpcMessage request, RpcDone done) {
    auto call =
        std::make_shared<std::pair<RpcMessage, RpcDone>>(std::move(request), std::move(done));
    blocking_pool_->Schedule(
        [handler, call] { handler(std::move(call->first), std::move(call->second)); });
  };
}

std::vector<std::string> MasterService::DiscoverDevices(const std::vector<std::string>& tasks) {
  struct Answer {
    absl::Notification done;
    std::vector<std::string> devices;
  };
  std::vector<std::shared_ptr<Answer>> answers;
  const absl::Time deadline = absl::Now() + options_.discovery_timeout;
  for (const std::string& task : tasks) {
    auto answer = answers.emplace_back(std::make_shared<Answer>());
    absl::StatusOr<WorkerInterface*> worker = workers_->GetWorker(task);
    if (!worker.ok()) {
      answer->done.Notify();
      continue;
    }
    (*worker)->ListDevices(deadline, [answer](absl::StatusOr<std::vector<std::string>> devices) {
      if (devices.ok()) answer->devices = *std::move(devices);
      answer->done.Notify();
    });
  }
  std::vector<std::string> devices;
  for (size_t t = 0; t < tasks.size(); ++t) {
    answers[t]->done.WaitForNotification();
    if (answers[t]->devices.empty()) {
      log_->Log("%s did not answer device discovery; assuming %s/device:CPU:0", tasks[t].c_str(),
                tasks[t].c_str());
      devices.push_back(tasks[t] + "/device:CPU:0");
    }
    for (std::string& device : answers[t]->devices) devices.push_back(std::move(device));
  }
  return devices;
}

void MasterService::CreateSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<CreateSessionRequest> parsed =
      ParseBody<CreateSessionRequest>(request, "CreateSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  {
    absl::MutexLock lock(&mu_);
    if (static_cast<int>(sessions_.size()) >= options_.max_sessions) {
      log_->Log("%s refuses a session: %d are open, the limit", task_name_.c_str(),
                options_.max_sessions);
      return done(absl::ResourceExhaustedError(absl::StrFormat(
                      "the master of %s holds %d sessions, its limit: close the sessions you "
                      "no longer use",
                      task_name_, options_.max_sessions)),
                  {});
    }
  }
  auto session = std::make_shared<MasterSession>();
  SessionCoreOptions core;
  session->handle = SecureRandomHex();
  // Random, so that steps of masters on different tasks never collide on a
  // worker.
  core.first_step_id = SecureRandom64() >> 1;
  core.handle = session->handle;
  core.workers = workers_.get();
  // Only the tasks the graph names are asked for their devices (and so
  // connected to): a cluster may list thousands, most of them down.
  core.devices = DiscoverDevices({task_name_});
  struct Asked {
    absl::Mutex mu;
    absl::flat_hash_set<std::string> tasks ABSL_GUARDED_BY(mu);
  };
  auto asked = std::make_shared<Asked>();
  asked->tasks.insert(task_name_);
  core.find_devices = [this, asked](const GraphDef& graph) {
    std::vector<std::string> tasks;
    {
      absl::MutexLock lock(&asked->mu);
      absl::flat_hash_set<std::string> seen_devices;
      for (const NodeDef& node : graph.node()) {
        if (!seen_devices.insert(node.device()).second) continue;
        for (std::string& task :
             options_.channels->cluster().TasksMatching(node.device(), options_.task)) {
          if (asked->tasks.insert(task).second) tasks.push_back(std::move(task));
        }
      }
    }
    return DiscoverDevices(tasks);
  };
  core.default_device = task_name_ + "/device:CPU:0";
  core.allow_soft_placement = parsed->config().allow_soft_placement();
  core.log_device_placement = parsed->config().log_device_placement();
  core.log = log_;
  core.kernel_registry = options_.kernel_registry;
  core.run_blocking = [this](std::function<void()> work) {
    blocking_pool_->Schedule(std::move(work));
  };
  absl::StatusOr<std::unique_ptr<SessionCore>> created =
      SessionCore::Create(std::move(core), parsed->graph());
  if (!created.ok()) return done(created.status(), {});
  session->core = *std::move(created);
  log_->Log(
      "Start master session %s with config: allow_soft_placement: %s "
      "log_device_placement: %s; devices: %s",
      session->handle.c_str(), parsed->config().allow_soft_placement() ? "true" : "false",
      parsed->config().log_device_placement() ? "true" : "false",
      absl::StrJoin(session->core->devices(), ", ").c_str());
  {
    absl::MutexLock lock(&mu_);
    session->last_used = absl::Now();
    sessions_[session->handle] = session;
  }
  CreateSessionReply reply;
  reply.set_session_handle(session->handle);
  reply.set_idle_timeout_ms(absl::ToInt64Milliseconds(options_.session_idle_timeout));
  done(absl::OkStatus(), Reply(reply));
}

absl::StatusOr<std::shared_ptr<MasterService::MasterSession>> MasterService::FindSession(
    const std::string& handle, int steps) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "session %s is not open on %s (closed, expired after %s without use, or the server "
        "restarted)",
        handle, task_name_, absl::FormatDuration(options_.session_idle_timeout)));
  }
  it->second->last_used = absl::Now();
  it->second->running_steps += steps;
  return it->second;
}

void MasterService::StepDone(MasterSession& session) {
  absl::MutexLock lock(&mu_);
  --session.running_steps;
  session.last_used = absl::Now();
}

int MasterService::ExpireIdleSessions(absl::Time now) {
  if (options_.session_idle_timeout <= absl::ZeroDuration()) return 0;
  std::vector<std::shared_ptr<MasterSession>> expired;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      const MasterSession& session = *it->second;
      if (session.running_steps == 0 && now - session.last_used >= options_.session_idle_timeout) {
        expired.push_back(std::move(it->second));
        sessions_.erase(it++);
      } else {
        ++it;
      }
    }
  }
  for (const std::shared_ptr<MasterSession>& session : expired) {
    const absl::Status closed = session->core->Close();
    log_->Log("Closed master session %s: unused for %s%s", session->handle,
              absl::FormatDuration(options_.session_idle_timeout),
              closed.ok() ? "" : absl::StrCat("; ", closed.message()));
  }
  return static_cast<int>(expired.size());
}

void MasterService::ExtendSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<ExtendSessionRequest> parsed =
      ParseBody<ExtendSessionRequest>(request, "ExtendSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  absl::StatusOr<std::shared_ptr<MasterSession>> session = FindSession(parsed->session_handle());
  if (!session.ok()) return done(session.status(), {});
  done((*session)->core->Extend(parsed->graph()), {});
}

void MasterService::RunStep(RpcMessage request, RpcDone done) {
  absl::StatusOr<RunStepRequest> parsed = ParseBody<RunStepRequest>(request, "RunStep");
  if (!parsed.ok()) return done(parsed.status(), {});
  if (static_cast<int>(request.tensors.size()) != parsed->feeds_size()) {
    return done(
        absl::InvalidArgumentError(absl::StrFormat("RunStep: %d tensors for %d feeds",
                                                   request.tensors.size(), parsed->feeds_size())),
        {});
  }
  absl::StatusOr<std::shared_ptr<MasterSession>> session =
      FindSession(parsed->session_handle(), /*steps=*/1);
  if (!session.ok()) return done(session.status(), {});
  // What the step reads until it is done.
  struct Call {
    std::shared_ptr<MasterSession> session;
    std::vector<std::pair<std::string, Tensor>> feeds;
    std::vector<std::string> fetches;
    std::vector<std::string> targets;
    StepRequest step;
    StepResult result;
    RpcDone done;
  };
  auto call = std::make_shared<Call>();
  call->session = *std::move(session);
  for (int i = 0; i < parsed->feeds_size(); ++i) {
    call->feeds.emplace_back(parsed->feeds(i), std::move(request.tensors[i]));
  }
  call->fetches.assign(parsed->fetches().begin(), parsed->fetches().end());
  call->targets.assign(parsed->targets().begin(), parsed->targets().end());
  call->done = std::move(done);
  call->step.options.timeout_in_ms = parsed->timeout_in_ms();
  call->step.options.trace = parsed->trace();
  call->step.feeds = call->feeds;
  call->step.fetches = call->fetches;
  call->step.targets = call->targets;
  // On the socket thread: quick nodes of this task's part run here.
  call->step.runner = RunQuickHere;
  call->session->core->RunStep(call->step, &call->result,
                               [this, call](absl::Status status) mutable {
                                 StepDone(*call->session);
                                 RpcMessage reply;
                                 if (status.ok()) {
                                   RunStepReply body;
                                   AppendStepStats(call->result.stats, body.mutable_step_stats());
                                   AppendTaskClocks(call->result.clocks, body.mutable_step_stats());
                                   body.set_placement_log(std::move(call->result.placement_log));
                                   reply = Reply(body);
                                   reply.tensors = std::move(call->result.outputs);
                                 }
                                 RpcDone done = std::move(call->done);
                                 // Before the reply: once the client has its answer, nothing of the
                                 // step holds the session.
                                 call.reset();
                                 done(std::move(status), std::move(reply));
                               });
}

void MasterService::RenewSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<RenewSessionRequest> parsed =
      ParseBody<RenewSessionRequest>(request, "RenewSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  done(FindSession(parsed->session_handle()).status(), {});
}

void MasterService::CloseSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<CloseSessionRequest> parsed =
      ParseBody<CloseSessionRequest>(request, "CloseSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  std::shared_ptr<MasterSession> session;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = sessions_.find(parsed->session_handle()); it != sessions_.end()) {
      session = std::move(it->second);
      sessions_.erase(it);
    }
  }
  done(session == nullptr ? absl::OkStatus() : session->core->Close(), {});
}

void MasterService::ListDevices(RpcMessage, RpcDone done) {
  GetStatusReply reply;
  for (const std::string& device : DiscoverDevices(workers_->Tasks())) reply.add_devices(device);
  done(absl::OkStatus(), Reply(reply));
}

}  // namespace rill
