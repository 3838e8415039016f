#include "runtime/distributed/server.h"

#include <pthread.h>

#include <algorithm>
#include <csignal>
#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "transport/host_address.h"

namespace rill {
namespace {

// "HOST:PORT" -> host and port (the cluster spec has checked the form).
std::pair<std::string, std::string> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, ""};
  return {address.substr(0, colon), address.substr(colon + 1)};
}

absl::StatusOr<std::string> BindAddress(const ServerOptions& options, const std::string& task) {
  const auto [host, port] = SplitHostPort(task);
  if (options.bind.empty()) {
    absl::StatusOr<std::string> bind_host = BindableHost(host);
    if (!bind_host.ok()) {
      const TaskId& id = options.config.task;
      return absl::Status(bind_host.status().code(),
                          absl::StrFormat("job '%s' task %d at '%s': %s", id.job, id.index, task,
                                          bind_host.status().message()));
    }
    return absl::StrFormat("tcp://%s:%s", *bind_host, port);
  }
  auto [bind_host, bind_port] = SplitHostPort(options.bind);
  if (bind_port.empty()) {
    bind_host = options.bind;
    bind_port = port;
  } else if (bind_host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--bind '%s': expected HOST or HOST:PORT", options.bind));
  }
  absl::StatusOr<std::string> bindable = BindableHost(bind_host);
  if (!bindable.ok()) {
    return absl::Status(bindable.status().code(), absl::StrFormat("--bind '%s': %s", options.bind,
                                                                  bindable.status().message()));
  }
  return absl::StrFormat("tcp://%s:%s", *bindable, bind_port);
}

absl::StatusOr<std::shared_ptr<const CurveKeys>> CurveKeysOf(const ServerOptions& options) {
  if (options.curve != nullptr || options.config.curve_keys.empty()) return options.curve;
  ASSIGN_OR_RETURN(CurveKeys keys, LoadCurveKeys(options.config.curve_keys));
  return std::make_shared<const CurveKeys>(std::move(keys));
}

void LogCluster(LogSink* log, const ClusterSpec& cluster) {
  for (const std::string& job : cluster.jobs()) {
    std::vector<std::string> tasks;
    for (int index : cluster.TaskIndices(job)) {
      tasks.push_back(absl::StrFormat("%d -> %s", index, *cluster.TaskAddress(job, index)));
    }
    log->Log("Initialize channel cache for job %s -> {%s}", job.c_str(),
             absl::StrJoin(tasks, ", ").c_str());
  }
}

// The steps of a connection that closed are cancelled by the worker
// service (which outlives the transport's callbacks).
RpcConnectionClosed EndStepsOf(WorkerService* service) {
  return [service](uint64_t connection) { service->ConnectionClosed(connection); };
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  const TaskId& task = options.config.task;
  ASSIGN_OR_RETURN(const std::string address,
                   options.config.cluster.TaskAddress(task.job, task.index));
  ASSIGN_OR_RETURN(const std::string bind, BindAddress(options, address));
  // Services first: a client that reaches the port finds them there, never
  // a server still starting.
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, New(options));
  ASSIGN_OR_RETURN(std::vector<RpcMethod> methods, server->MakeServices(options, bind));
  RETURN_IF_ERROR(server->Listen(options, bind, std::move(methods)));
  server->Started(options, bind);
  return server;
}

absl::StatusOr<std::unique_ptr<Server>> Server::CreateLocal(LogSink* log) {
  ASSIGN_OR_RETURN(std::vector<std::unique_ptr<Server>> cluster,
                   CreateLocalCluster({{"localhost", 1}}, log));
  return std::move(cluster[0]);
}

absl::StatusOr<std::vector<std::unique_ptr<Server>>> Server::CreateLocalCluster(
    const std::vector<std::pair<std::string, int>>& jobs, LogSink* log) {
  ServerOptions options;
  options.log = log;
  return CreateLocalCluster(jobs, options);
}

