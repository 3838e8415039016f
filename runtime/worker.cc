#include "runtime/worker.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/device_spec.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "runtime/device_factory.h"
#include "runtime/executor.h"
#include "runtime/local_rendezvous.h"
#include "runtime/secure_random.h"

namespace rill {
namespace {

int Threads(int requested) {
  return requested > 0 ? requested
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// The task at the other end of a _Send (its receiver) or a _Recv (its
// sender).
absl::StatusOr<std::string> PeerTask(const NodeDef& node) {
  ASSIGN_OR_RETURN(const std::string device,
                   GetStringAttr(node, node.op() == "_Send" ? "recv_device" : "send_device"));
  return TaskOfDevice(device);
}

// An executor for one imported partition, feeding its placeholders and
// fetching its "node:k" names.
absl::StatusOr<std::unique_ptr<Executor>> PartitionExecutor(
    const Graph& graph, const std::vector<std::string>& feed_nodes,
    const std::vector<std::string>& fetch_names, Executor::Params params) {
  params.graph = &graph;
  absl::flat_hash_set<std::string> fed(feed_nodes.begin(), feed_nodes.end());
  for (const std::string& name : feed_nodes) {
    params.feeds.push_back(TensorEndpoint{graph.FindNode(name), 0});
  }
  for (const Node* node : graph.nodes()) {
    if (!fed.contains(node->name())) params.nodes.push_back(node);
  }
  for (const std::string& name : fetch_names) {
    ASSIGN_OR_RETURN(const TensorId id, ParseTensorName(name));
    const Node* node = graph.FindNode(id.node);
    if (id.index < 0 || id.index >= node->num_outputs()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("RegisterGraph: fetch '%s': node '%s' has %d outputs", name, node->name(),
                          node->num_outputs()));
    }
    params.fetches.push_back(TensorEndpoint{node, id.index});
  }
  return Executor::Create(params);
}

// Copies each of `tensors`, in place, from the host to `device` (or back,
// `to_device` false), then calls `done` once with the first error.
void CopyAll(Device* device, std::vector<Tensor>* tensors, bool to_device,
             std::function<void(absl::Status)> done) {
  if (tensors->empty()) return done(absl::OkStatus());
  struct Pending {
    std::atomic<size_t> left;
    absl::Mutex mu;
    absl::Status status ABSL_GUARDED_BY(mu);
    std::function<void(absl::Status)> done;
  };
  auto pending = std::make_shared<Pending>();
  pending->left.store(tensors->size(), std::memory_order_relaxed);
  pending->done = std::move(done);
  const auto one_done = [pending](absl::Status status) {
    if (!status.ok()) {
      absl::MutexLock lock(&pending->mu);
      pending->status.Update(status);
    }
    // Acq_rel: the last copy to finish sees the others' results.
    if (pending->left.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    absl::Status first;
    {
      absl::MutexLock lock(&pending->mu);
      first = pending->status;
    }
    pending->done(std::move(first));
  };
  for (Tensor& tensor : *tensors) {
    // The copy keeps its source alive while `tensor` is replaced.
    const Tensor source = tensor;
    if (to_device) {
      device->CopyFromHost(source, &tensor, one_done);
    } else {
      device->CopyToHost(source, &tensor, one_done);
    }
  }
}

bool IsIdentity(const std::vector<int>& indices, int n) {
  if (static_cast<int>(indices.size()) != n) return false;
  for (int i = 0; i < n; ++i) {
    if (indices[i] != i) return false;
  }
  return true;
}

}  // namespace

struct Worker::Partition {
  Device* device = nullptr;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Executor> executor;
  std::vector<int> feeds;    // Index into RunGraphCall::feeds, per executor feed.
  std::vector<int> fetches;  // Index into RunGraphCall::fetched, per executor fetch.
};

struct Worker::RegisteredGraph {
  std::vector<Partition> partitions;
  int num_feeds = 0;
  int num_fetches = 0;
  // A _Send or _Recv talks to another task: the steps' rendezvous lives
  // in the step table, where the other task's pushes find it.
  bool talks_to_other_tasks = false;
  // One partition whose feeds and fetches are the call's, in order: its
  // executor reads and writes the call's vectors.
  bool direct_io = false;
  int64_t bytes = 0;  // The request's, as the limits count them.
  // When a step last began (or the registration), Unix nanoseconds.
  mutable std::atomic<int64_t> last_used{0};
};

// One RunGraph in flight.
struct Worker::Step {
  std::shared_ptr<Step> self;  // Keeps the step alive until Finish.
  std::shared_ptr<const RegisteredGraph> graph;
  RunGraphCall* call = nullptr;
  std::function<void(absl::Status)> done;
  // The executors' cancellation: the call's own, or for a step with a
  // rendezvous or in the table, `cancellation`, which the call's forwards
  // to.
  StepCancellation* active = nullptr;
  StepCancellation cancellation;
  bool forwarding = false;
  StepCancellation::Token forward_token = 0;
  bool in_table = false;
  std::optional<LocalRendezvous> local_rendezvous;
  std::shared_ptr<RemoteRendezvous> remote_rendezvous;
  Rendezvous* rendezvous = nullptr;
  std::vector<Executor::Args> args;
  std::vector<std::vector<Tensor>> feeds;    // Per partition, unless direct_io.
  std::vector<std::vector<Tensor>> fetched;  // Per partition, unless direct_io.
  std::vector<std::vector<NodeExecStats>> stats;
  std::atomic<int> remaining{0};

