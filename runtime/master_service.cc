#include "runtime/master_service.h"

#include <atomic>
#include <map>
#include <tuple>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/notification.h"
#include "graph/graph.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "placement/device_set.h"
#include "runtime/remote_rendezvous.h"
#include "runtime/rpc_body.h"
#include "runtime/run_signature.h"
#include "runtime/step_plan.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill {
namespace {

// Registration and discovery are quick; a worker that takes longer is
// treated as gone.
constexpr absl::Duration kControlTimeout = absl::Seconds(30);

}  // namespace

// One registered partition per task that a Run signature touches.
struct MasterService::Plan {
  struct Part {
    std::string task;
    std::string graph_handle;
    PartitionIo io;
  };
  std::vector<Part> parts;
  std::vector<int> feed_order;  // RunSignature's.
  std::vector<int> fetch_of;
  int num_fetches = 0;
};

class MasterService::Session {
 public:
  Session(std::string handle, SessionConfig config, std::vector<std::string> devices)
      : handle_(std::move(handle)), config_(std::move(config)), devices_(std::move(devices)) {}

  const std::string& handle() const { return handle_; }
  const SessionConfig& config() const { return config_; }
  const std::vector<std::string>& devices() const { return devices_; }

  absl::Mutex mu;
  GraphDef graph_def ABSL_GUARDED_BY(mu);
  std::unique_ptr<Graph> graph ABSL_GUARDED_BY(mu);
  std::map<std::string, std::shared_ptr<const Plan>> plans ABSL_GUARDED_BY(mu);

 private:
  const std::string handle_;
  const SessionConfig config_;
  const std::vector<std::string> devices_;
};

// One RunStep in flight.
struct MasterService::Step {
  std::shared_ptr<const Plan> plan;
  uint64_t step_id = 0;
  RpcDone done;
  std::atomic<int> remaining{0};
  absl::Mutex mu;
  absl::Status status ABSL_GUARDED_BY(mu);
  std::vector<Tensor> fetched ABSL_GUARDED_BY(mu);  // By signature fetch.
};

MasterService::MasterService(const MasterServiceOptions& options)
    : options_(options),
      task_name_(
          absl::StrFormat("/job:%s/replica:0/task:%d", options.task.job, options.task.index)),
      random_(std::random_device()()),
      blocking_pool_(std::make_unique<Eigen::ThreadPool>(2, /*allow_spinning=*/false)) {}

MasterService::~MasterService() {
  // Runs what is queued first: those tasks use the rest.
  blocking_pool_.reset();
  std::vector<std::shared_ptr<Session>> sessions;
  {
    absl::MutexLock lock(&mu_);
    for (auto& [handle, session] : sessions_) sessions.push_back(session);
    sessions_.clear();
  }
  for (const auto& session : sessions) {
    absl::MutexLock lock(&session->mu);
    for (const auto& [key, plan] : session->plans) Deregister(*plan);
  }
}

const std::vector<std::string>& MasterService::Methods() {
  static const auto* const methods = new std::vector<std::string>{
      "CreateSession", "ExtendSession", "RunStep", "CloseSession", "ListDevices"};
  return *methods;
}

void MasterService::Handle(const std::string& method, RpcMessage request, RpcDone done) {
  // A step whose plan exists starts at once; everything that may wait for
  // other tasks (discovery, registration) runs on the master's own threads.
  if (method == "RunStep") return RunStep(std::move(request), std::move(done));
  auto call = std::make_shared<std::pair<RpcMessage, RpcDone>>(std::move(request), std::move(done));
  const auto later = [this, call](void (MasterService::*handler)(RpcMessage, RpcDone)) {
    blocking_pool_->Schedule([this, call, handler] {
      (this->*handler)(std::move(call->first), std::move(call->second));
    });
  };
  if (method == "CreateSession") return later(&MasterService::CreateSession);
  if (method == "ExtendSession") return later(&MasterService::ExtendSession);
  if (method == "CloseSession") return later(&MasterService::CloseSession);
  if (method == "ListDevices") return later(&MasterService::ListDevices);
  call->second(absl::UnimplementedError(absl::StrFormat("the master has no method '%s'", method)),
               {});
}