absl::StatusOr<std::vector<std::unique_ptr<Server>>> Server::CreateLocalCluster(
    const std::vector<std::pair<std::string, int>>& jobs, const ServerOptions& base) {
  constexpr char kBind[] = "tcp://127.0.0.1:0";
  ServerOptions options = base;
  options.bind.clear();
  std::vector<std::unique_ptr<Server>> servers;
  std::map<std::string, std::vector<std::string>> addresses;
  for (const auto& [job, tasks] : jobs) {
    if (addresses.contains(job)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("local cluster: job '%s' is named twice", job));
    }
    if (tasks < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("local cluster: job '%s' needs at least one task, not %d", job, tasks));
    }
    for (int i = 0; i < tasks; ++i) {
      ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Bind(options, kBind));
      addresses[job].push_back(absl::StrFormat("127.0.0.1:%d", server->port()));
      servers.push_back(std::move(server));
    }
  }
  ASSIGN_OR_RETURN(options.config.cluster, ClusterSpec::FromJobs(addresses));
  size_t next = 0;
  for (const auto& [job, tasks] : jobs) {
    for (int i = 0; i < tasks; ++i) {
      options.config.task = TaskId{job, i};
      RETURN_IF_ERROR(servers[next++]->Serve(options, kBind));
    }
  }
  return servers;
}

absl::StatusOr<std::unique_ptr<Server>> Server::New(const ServerOptions& options) {
  auto server = std::unique_ptr<Server>(new Server());
  ASSIGN_OR_RETURN(server->curve_, CurveKeysOf(options));
  return server;
}

absl::StatusOr<std::unique_ptr<Server>> Server::Bind(const ServerOptions& options,
                                                     const std::string& bind_address) {
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, New(options));
  RETURN_IF_ERROR(server->Listen(options, bind_address, {}));
  return server;
}

absl::Status Server::Listen(const ServerOptions& options, const std::string& bind_address,
                            std::vector<RpcMethod> methods) {
  // Before the transport starts: its per-connection limit follows it.
  if (options.max_tensor_bytes > 0) SetMaxTensorBytes(options.max_tensor_bytes);
  RpcServerOptions rpc;
  rpc.bind_address = bind_address;
  rpc.bind_ipc = options.bind_ipc;
  rpc.curve = curve_;
  rpc.insecure = options.config.insecure;
  rpc.limits = options.limits.connections;
  rpc.log = options.log;
  RpcConnectionClosed closed;
  if (!methods.empty()) closed = EndStepsOf(worker_service_.get());
  ASSIGN_OR_RETURN(rpc_, RpcServer::Start(rpc, std::move(methods), std::move(closed)));
  return absl::OkStatus();
}

absl::Status Server::Serve(const ServerOptions& options, const std::string& bind_address) {
  ASSIGN_OR_RETURN(std::vector<RpcMethod> methods, MakeServices(options, bind_address));
  RETURN_IF_ERROR(rpc_->Serve(std::move(methods), EndStepsOf(worker_service_.get())));
  Started(options, bind_address);
  return absl::OkStatus();
}

