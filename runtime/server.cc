#include "runtime/server.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// "HOST:PORT" -> host and port (the cluster spec has checked the form).
std::pair<std::string, std::string> SplitHostPort(const std::string& address) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos) return {address, ""};
  return {address.substr(0, colon), address.substr(colon + 1)};
}

// ZeroMQ binds interfaces and addresses, not host names.
std::string BindableHost(const std::string& host) {
  return host == "localhost" ? "127.0.0.1" : host;
}

absl::StatusOr<std::string> BindAddress(const ServerOptions& options, const std::string& task) {
  const auto [host, port] = SplitHostPort(task);
  if (options.bind.empty()) return absl::StrFormat("tcp://%s:%s", BindableHost(host), port);
  const auto [bind_host, bind_port] = SplitHostPort(options.bind);
  if (bind_port.empty()) return absl::StrFormat("tcp://%s:%s", BindableHost(options.bind), port);
  if (bind_host.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("--bind '%s': expected HOST or HOST:PORT", options.bind));
  }
  return absl::StrFormat("tcp://%s:%s", BindableHost(bind_host), bind_port);
}

void LogCluster(std::FILE* log, const ClusterSpec& cluster) {
  for (const std::string& job : cluster.jobs()) {
    std::vector<std::string> tasks;
    for (int index : cluster.TaskIndices(job)) {
      tasks.push_back(absl::StrFormat("%d -> %s", index, *cluster.TaskAddress(job, index)));
    }
    std::fprintf(log, "Initialize channel cache for job %s -> {%s}\n", job.c_str(),
                 absl::StrJoin(tasks, ", ").c_str());
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& options) {
  const TaskId& task = options.config.task;
  ASSIGN_OR_RETURN(const std::string address,
                   options.config.cluster.TaskAddress(task.job, task.index));
  ASSIGN_OR_RETURN(const std::string bind, BindAddress(options, address));
  return Start(options, bind, /*local=*/false);
}

absl::StatusOr<std::unique_ptr<Server>> Server::CreateLocal(std::FILE* log) {
  ServerOptions options;
  options.log = log;
  options.config.task = TaskId{"localhost", 0};
  return Start(options, "tcp://127.0.0.1:0", /*local=*/true);
}

absl::StatusOr<std::unique_ptr<Server>> Server::Start(const ServerOptions& given,
                                                      const std::string& bind_address, bool local) {
  auto server = std::unique_ptr<Server>(new Server());
  RpcServerOptions rpc;
  rpc.bind_address = bind_address;
  rpc.bind_ipc = given.bind_ipc;
  rpc.inline_methods = WorkerService::NonBlockingMethods();
  for (const std::string& method : MasterService::Methods()) rpc.inline_methods.insert(method);
  std::map<std::string, RpcServer::Handler> handlers;
  Server* raw = server.get();
  for (const auto* methods : {&MasterService::Methods(), &WorkerService::Methods()}) {
    for (const std::string& method : *methods) {
      handlers[method] = [raw, method](RpcMessage request, RpcDone done) {
        raw->Handle(method, std::move(request), std::move(done));
      };
    }
  }
  ASSIGN_OR_RETURN(server->rpc_, RpcServer::Start(rpc, std::move(handlers)));

  ServerOptions options = given;
  if (local) {
    // The port is known only now.
    ASSIGN_OR_RETURN(
        options.config.cluster,
        ClusterSpec::FromJobs({{"localhost", {absl::StrFormat("127.0.0.1:%d", server->port())}}}));
  }
  const TaskId& task = options.config.task;
  ASSIGN_OR_RETURN(const std::string address,
                   options.config.cluster.TaskAddress(task.job, task.index));
  server->target_ = "zmq://" + address;

  WorkerServiceOptions worker;
  worker.cluster = options.config.cluster;
  worker.task = task;
  worker.inter_op_threads = options.inter_op_threads;
  worker.intra_op_threads = options.intra_op_threads;
  server->worker_ = std::make_unique<WorkerService>(worker);
  MasterServiceOptions master;
  master.cluster = options.config.cluster;
  master.task = task;
  master.local_worker = server->worker_.get();
  master.log = options.log;
  server->master_ = std::make_unique<MasterService>(master);
  server->ready_.store(true, std::memory_order_release);

  LogCluster(options.log, options.config.cluster);
  std::fprintf(
      options.log, "Started server with target: %s (/job:%s/replica:0/task:%d, bound to %s%s%s)\n",
      server->target_.c_str(), task.job.c_str(), task.index, bind_address.c_str(),
      server->rpc_->ipc_endpoint().empty() ? "" : " and ", server->rpc_->ipc_endpoint().c_str());
  std::fflush(options.log);
  return server;
}

Server::~Server() {
  Stop();
  // Stop the transport before the services its handlers call.
  rpc_.reset();
  master_.reset();
  worker_.reset();
}

int Server::port() const { return rpc_->port(); }

void Server::Join() { stopped_.WaitForNotification(); }

void Server::Stop() {
  if (!stopping_.exchange(true)) stopped_.Notify();
}

void Server::Handle(const std::string& method, RpcMessage request, RpcDone done) {
  if (!ready_.load(std::memory_order_acquire)) {
    return done(absl::UnavailableError("the server is still starting"), {});
  }
  for (const std::string& name : MasterService::Methods()) {
    if (name == method) return master_->Handle(method, std::move(request), std::move(done));
  }
  worker_->Handle(method, std::move(request), std::move(done));
}

}  // namespace rill