  void Abort(const absl::Status& status) {
    cancellation.Cancel(status);
    if (rendezvous != nullptr) rendezvous->StartAbort(status);
  }
};

Worker::Worker(const WorkerOptions& options)
    : options_(options),
      // No spinning: an idle worker must not burn the CPU.
      inter_op_pool_(std::make_unique<Eigen::ThreadPool>(Threads(options.inter_op_threads),
                                                         /*allow_spinning=*/false)),
      steps_(options.task, options.push, options.pending_pushes, options.log) {}

absl::StatusOr<std::unique_ptr<Worker>> Worker::Create(const WorkerOptions& options) {
  auto worker = std::unique_ptr<Worker>(new Worker(options));
  if (options.make_devices) {
    ASSIGN_OR_RETURN(worker->devices_, options.make_devices());
  } else {
    ASSIGN_OR_RETURN(worker->devices_, CreateDevices(options.task, options.device_count,
                                                     options.intra_op_threads, options.gpu));
  }
  return worker;
}

Worker::~Worker() {
  {
    absl::MutexLock lock(&mu_);
    graphs_.clear();
  }
  inter_op_pool_.reset();
}

std::vector<std::string> Worker::device_names() const {
  std::vector<std::string> names;
  for (const auto& device : devices_) names.push_back(device->name());
  return names;
}

void Worker::ListDevices(absl::Time,
                         std::function<void(absl::StatusOr<std::vector<std::string>>)> done) {
  done(device_names());
}

absl::StatusOr<Device*> Worker::FindDevice(const std::string& name) const {
  for (const auto& device : devices_) {
    if (device->name() == name) return device.get();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("RegisterGraph: %s has no device '%s' (its devices: %s)", task(), name,
                      absl::StrJoin(device_names(), ", ")));
}

absl::StatusOr<std::shared_ptr<Worker::RegisteredGraph>> Worker::Build(
    const RegisterGraphRequest& request) {
  if (request.partitions().empty()) {
    return absl::InvalidArgumentError("RegisterGraph: the request holds no partition");
  }
  auto graph = std::make_shared<RegisteredGraph>();
  graph->num_feeds = request.feeds_size();
  graph->num_fetches = request.fetches_size();
  absl::flat_hash_map<std::string, int> feed_of;
  for (int j = 0; j < request.feeds_size(); ++j) feed_of[request.feeds(j)] = j;
  std::vector<std::string> fetch_nodes;
  for (const std::string& fetch : request.fetches()) {
    ASSIGN_OR_RETURN(const TensorId id, ParseTensorName(fetch));
    fetch_nodes.push_back(std::string(id.node));
  }
  std::vector<bool> feed_found(request.feeds_size()), fetch_found(request.fetches_size());

  // In device order, so that steps start their partitions in a stable order.
  const std::map<std::string, GraphDef> partitions(request.partitions().begin(),
                                                   request.partitions().end());
  for (const auto& [device_name, def] : partitions) {
    Partition partition;
    ASSIGN_OR_RETURN(partition.device, FindDevice(device_name));
    std::vector<std::string> feed_nodes;
    absl::flat_hash_set<std::string> names;
    for (const NodeDef& node : def.node()) {
      if (node.device() != device_name) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "RegisterGraph: node '%s' is placed on '%s', but its partition is for '%s'",
            node.name(), node.device(), device_name));
      }
      names.insert(node.name());
      if (auto it = feed_of.find(node.name()); it != feed_of.end()) {
        feed_nodes.push_back(node.name());
        partition.feeds.push_back(it->second);
        feed_found[it->second] = true;
      }
      if (node.op() != "_Send" && node.op() != "_Recv") continue;
      ASSIGN_OR_RETURN(const std::string peer, PeerTask(node));
      if (peer == task()) continue;
      graph->talks_to_other_tasks = true;
      if (node.op() == "_Send" && options_.push == nullptr) {
        return absl::InvalidArgumentError(
            absl::StrFormat("RegisterGraph: node '%s' sends to %s, but %s talks to no other task",
                            node.name(), peer, task()));
      }
    }
    std::vector<std::string> fetch_names;
    for (int j = 0; j < request.fetches_size(); ++j) {
      if (!names.contains(fetch_nodes[j])) continue;
      fetch_names.push_back(request.fetches(j));
      partition.fetches.push_back(j);
      fetch_found[j] = true;
    }
    ASSIGN_OR_RETURN(partition.graph, ImportGraphDef(def, StandardOps()));
    Executor::Params params;
    params.device = partition.device;
    params.registry = options_.registry;
    params.inter_op_pool = inter_op_pool_.get();
    params.parallel_nodes = options_.parallel_nodes;
    ASSIGN_OR_RETURN(partition.executor,
                     PartitionExecutor(*partition.graph, feed_nodes, fetch_names, params));
    graph->partitions.push_back(std::move(partition));
  }
  for (int j = 0; j < request.feeds_size(); ++j) {
    if (!feed_found[j]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("RegisterGraph: no partition holds the fed node '%s'", request.feeds(j)));
    }
  }
  for (int j = 0; j < request.fetches_size(); ++j) {
    if (!fetch_found[j]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "RegisterGraph: no partition holds the fetched tensor '%s'", request.fetches(j)));
    }
  }
  // A device with memory of its own takes its feeds and gives its fetches
  // through copies, so its partition never reads the call's vectors.
  graph->direct_io = graph->partitions.size() == 1 &&
                     graph->partitions[0].device->device_context() == nullptr &&
                     IsIdentity(graph->partitions[0].feeds, graph->num_feeds) &&
                     IsIdentity(graph->partitions[0].fetches, graph->num_fetches);
  return graph;
}