absl::StatusOr<std::vector<RpcMethod>> Server::MakeServices(const ServerOptions& options,
                                                            const std::string& bind_address) {
  const TaskId& task = options.config.task;
  ASSIGN_OR_RETURN(const std::string address,
                   options.config.cluster.TaskAddress(task.job, task.index));
  target_ = "zmq://" + address;
  LogSink* const log = OrDefault(options.log);
  log_ = log;

  RpcClientOptions client_options;
  client_options.curve = curve_;
  if (!options.shared_memory) client_options.shm_min_bytes = 0;
  channels_ = std::make_unique<ChannelCache>(options.config.cluster, std::move(client_options));
  const std::string bound = bind_address.substr(bind_address.find("://") + 3);
  if (curve_ == nullptr && !IsLoopbackHost(bound)) {
    // It started only because the network is trusted (--insecure).
    log->Log(
        "warning: %s listens on %s without CURVE keys (--insecure): anyone who reaches it can "
        "read and change every variable and read tensors on the wire",
        target_.c_str(), bind_address.c_str());
  }
  WorkerOptions worker;
  worker.task = absl::StrFormat("/job:%s/replica:0/task:%d", task.job, task.index);
  worker.device_count = options.device_count;
  worker.inter_op_threads = options.inter_op_threads;
  worker.intra_op_threads = options.intra_op_threads;
  worker.registry = options.kernel_registry;
  worker.push = PushOverRpc(channels_.get());
  worker.pending_pushes = options.limits.pending_pushes;
  worker.graphs = options.limits.graphs;
  worker.log = log;
  ASSIGN_OR_RETURN(worker_, Worker::Create(worker));
  worker_service_ = std::make_unique<WorkerService>(worker_.get(), channels_.get(), log);
  MasterServiceOptions master;
  master.task = task;
  master.local_worker = worker_.get();
  master.channels = channels_.get();
  master.log = log;
  master.kernel_registry = options.kernel_registry;
  master.session_idle_timeout = options.limits.session_idle_timeout;
  master.max_sessions = options.limits.max_sessions;
  master_ = std::make_unique<MasterService>(master);
  membership_ = std::make_unique<JobMembership>(
      JobMembershipOptions{.cluster = options.config.cluster, .self = task, .log = log});
  std::vector<RpcMethod> methods = master_->Methods();
  for (RpcMethod& method : worker_service_->Methods()) methods.push_back(std::move(method));
  for (RpcMethod& method : membership_->Methods()) methods.push_back(std::move(method));
  return methods;
}

void Server::Started(const ServerOptions& options, const std::string& bind_address) {
  // Often enough that a limit of a second or two is kept to within one.
  absl::Duration shortest = options.limits.pending_pushes.deadline;
  if (options.limits.session_idle_timeout > absl::ZeroDuration()) {
    shortest = std::min(shortest, options.limits.session_idle_timeout);
  }
  shortest = std::min(shortest, options.limits.graphs.idle_timeout);
  const absl::Duration period = std::clamp(shortest / 4, absl::Milliseconds(100), absl::Seconds(1));
  janitor_ = std::thread([this, period] {
    while (!janitor_stop_.WaitForNotificationWithTimeout(period)) {
      const absl::Time now = absl::Now();
      master_->ExpireIdleSessions(now);
      worker_->ExpirePendingPushes(now);
      worker_->ExpireIdleGraphs(now);
      membership_->Expire(now);
    }
  });

  LogCluster(log_, options.config.cluster);
  log_->Log("Started server with target: %s (%s, devices %s, bound to %s%s%s)", target_.c_str(),
            worker_->task().c_str(), absl::StrJoin(worker_->device_names(), ", ").c_str(),
            bind_address.c_str(), rpc_->ipc_endpoint().empty() ? "" : " and ",
            rpc_->ipc_endpoint().c_str());
}

Server::~Server() {
  Stop();
  if (janitor_.joinable()) {
    janitor_stop_.Notify();
    janitor_.join();
  }
  // The transport first, so that no handler runs while the services go;
  // then the master (its sessions deregister from the worker), the worker,
  // and the channels the others used.
  rpc_.reset();
  membership_.reset();
  master_.reset();
  if (const int cancelled =
          worker_service_ == nullptr
              ? 0
              : worker_service_->CancelRunning(absl::CancelledError("the server is stopping"));
      cancelled > 0) {
    log_->Log("%s: cancelled %d steps still running", target_, cancelled);
  }
  worker_service_.reset();
  worker_.reset();
  channels_.reset();
}

int Server::port() const { return rpc_->port(); }

void Server::Join() { stopped_.WaitForNotification(); }

void Server::Stop() {
  if (!stopping_.exchange(true)) stopped_.Notify();
}

namespace {

sigset_t StopSignals() {
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  return signals;
}

}  // namespace

void BlockStopSignals() {
  const sigset_t signals = StopSignals();
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
}

int WaitForStopSignal() {
  const sigset_t signals = StopSignals();
  int signal = 0;
  sigwait(&signals, &signal);
  return signal;
}

}  // namespace rill