absl::StatusOr<MasterService::WorkerCall> MasterService::Worker(const std::string& task) {
  if (task == task_name_ && options_.local_worker != nullptr) {
    WorkerService* worker = options_.local_worker;
    return WorkerCall(
        [worker](const std::string& method, RpcMessage request, absl::Time, RpcDone done) {
          worker->Handle(method, std::move(request), std::move(done));
        });
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<RpcClient>& client = workers_[task];
  if (client == nullptr) {
    ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(task));
    ASSIGN_OR_RETURN(const std::string address,
                     options_.cluster.TaskAddress(spec.job.value_or(""), spec.task.value_or(-1)));
    RpcClientOptions client_options;
    client_options.address = address;
    client_options.inline_callbacks = true;  // Every WorkerCall callback here is quick.
    ASSIGN_OR_RETURN(client, RpcClient::Connect(client_options));
  }
  RpcClient* raw = client.get();
  return WorkerCall([raw, task](const std::string& method, RpcMessage request, absl::Time deadline,
                                RpcDone done) {
    raw->Call(method, std::move(request), deadline,
              [task, done = std::move(done)](absl::Status status, RpcMessage reply) {
                if (!status.ok() && (status.code() == absl::StatusCode::kUnavailable ||
                                     status.code() == absl::StatusCode::kDeadlineExceeded)) {
                  // The transport's words name the address; say which task.
                  status = absl::Status(status.code(),
                                        absl::StrFormat("%s: %s", task, status.message()));
                }
                done(std::move(status), std::move(reply));
              });
  });
}

absl::StatusOr<RpcMessage> MasterService::CallWorker(const std::string& task,
                                                     const std::string& method, RpcMessage request,
                                                     absl::Time deadline) {
  ASSIGN_OR_RETURN(WorkerCall call, Worker(task));
  absl::Notification finished;
  absl::Status status;
  RpcMessage reply;
  call(method, std::move(request), deadline, [&](absl::Status s, RpcMessage r) {
    status = std::move(s);
    reply = std::move(r);
    finished.Notify();
  });
  finished.WaitForNotification();
  RETURN_IF_ERROR(status);
  return reply;
}

std::vector<std::string> MasterService::DiscoverDevices() {
  const std::vector<std::string> tasks = options_.cluster.TaskNames();
  struct Answer {
    absl::Notification done;
    std::vector<std::string> devices;
  };
  std::vector<std::shared_ptr<Answer>> answers;
  const absl::Time deadline = absl::Now() + options_.discovery_timeout;
  for (const std::string& task : tasks) {
    auto answer = std::make_shared<Answer>();
    answers.push_back(answer);
    absl::StatusOr<WorkerCall> call = Worker(task);
    if (!call.ok()) {
      answer->done.Notify();
      continue;
    }
    (*call)("GetStatus", RpcMessage(), deadline, [answer](absl::Status status, RpcMessage reply) {
      GetStatusReply parsed;
      if (status.ok() && parsed.ParseFromString(reply.body)) {
        answer->devices.assign(parsed.devices().begin(), parsed.devices().end());
      }
      answer->done.Notify();
    });
  }
  std::vector<std::string> devices;
  for (size_t t = 0; t < tasks.size(); ++t) {
    answers[t]->done.WaitForNotification();
    if (answers[t]->devices.empty()) {
      std::fprintf(options_.log, "%s did not answer device discovery; assuming %s/device:CPU:0\n",
                   tasks[t].c_str(), tasks[t].c_str());
      devices.push_back(tasks[t] + "/device:CPU:0");
    }
    for (std::string& device : answers[t]->devices) devices.push_back(std::move(device));
  }
  return devices;
}

uint64_t MasterService::NewStepId() {
  absl::MutexLock lock(&mu_);
  // Random, so that steps of masters on different tasks never collide on
  // a worker.
  return random_() >> 1;
}