absl::Status Worker::CheckGraphRoom(int64_t bytes) {
  const RegisteredGraphLimits& limits = options_.graphs;
  const int64_t graphs = static_cast<int64_t>(graphs_.size());
  // One graph is always kept, whatever its size.
  if (graphs < limits.max_graphs && (graphs == 0 || graph_bytes_ + bytes <= limits.max_bytes)) {
    if (registrations_refused_ > 0) {
      absl::FPrintF(Log(), "%s: room for graphs again (%d registrations refused)\n", task(),
                    registrations_refused_);
      std::fflush(Log());
      registrations_refused_ = 0;
    }
    return absl::OkStatus();
  }
  if (registrations_refused_++ == 0) {
    absl::FPrintF(Log(),
                  "%s: %d registered graphs hold %d bytes (limits %d graphs, %d bytes): refusing "
                  "registrations\n",
                  task(), graphs, graph_bytes_, limits.max_graphs, limits.max_bytes);
    std::fflush(Log());
  }
  std::string expiry;
  if (limits.idle_timeout != absl::InfiniteDuration()) {
    expiry = absl::StrFormat("; a graph no step runs is forgotten after %s",
                             absl::FormatDuration(limits.idle_timeout));
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "RegisterGraph: %s holds %d registered graphs of %d bytes, and its limits are %d graphs and "
      "%d bytes (this graph: %d bytes)%s",
      task(), graphs, graph_bytes_, limits.max_graphs, limits.max_bytes, bytes, expiry));
}

void Worker::RegisterGraph(const RegisterGraphRequest& request, absl::Time,
                           std::function<void(absl::StatusOr<GraphRegistration>)> done) {
  const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
  absl::Status room;
  {
    absl::MutexLock lock(&mu_);
    room = CheckGraphRoom(bytes);  // Before the work of building it.
  }
  if (!room.ok()) return done(room);
  absl::StatusOr<std::shared_ptr<RegisteredGraph>> graph = Build(request);
  if (!graph.ok()) return done(graph.status());
  (*graph)->bytes = bytes;
  (*graph)->last_used.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  std::string handle = absl::StrFormat("%s/graph-%s", task(), SecureRandomHex());
  {
    absl::MutexLock lock(&mu_);
    room = CheckGraphRoom(bytes);
    if (room.ok()) {
      graphs_[handle] = *std::move(graph);
      graph_bytes_ += bytes;
    }
  }
  if (!room.ok()) return done(room);
  done(GraphRegistration{std::move(handle), options_.graphs.idle_timeout});
}

