#include "runtime/worker_service.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "runtime/rpc_body.h"
#include "runtime/step_plan.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill {
namespace {

int Threads(int requested) {
  return requested > 0 ? requested
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

struct WorkerService::RegisteredGraph {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Executor> executor;
  int num_feeds = 0;
};

WorkerService::WorkerService(const WorkerServiceOptions& options)
    : options_(options),
      task_name_(
          absl::StrFormat("/job:%s/replica:0/task:%d", options.task.job, options.task.index)),
      inter_op_pool_(std::make_unique<Eigen::ThreadPool>(Threads(options.inter_op_threads),
                                                         /*allow_spinning=*/false)),
      device_(std::make_unique<CpuDevice>(options.intra_op_threads, task_name_ + "/device:CPU:0")),
      steps_(task_name_, [this](const std::string& dst_task, uint64_t step_id, std::string key,
                                Tensor value, std::function<void(absl::Status)> done) {
        Push(dst_task, step_id, std::move(key), std::move(value), std::move(done));
      }) {}

WorkerService::~WorkerService() {
  {
    absl::MutexLock lock(&mu_);
    graphs_.clear();
    peers_.clear();
  }
  inter_op_pool_.reset();
}

std::vector<std::string> WorkerService::devices() const { return {device_->name()}; }

const std::vector<std::string>& WorkerService::Methods() {
  static const auto* const methods = new std::vector<std::string>{
      "GetStatus", "RegisterGraph", "RunGraph", "DeregisterGraph", "PushTensor", "AbortStep"};
  return *methods;
}

std::set<std::string> WorkerService::NonBlockingMethods() {
  return {"GetStatus", "RunGraph", "DeregisterGraph", "PushTensor", "AbortStep"};
}

void WorkerService::Handle(const std::string& method, RpcMessage request, RpcDone done) {
  if (method == "RunGraph") return RunGraph(std::move(request), std::move(done));
  if (method == "PushTensor") return PushTensor(std::move(request), std::move(done));
  if (method == "RegisterGraph") return RegisterGraph(std::move(request), std::move(done));
  if (method == "DeregisterGraph") return DeregisterGraph(std::move(request), std::move(done));
  if (method == "AbortStep") return AbortStep(std::move(request), std::move(done));
  if (method == "GetStatus") return GetStatus(std::move(done));
  done(absl::UnimplementedError(absl::StrFormat("the worker has no method '%s'", method)), {});
}

void WorkerService::GetStatus(RpcDone done) {
  GetStatusReply reply;
  for (const std::string& device : devices()) reply.add_devices(device);
  done(absl::OkStatus(), Reply(reply));
}

void WorkerService::RegisterGraph(RpcMessage request, RpcDone done) {
  absl::StatusOr<RegisterGraphRequest> parsed =
      ParseBody<RegisterGraphRequest>(request, "RegisterGraph");
  if (!parsed.ok()) return done(parsed.status(), {});
  const auto registered = [&]() -> absl::StatusOr<std::shared_ptr<RegisteredGraph>> {
    for (const NodeDef& node : parsed->graph().node()) {
      if (node.device() != device_->name()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "RegisterGraph: node '%s' is placed on '%s', but this task's device is '%s'",
            node.name(), node.device(), device_->name()));
      }
    }
    auto graph = std::make_shared<RegisteredGraph>();
    ASSIGN_OR_RETURN(graph->graph, ImportGraphDef(parsed->graph(), StandardOps()));
    PartitionIo io;
    io.feed_nodes.assign(parsed->feeds().begin(), parsed->feeds().end());
    io.fetch_names.assign(parsed->fetches().begin(), parsed->fetches().end());
    Executor::Params params;
    params.device = device_.get();
    params.registry = options_.registry;
    params.inter_op_pool = inter_op_pool_.get();
    ASSIGN_OR_RETURN(graph->executor, CreatePartitionExecutor(*graph->graph, io, params));
    graph->num_feeds = parsed->feeds_size();
    return graph;
  }();
  if (!registered.ok()) return done(registered.status(), {});
  RegisterGraphReply reply;
  reply.set_graph_handle(absl::StrFormat("%s/graph-%d", task_name_, next_graph_.fetch_add(1)));
  {
    absl::MutexLock lock(&mu_);
    graphs_[reply.graph_handle()] = *registered;
  }
  done(absl::OkStatus(), Reply(reply));
}