void MasterService::CreateSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<CreateSessionRequest> parsed =
      ParseBody<CreateSessionRequest>(request, "CreateSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  absl::StatusOr<std::unique_ptr<Graph>> graph = ImportGraphDef(parsed->graph(), StandardOps());
  if (!graph.ok()) return done(graph.status(), {});
  std::string handle;
  {
    absl::MutexLock lock(&mu_);
    handle = absl::StrFormat("%016x", random_());
  }
  auto session = std::make_shared<Session>(handle, parsed->config(), DiscoverDevices());
  {
    absl::MutexLock lock(&session->mu);
    session->graph_def = parsed->graph();
    session->graph = *std::move(graph);
  }
  std::fprintf(options_.log,
               "Start master session %s with config: allow_soft_placement: %s "
               "log_device_placement: %s; devices: %s\n",
               handle.c_str(), parsed->config().allow_soft_placement() ? "true" : "false",
               parsed->config().log_device_placement() ? "true" : "false",
               absl::StrJoin(session->devices(), ", ").c_str());
  std::fflush(options_.log);
  {
    absl::MutexLock lock(&mu_);
    sessions_[handle] = session;
  }
  CreateSessionReply reply;
  reply.set_session_handle(handle);
  done(absl::OkStatus(), Reply(reply));
}

absl::StatusOr<std::shared_ptr<MasterService::Session>> MasterService::FindSession(
    const std::string& handle) {
  absl::MutexLock lock(&mu_);
  auto it = sessions_.find(handle);
  if (it == sessions_.end()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "session %s is not open on %s (closed, or the server restarted)", handle, task_name_));
  }
  return it->second;
}

void MasterService::ExtendSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<ExtendSessionRequest> parsed =
      ParseBody<ExtendSessionRequest>(request, "ExtendSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(parsed->session_handle());
  if (!session.ok()) return done(session.status(), {});
  absl::MutexLock lock(&(*session)->mu);
  for (const NodeDef& node : parsed->graph().node()) {
    if ((*session)->graph->FindNode(node.name()) != nullptr) {
      return done(absl::InvalidArgumentError(absl::StrFormat(
                      "GraphDef argument to Extend includes node '%s', which was created by a "
                      "previous call to Create or Extend in this session.",
                      node.name())),
                  {});
    }
  }
  GraphDef merged = (*session)->graph_def;
  merged.mutable_node()->MergeFrom(parsed->graph().node());
  merged.mutable_library()->MergeFrom(parsed->graph().library());
  absl::StatusOr<std::unique_ptr<Graph>> graph = ImportGraphDef(merged, StandardOps());
  if (!graph.ok()) return done(graph.status(), {});
  (*session)->graph_def = std::move(merged);
  (*session)->graph = *std::move(graph);
  done(absl::OkStatus(), {});
}

absl::StatusOr<std::shared_ptr<const MasterService::Plan>> MasterService::CachedPlan(
    Session& session, const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  absl::MutexLock lock(&session.mu);
  ASSIGN_OR_RETURN(const RunSignature sig, ResolveNames(*session.graph, feeds, fetches, targets));
  auto it = session.plans.find(sig.key);
  return it == session.plans.end() ? nullptr : it->second;
}