void Worker::DeregisterGraph(const std::string& graph_handle) {
  std::shared_ptr<const RegisteredGraph> graph;
  absl::MutexLock lock(&mu_);
  if (auto it = graphs_.find(graph_handle); it != graphs_.end()) {
    graph = std::move(it->second);
    graph_bytes_ -= graph->bytes;
    graphs_.erase(it);
  }
  // Steps still running hold their own reference.
}

int Worker::ExpireIdleGraphs(absl::Time now) {
  if (options_.graphs.idle_timeout == absl::InfiniteDuration()) return 0;
  const int64_t oldest = absl::ToUnixNanos(now - options_.graphs.idle_timeout);
  std::vector<std::shared_ptr<const RegisteredGraph>> forgotten;  // Freed after mu_.
  absl::MutexLock lock(&mu_);
  absl::erase_if(graphs_, [&](const auto& entry) {
    if (entry.second->last_used.load(std::memory_order_relaxed) >= oldest) return false;
    graph_bytes_ -= entry.second->bytes;
    forgotten.push_back(entry.second);
    return true;
  });
  if (!forgotten.empty()) {
    absl::FPrintF(Log(), "%s: forgot %d registered graphs that no step ran for %s\n", task(),
                  forgotten.size(), absl::FormatDuration(options_.graphs.idle_timeout));
    std::fflush(Log());
  }
  return static_cast<int>(forgotten.size());
}

void Worker::RunGraph(RunGraphCall* call, std::function<void(absl::Status)> done) {
  std::shared_ptr<const RegisteredGraph> graph;
  {
    absl::ReaderMutexLock lock(&mu_);
    const absl::string_view handle(call->graph_handle.data(), call->graph_handle.size());
    if (auto it = graphs_.find(handle); it != graphs_.end()) graph = it->second;
  }
  // As TensorFlow's, ABORTED: the master registered the graph, so the
  // likeliest cause is that this task restarted, and a supervised session
  // recovers by creating a new session (which registers again).
  if (graph == nullptr) {
    return done(absl::AbortedError(
        absl::StrFormat("RunGraph: no graph '%s' on %s (possibly, this task just restarted)",
                        call->graph_handle, task())));
  }
  graph->last_used.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  if (static_cast<int>(call->feeds.size()) != graph->num_feeds) {
    return done(absl::InvalidArgumentError(
        absl::StrFormat("RunGraph: %d tensors for the %d feeds of '%s'", call->feeds.size(),
                        graph->num_feeds, call->graph_handle)));
  }
  auto owned = std::make_shared<Step>();
  Step* step = owned.get();
  step->self = owned;
  step->graph = std::move(graph);
  step->call = call;
  step->done = std::move(done);
  const RegisteredGraph& g = *step->graph;
  step->in_table = g.talks_to_other_tasks || call->abortable_by_step_id;
  if (!step->in_table && g.partitions.size() == 1) {
    // Nothing to abort but the executor: it uses the call's cancellation.
    step->active = &call->cancellation;
    return Start(step);
  }
  step->active = &step->cancellation;
  if (step->in_table) {
    step->remote_rendezvous =
        steps_.Begin(call->step_id, std::shared_ptr<StepCancellation>(owned, &step->cancellation));
    if (step->remote_rendezvous == nullptr) {
      step->self.reset();
      // `owned` still holds the step until this returns.
      return step->done(absl::AbortedError(
          absl::StrFormat("step %d has already ended on %s", call->step_id, task())));
    }
    step->rendezvous = step->remote_rendezvous.get();
  } else {
    step->rendezvous = &step->local_rendezvous.emplace();
  }
  // The callback holds the step: it may still be aborting on another
  // thread when the step finishes.
  step->forwarding = call->cancellation.RegisterCallback(
      [owned](const absl::Status& status) { owned->Abort(status); }, &step->forward_token);
  if (!step->forwarding) step->Abort(call->cancellation.status());
  Start(step);
}

