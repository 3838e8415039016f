#include "runtime/session/worker.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "runtime/device/device_factory.h"
#include "runtime/exec/continuations.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/local_rendezvous.h"
#include "runtime/exec/step_join.h"

namespace rill {
namespace {

int Threads(int requested) {
  return requested > 0 ? requested
                       : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Copies each of `tensors`, in place, from the host to `device` (or back,
// `to_device` false), then calls `done` once with the first error.
void CopyAll(Device* device, std::vector<Tensor>* tensors, bool to_device,
             std::function<void(absl::Status)> done) {
  if (tensors->empty()) return done(absl::OkStatus());
  struct Pending {
    explicit Pending(int n) : join(n) {}
    StepJoin join;
    std::function<void(absl::Status)> done;
  };
  auto pending = std::make_shared<Pending>(static_cast<int>(tensors->size()));
  pending->done = std::move(done);
  const auto one_done = [pending](absl::Status status) {
    // A copy has nothing to abort: the others end by themselves.
    if (pending->join.PartDone(status, [](const absl::Status&) {})) {
      pending->done(pending->join.status());
    }
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

}  // namespace

// One RunGraph in flight.
struct Worker::GraphRun {
  std::shared_ptr<GraphRun> self;  // Keeps the step alive until Finish.
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
  StepJoin join;  // Of the partitions.

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
      steps_(options.task, options.push, options.pending_pushes, options.log),
      graphs_(options.task, options.graphs, options.log) {}

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
  graphs_.Clear();
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

void Worker::RegisterGraph(const RegisterGraphRequest& request, absl::Time,
                           std::function<void(absl::StatusOr<GraphRegistration>)> done) {
  const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
  // Before the work of building it.
  if (absl::Status room = graphs_.CheckRoom(bytes); !room.ok()) return done(std::move(room));
  GraphBuildContext context;
  context.task = task();
  context.devices = &devices_;
  context.can_send = options_.push != nullptr;
  context.registry = options_.registry;
  context.inter_op_pool = inter_op_pool_.get();
  context.parallel_nodes = options_.parallel_nodes;
  absl::StatusOr<std::shared_ptr<RegisteredGraph>> graph = BuildRegisteredGraph(request, context);
  if (!graph.ok()) return done(graph.status());
  (*graph)->bytes = bytes;
  absl::StatusOr<std::string> handle = graphs_.Add(*std::move(graph));
  if (!handle.ok()) return done(handle.status());
  done(GraphRegistration{*std::move(handle), options_.graphs.idle_timeout});
}

void Worker::DeregisterGraph(const std::string& graph_handle) { graphs_.Remove(graph_handle); }

int Worker::ExpireIdleGraphs(absl::Time now) { return graphs_.ExpireIdle(now); }

void Worker::RunGraph(RunGraphCall* call, std::function<void(absl::Status)> done) {
  std::shared_ptr<const RegisteredGraph> graph =
      graphs_.Find(absl::string_view(call->graph_handle.data(), call->graph_handle.size()));
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
  auto owned = std::make_shared<GraphRun>();
  GraphRun* step = owned.get();
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

void Worker::Start(GraphRun* step) const {
  const RegisteredGraph& graph = *step->graph;
  RunGraphCall& call = *step->call;
  const size_t n = graph.partitions.size();
  step->args.resize(n);
  if (!graph.direct_io) {
    step->feeds.resize(n);
    step->fetched.resize(n);
  }
  if (call.trace && n > 1) step->stats.resize(n);
  step->join.Reset(static_cast<int>(n));
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
    if (step->join.PartDone(status, [step](const absl::Status& error) { step->Abort(error); })) {
      Finish(step);
    }
  };
  // Pointers only: a deferred start may run on the pool after this returns.
  const RegisteredGraph* g = &graph;
  RunGraphCall* c = &call;
  const auto execute = [step, g, c](size_t p, Executor::DoneCallback done) {
    const Executor& executor = *g->partitions[p].executor;
    std::vector<Tensor>* fetched = g->direct_io ? &c->fetched : &step->fetched[p];
    executor.RunAsync(step->args[p], fetched, std::move(done));
  };
  // A partition on a device with memory of its own gets its feeds copied
  // there first, and what it fetches copied back to the host. It starts
  // on the pool: the copies finish on the device's callback thread, which
  // must stay free to finish the copies its kernels wait for.
  Eigen::ThreadPool* pool = inter_op_pool_.get();
  const auto run = [step, g, execute, partition_done, pool](size_t p) {
    Device* device = g->partitions[p].device;
    if (device->device_context() == nullptr) return execute(p, partition_done);
    CopyAll(device, &step->feeds[p], /*to_device=*/true,
            [step, p, device, execute, partition_done, pool](absl::Status copied) {
              if (!copied.ok()) return partition_done(std::move(copied));
              pool->Schedule([step, p, device, execute, partition_done] {
                execute(p, [step, p, device, partition_done](absl::Status status) {
                  if (!status.ok()) return partition_done(std::move(status));
                  CopyAll(device, &step->fetched[p], /*to_device=*/false, partition_done);
                });
              });
            });
  };
  if (call.runner == nullptr || n == 1) {
    for (size_t p = 0; p < n; ++p) step->args[p].runner = call.runner;
    // `step` may be gone once the last partition has started.
    for (size_t p = 0; p < n; ++p) run(p);
    return;
  }
  // The runner starts every partition, on one thread, each running there as
  // far as it goes.
  for (size_t p = 0; p < n; ++p) step->args[p].runner = RunHere;
  call.runner([run, n, pool = inter_op_pool_.get()] {
    if (QuickContinuationsHere::Active()) {
      for (size_t p = 0; p < n; ++p) run(p);
      return;
    }
    // The first partition runs first; the others start after it (receives
    // they complete wait for this thread too), unless it meets a kernel
    // that may run long first: then they go to the pool.
    InlineContinuations scope;
    for (size_t p = 1; p < n; ++p) {
      InlineContinuations::Defer(pool, [run, p] { run(p); });
    }
    run(0);
  });
}

void Worker::Finish(GraphRun* step) const {
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