absl::StatusOr<std::shared_ptr<const MasterService::Plan>> MasterService::BuildPlan(
    Session& session, const std::vector<std::string>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  auto plan = std::make_shared<Plan>();
  std::string key;
  PartitionedStep step;
  {
    absl::MutexLock lock(&session.mu);
    ASSIGN_OR_RETURN(const RunSignature sig, ResolveNames(*session.graph, feeds, fetches, targets));
    if (auto it = session.plans.find(sig.key); it != session.plans.end()) return it->second;
    ASSIGN_OR_RETURN(const DeviceSet device_set, DeviceSet::Create(session.devices()));
    StepPlanParams params;
    params.graph = session.graph.get();
    ASSIGN_OR_RETURN(params.nodes, Prune(*session.graph, sig));
    params.feeds = sig.feeds;
    params.fetches = sig.fetches;
    params.device_set = &device_set;
    params.placer.allow_soft_placement = session.config().allow_soft_placement();
    params.placer.default_device = task_name_ + "/device:CPU:0";
    if (session.config().log_device_placement()) params.placement_log = options_.log;
    ASSIGN_OR_RETURN(step, PartitionStep(params));
    key = sig.key;
    plan->feed_order = sig.feed_order;
    plan->fetch_of = sig.fetch_of;
    plan->num_fetches = static_cast<int>(sig.fetches.size());
  }

  // Registration waits for other tasks: not under the session's lock,
  // which steps of built plans take.
  for (auto& [device, partition] : step.partitions) {
    ASSIGN_OR_RETURN(std::string task, TaskOfDevice(device));
    RegisterGraphRequest request;
    request.set_session_handle(session.handle());
    *request.mutable_graph() = std::move(partition);
    const PartitionIo& io = step.io[device];
    for (const std::string& feed : io.feed_nodes) request.add_feeds(feed);
    for (const std::string& fetch : io.fetch_names) request.add_fetches(fetch);
    absl::StatusOr<RpcMessage> reply =
        CallWorker(task, "RegisterGraph", RpcMessage{request.SerializeAsString(), {}},
                   absl::Now() + kControlTimeout);
    RegisterGraphReply registered;
    if (reply.ok() && !registered.ParseFromString(reply->body)) {
      reply = absl::InternalError(absl::StrFormat("%s sent a malformed RegisterGraph reply", task));
    }
    if (!reply.ok()) {
      Deregister(*plan);
      return reply.status();
    }
    plan->parts.push_back(Plan::Part{task, registered.graph_handle(), io});
  }
  absl::MutexLock lock(&session.mu);
  auto [it, inserted] = session.plans.emplace(key, plan);
  // Another step of this signature got there first: keep one plan.
  if (!inserted) Deregister(*plan);
  return it->second;
}

void MasterService::Deregister(const Plan& plan) {
  for (const Plan::Part& part : plan.parts) {
    absl::StatusOr<WorkerCall> call = Worker(part.task);
    if (!call.ok()) continue;
    DeregisterGraphRequest request;
    request.add_graph_handles(part.graph_handle);
    (*call)("DeregisterGraph", RpcMessage{request.SerializeAsString(), {}},
            absl::Now() + kControlTimeout, [](absl::Status, RpcMessage) {});
  }
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
  absl::StatusOr<std::shared_ptr<Session>> session = FindSession(parsed->session_handle());
  if (!session.ok()) return done(session.status(), {});
  const std::vector<std::string> feeds(parsed->feeds().begin(), parsed->feeds().end());
  const std::vector<std::string> fetches(parsed->fetches().begin(), parsed->fetches().end());
  const std::vector<std::string> targets(parsed->targets().begin(), parsed->targets().end());
  absl::StatusOr<std::shared_ptr<const Plan>> plan = CachedPlan(**session, feeds, fetches, targets);
  if (!plan.ok()) return done(plan.status(), {});
  if (*plan != nullptr) return StartStep(*plan, *parsed, std::move(request), std::move(done));
  auto call = std::make_shared<std::tuple<RunStepRequest, RpcMessage, RpcDone>>(
      *std::move(parsed), std::move(request), std::move(done));
  blocking_pool_->Schedule([this, session = *session, feeds, fetches, targets, call] {
    auto& [parsed, request, done] = *call;
    absl::StatusOr<std::shared_ptr<const Plan>> built =
        BuildPlan(*session, feeds, fetches, targets);
    if (!built.ok()) return done(built.status(), {});
    StartStep(*built, parsed, std::move(request), std::move(done));
  });
}