void WorkerService::RunGraph(RpcMessage request, RpcDone done) {
  absl::StatusOr<RunGraphRequest> parsed = ParseBody<RunGraphRequest>(request, "RunGraph");
  if (!parsed.ok()) return done(parsed.status(), {});
  std::shared_ptr<RegisteredGraph> graph;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = graphs_.find(parsed->graph_handle()); it != graphs_.end()) graph = it->second;
  }
  if (graph == nullptr) {
    return done(absl::NotFoundError(absl::StrFormat("RunGraph: no graph '%s' on %s",
                                                    parsed->graph_handle(), task_name_)),
                {});
  }
  if (static_cast<int>(request.tensors.size()) != graph->num_feeds) {
    return done(absl::InvalidArgumentError(absl::StrFormat(
                    "RunGraph: %d tensors for the %d feeds of '%s'", request.tensors.size(),
                    graph->num_feeds, parsed->graph_handle())),
                {});
  }
  const uint64_t step_id = parsed->step_id();
  std::shared_ptr<RemoteRendezvous> rendezvous = steps_.FindOrCreate(step_id);
  if (rendezvous == nullptr) {
    return done(
        absl::AbortedError(absl::StrFormat("step %d has already ended on %s", step_id, task_name_)),
        {});
  }
  struct Run {
    std::shared_ptr<RegisteredGraph> graph;
    std::shared_ptr<RemoteRendezvous> rendezvous;
    std::vector<Tensor> feeds;
    std::vector<Tensor> fetched;
    Executor::Args args;
    RpcDone done;
  };
  auto* run = new Run{graph, rendezvous, std::move(request.tensors), {}, {}, std::move(done)};
  run->args.step_id = static_cast<int64_t>(step_id);
  run->args.feeds = run->feeds;
  run->args.rendezvous = run->rendezvous.get();
  // Called on the transport's socket thread: quick nodes run right here,
  // which saves a small step two thread wakes.
  graph->executor->RunAsyncQuickHere(run->args, &run->fetched,
                                     [this, run, step_id](absl::Status status) {
    steps_.End(step_id, status);
    RpcMessage reply;
    if (status.ok()) reply.tensors = std::move(run->fetched);
    RpcDone done = std::move(run->done);
    delete run;
    done(std::move(status), std::move(reply));
  });
}

void WorkerService::DeregisterGraph(RpcMessage request, RpcDone done) {
  absl::StatusOr<DeregisterGraphRequest> parsed =
      ParseBody<DeregisterGraphRequest>(request, "DeregisterGraph");
  if (!parsed.ok()) return done(parsed.status(), {});
  {
    absl::MutexLock lock(&mu_);
    for (const std::string& handle : parsed->graph_handles()) graphs_.erase(handle);
  }
  done(absl::OkStatus(), {});
}

void WorkerService::PushTensor(RpcMessage request, RpcDone done) {
  absl::StatusOr<PushTensorRequest> parsed = ParseBody<PushTensorRequest>(request, "PushTensor");
  if (!parsed.ok()) return done(parsed.status(), {});
  if (request.tensors.size() != 1) {
    return done(
        absl::InvalidArgumentError(absl::StrFormat("PushTensor: %d tensors under '%s', expected 1",
                                                   request.tensors.size(), parsed->key())),
        {});
  }
  std::shared_ptr<RemoteRendezvous> step = steps_.FindOrCreate(parsed->step_id());
  // A push for a step that ended here (aborted) has no receiver left.
  if (step == nullptr) return done(absl::OkStatus(), {});
  absl::Status delivered;
  {
    // The receiver's quick nodes run here, on the socket thread.
    QuickContinuationsHere quick;
    delivered = step->Deliver(parsed->key(), request.tensors[0]);
  }
  done(std::move(delivered), {});
}

void WorkerService::AbortStep(RpcMessage request, RpcDone done) {
  absl::StatusOr<AbortStepRequest> parsed = ParseBody<AbortStepRequest>(request, "AbortStep");
  if (!parsed.ok()) return done(parsed.status(), {});
  absl::Status status(static_cast<absl::StatusCode>(parsed->status_code()),
                      parsed->status_message());
  if (status.ok()) status = absl::AbortedError("the step was aborted");
  steps_.End(parsed->step_id(), status);
  done(absl::OkStatus(), {});
}

absl::StatusOr<RpcClient*> WorkerService::Peer(const std::string& task) {
  absl::MutexLock lock(&mu_);
  std::unique_ptr<RpcClient>& peer = peers_[task];
  if (peer == nullptr) {
    ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(task));
    ASSIGN_OR_RETURN(const std::string address,
                     options_.cluster.TaskAddress(spec.job.value_or(""), spec.task.value_or(-1)));
    RpcClientOptions client;
    client.address = address;
    client.inline_callbacks = true;  // Push's callback only starts an abort.
    ASSIGN_OR_RETURN(peer, RpcClient::Connect(client));
  }
  return peer.get();
}

void WorkerService::Push(const std::string& dst_task, uint64_t step_id, std::string key,
                         Tensor value, std::function<void(absl::Status)> done) {
  absl::StatusOr<RpcClient*> peer = Peer(dst_task);
  if (!peer.ok()) return done(peer.status());
  PushTensorRequest request;
  request.set_step_id(step_id);
  request.set_key(std::move(key));
  (*peer)->Call("PushTensor", RpcMessage{request.SerializeAsString(), {std::move(value)}},
                absl::InfiniteFuture(),
                [done = std::move(done)](absl::Status status, RpcMessage) { done(status); });
}

}  // namespace rill