void Worker::Start(Step* step) const {
  const RegisteredGraph& graph = *step->graph;
  RunGraphCall& call = *step->call;
  const size_t n = graph.partitions.size();
  step->args.resize(n);
  if (!graph.direct_io) {
    step->feeds.resize(n);
    step->fetched.resize(n);
  }
  if (call.trace && n > 1) step->stats.resize(n);
  step->remaining.store(static_cast<int>(n), std::memory_order_relaxed);
  for (size_t p = 0; p < n; ++p) {
    Executor::Args& args = step->args[p];
    args.step_id = static_cast<int64_t>(call.step_id);
    args.cancellation = step->active;
    args.rendezvous = step->rendezvous;
    if (call.trace) args.stats = n > 1 ? &step->stats[p] : &call.stats;
    if (graph.direct_io) {
      args.feeds = call.feeds;
    } else {
      for (int j : graph.partitions[p].feeds) step->feeds[p].push_back(call.feeds[j]);
      args.feeds = step->feeds[p];
    }
  }
  const auto partition_done = [this, step](absl::Status status) {
    if (!status.ok()) step->Abort(status);
    // Acq_rel: the last partition to finish reads what the others wrote.
    if (step->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(step);
  };
  const StepStart start = call.start;
  // Pointers only: a deferred start may run on the pool after this returns.
  const RegisteredGraph* g = &graph;
  RunGraphCall* c = &call;
  const auto execute = [step, g, c, start](size_t p, Executor::DoneCallback done) {
    const Executor& executor = *g->partitions[p].executor;
    std::vector<Tensor>* fetched = g->direct_io ? &c->fetched : &step->fetched[p];
    switch (start) {
      case StepStart::kPool:
        return executor.RunAsync(step->args[p], fetched, std::move(done));
      case StepStart::kHere:
        return executor.RunAsyncStartingHere(step->args[p], fetched, std::move(done));
      case StepStart::kQuickHere:
        return executor.RunAsyncQuickHere(step->args[p], fetched, std::move(done));
    }
  };
  // A partition on a device with memory of its own gets its feeds copied
  // there first, and what it fetches copied back to the host.
  const auto run = [step, g, execute, partition_done](size_t p) {
    Device* device = g->partitions[p].device;
    if (device->device_context() == nullptr) return execute(p, partition_done);
    CopyAll(device, &step->feeds[p], /*to_device=*/true,
            [step, p, device, execute, partition_done](absl::Status copied) {
              if (!copied.ok()) return partition_done(std::move(copied));
              execute(p, [step, p, device, partition_done](absl::Status status) {
                if (!status.ok()) return partition_done(std::move(status));
                CopyAll(device, &step->fetched[p], /*to_device=*/false, partition_done);
              });
            });
  };
  if (start != StepStart::kHere || n == 1) {
    // `step` may be gone once the last partition has started.
    for (size_t p = 0; p < n; ++p) run(p);
    return;
  }
  // This thread runs the first partition; the others start here after it
  // (receives they complete wait for this thread too), unless it meets a
  // kernel that may run long first: then they go to the pool.
  InlineContinuations scope;
  for (size_t p = 1; p < n; ++p) {
    InlineContinuations::Defer(inter_op_pool_.get(), [run, p] { run(p); });
  }
  run(0);
}

void Worker::Finish(Step* step) const {
  RunGraphCall& call = *step->call;
  if (step->forwarding) call.cancellation.DeregisterCallback(step->forward_token);
  if (step->in_table) steps_.End(call.step_id);
  absl::Status status = step->active->status();
  // A step whose call was cancelled before it could start reports why.
  if (status.ok() && step->cancellation.cancelled()) status = step->cancellation.status();
  const RegisteredGraph& graph = *step->graph;
  if (status.ok() && !graph.direct_io) {
    call.fetched.assign(graph.num_fetches, Tensor());
    for (size_t p = 0; p < graph.partitions.size(); ++p) {
      const std::vector<int>& fetches = graph.partitions[p].fetches;
      for (size_t f = 0; f < fetches.size(); ++f) {
        call.fetched[fetches[f]] = std::move(step->fetched[p][f]);
      }
    }
  }
  for (std::vector<NodeExecStats>& stats : step->stats) {
    for (NodeExecStats& node : stats) call.stats.push_back(std::move(node));
  }
  std::function<void(absl::Status)> done = std::move(step->done);
  // The step's rendezvous and graph go before `done`: the caller may tear
  // the worker down once it returns.
  step->self.reset();
  done(std::move(status));
}

absl::Status Worker::Deliver(uint64_t step_id, std::string_view key, const Tensor& value) {
  return steps_.Deliver(step_id, key, value);
}

void Worker::AbortStep(uint64_t step_id, const absl::Status& status) {
  steps_.Abort(step_id, status);
}

int Worker::ExpirePendingPushes(absl::Time now) { return steps_.ExpirePending(now); }

}  // namespace rill