void MasterService::StartStep(std::shared_ptr<const Plan> plan, const RunStepRequest& parsed,
                              RpcMessage request, RpcDone done) {
  auto* step = new Step();
  step->plan = std::move(plan);
  step->step_id = NewStepId();
  step->done = std::move(done);
  step->remaining.store(static_cast<int>(step->plan->parts.size()));
  {
    absl::MutexLock lock(&step->mu);
    step->fetched.resize(step->plan->num_fetches);
  }
  const absl::Time deadline = parsed.timeout_in_ms() > 0
                                  ? absl::Now() + absl::Milliseconds(parsed.timeout_in_ms())
                                  : absl::InfiniteFuture();
  const auto finish = [this](Step* step) {
    absl::Status status;
    RpcMessage reply;
    {
      absl::MutexLock lock(&step->mu);
      status = step->status;
      if (status.ok()) {
        for (int f : step->plan->fetch_of) reply.tensors.push_back(step->fetched[f]);
      }
    }
    RpcDone done = std::move(step->done);
    delete step;
    done(std::move(status), std::move(reply));
  };
  // `step` may be gone once the last part has been started.
  const std::shared_ptr<const Plan> step_plan = step->plan;
  const uint64_t step_id = step->step_id;
  if (step_plan->parts.empty()) return finish(step);
  // This task's part goes last: its quick nodes run on this thread before
  // the call returns, and the other tasks should not wait for them.
  std::vector<size_t> order;
  for (size_t p = 0; p < step_plan->parts.size(); ++p) {
    if (step_plan->parts[p].task != task_name_) order.push_back(p);
  }
  for (size_t p = 0; p < step_plan->parts.size(); ++p) {
    if (step_plan->parts[p].task == task_name_) order.push_back(p);
  }
  for (const size_t p : order) {
    const Plan::Part& part = step_plan->parts[p];
    RunGraphRequest run;
    run.set_graph_handle(part.graph_handle);
    run.set_step_id(step_id);
    RpcMessage message{run.SerializeAsString(), {}};
    for (int j : part.io.feeds)
      message.tensors.push_back(request.tensors[step_plan->feed_order[j]]);
    const auto part_done = [this, step, p, finish](absl::Status status, RpcMessage reply) {
      const Plan::Part& part = step->plan->parts[p];
      bool first_error = false;
      {
        absl::MutexLock lock(&step->mu);
        if (status.ok() && reply.tensors.size() != part.io.fetches.size()) {
          status = absl::InternalError(absl::StrFormat("%s returned %d tensors for %d fetches",
                                                       part.task, reply.tensors.size(),
                                                       part.io.fetches.size()));
        }
        if (status.ok()) {
          for (size_t f = 0; f < part.io.fetches.size(); ++f) {
            step->fetched[part.io.fetches[f]] = std::move(reply.tensors[f]);
          }
        } else if (step->status.ok()) {
          step->status = status;
          first_error = true;
        }
      }
      if (first_error) {
        // The other tasks' receives would wait for tensors that never come.
        AbortStepRequest abort;
        abort.set_step_id(step->step_id);
        abort.set_status_code(static_cast<int>(status.code()));
        abort.set_status_message(std::string(status.message()));
        for (const Plan::Part& other : step->plan->parts) {
          absl::StatusOr<WorkerCall> call = Worker(other.task);
          if (!call.ok()) continue;
          (*call)("AbortStep", RpcMessage{abort.SerializeAsString(), {}},
                  absl::Now() + kControlTimeout, [](absl::Status, RpcMessage) {});
        }
      }
      if (step->remaining.fetch_sub(1) == 1) finish(step);
    };
    absl::StatusOr<WorkerCall> call = Worker(part.task);
    if (!call.ok()) {
      part_done(call.status(), {});
      continue;
    }
    (*call)("RunGraph", std::move(message), deadline, part_done);
  }
}

void MasterService::CloseSession(RpcMessage request, RpcDone done) {
  absl::StatusOr<CloseSessionRequest> parsed =
      ParseBody<CloseSessionRequest>(request, "CloseSession");
  if (!parsed.ok()) return done(parsed.status(), {});
  std::shared_ptr<Session> session;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = sessions_.find(parsed->session_handle()); it != sessions_.end()) {
      session = std::move(it->second);
      sessions_.erase(it);
    }
  }
  if (session != nullptr) {
    absl::MutexLock lock(&session->mu);
    for (const auto& [key, plan] : session->plans) Deregister(*plan);
  }
  done(absl::OkStatus(), {});
}

void MasterService::ListDevices(RpcMessage, RpcDone done) {
  GetStatusReply reply;
  for (const std::string& device : DiscoverDevices()) reply.add_devices(device);
  done(absl::OkStatus(), Reply(reply));
}

}  // namespace rill
