#include "examples/distributed_mnist_graph.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "examples/fashion_mlp_model.h"
#include "fmt/core.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/uninitialized_variables.h"
#include "placement/replica_device_setter.h"
#include "runtime/training/bounded_staleness.h"
#include "runtime/training/gradient_compression.h"
#include "runtime/training/saver.h"
#include "runtime/training/sync_replicas_optimizer.h"

namespace rill::examples {
namespace {

constexpr int64_t kMaxReplicasToAggregate = 1 << 20;

// --issync 1 aggregates R of the W workers' gradients: W - R backups, or,
// as in TensorFlow, R > W for several batches of each worker per update.
absl::StatusOr<SyncReplicasOptions> SyncOptions(const Flags& flags, int num_workers) {
  int64_t replicas = num_workers;
  if (flags.backup_workers) {
    replicas = num_workers - *flags.backup_workers;
    if (replicas < 1) {
      return absl::InvalidArgumentError(
          fmt::format("--backup_workers {} leaves none of the {} workers of --worker_hosts to "
                      "aggregate gradients from",
                      *flags.backup_workers, num_workers));
    }
    if (flags.replicas_to_aggregate && *flags.replicas_to_aggregate != replicas) {
      return absl::InvalidArgumentError(fmt::format(
          "--replicas_to_aggregate {} and --backup_workers {} must add up to the {} workers of "
          "--worker_hosts",
          *flags.replicas_to_aggregate, *flags.backup_workers, num_workers));
    }
  } else if (flags.replicas_to_aggregate) {
    replicas = *flags.replicas_to_aggregate;
    if (replicas > kMaxReplicasToAggregate) {
      return absl::InvalidArgumentError(
          fmt::format("--replicas_to_aggregate {}: at most {} gradients are aggregated per update",
                      replicas, kMaxReplicasToAggregate));
    }
  }
  SyncReplicasOptions options;
  options.replicas_to_aggregate = static_cast<int>(replicas);
  options.total_num_replicas = num_workers;
  options.token_timeout = absl::Seconds(flags.sync_timeout_secs);
  if (flags.min_replicas_to_aggregate) {
    if (*flags.min_replicas_to_aggregate > replicas) {
      return absl::InvalidArgumentError(
          fmt::format("--min_replicas_to_aggregate {} is more than the {} of "
                      "--replicas_to_aggregate",
                      *flags.min_replicas_to_aggregate, replicas));
    }
    // Workers come and go: R follows the live ones, and every index up to
    // the most (R) has a clock, whatever the cluster spec lists now.
    options.min_replicas_to_aggregate = static_cast<int>(*flags.min_replicas_to_aggregate);
    options.total_num_replicas = std::max(num_workers, static_cast<int>(replicas));
  }
  return options;
}

// Appends TensorBoard's histograms of each variable ("hidden/weights") and
// of its gradient ("hidden/weights/gradient", as tf.contrib.slim tags
// them), built in `on_cpu`, to `summaries`. The variable is read where it
// lives and its value sent, as tf.summary.histogram(var.op.name, var) does.
void AddHistograms(const Scope& on_cpu, const std::vector<GradientAndVariable>& gradients,
                   std::vector<ops::Input>* summaries) {
  for (const GradientAndVariable& pair : gradients) {
    const std::string& tag = pair.variable.name();
    summaries->emplace_back(
        ops::HistogramSummary(on_cpu.WithOpName(tag + "_summary"), tag, pair.variable.value()));
    if (pair.gradient.node() == nullptr) continue;
    const std::string gradient_tag = tag + "/gradient";
    summaries->emplace_back(ops::HistogramSummary(on_cpu.WithOpName(gradient_tag + "_summary"),
                                                  gradient_tag, pair.gradient));
  }
}

}  // namespace

absl::StatusOr<DistributedMnistGraph> BuildDistributedMnistGraph(
    const Flags& flags, const ServerConfig& config,
    std::function<std::vector<int>()> live_workers,
    std::function<bool(int worker, absl::Time since)> contributed) {
  const Scope root = ops::NewRootScope();
  const Variable global_step = CreateGlobalStep(root);
  const int num_workers = static_cast<int>(config.cluster.TaskIndices("worker").size());
  const int task = config.task.index;
  const std::string worker_device =
      fmt::format("/job:worker/task:{}", task) + (flags.device == "cpu"   ? "/device:CPU:0"
                                                  : flags.device == "gpu" ? "/device:GPU:0"
                                                                          : "");
  DistributedMnistGraph graph;
  graph.mode = "async";
  std::optional<SyncReplicasOptimizer> sync;
  FashionModelOptions model_options;
  model_options.learning_rate = flags.learning_rate;
  model_options.global_step = &global_step;
  ASSIGN_OR_RETURN(model_options.partitioner, ParsePartitioner(flags.partitioner));
  ASSIGN_OR_RETURN(GradientCompression compression,
                   ParseGradientCompression(flags.gradient_compression));
  compression.local_device = worker_device;
  // Top-k's residuals: this worker's own variables.
  CompressedGradients compressed;
  // The gradients as the optimizer computed them, for their histograms.
  std::vector<GradientAndVariable> gradients;
  // Every mode's updates: the gradients, lighter for the wire when asked, then `optimizer`'s.
  const auto minimize = [&compression, &compressed, &gradients](
                            const Scope& scope, auto& optimizer, const Output& loss,
                            const std::vector<Variable>& variables,
                            const auto& global_step_arg) -> absl::StatusOr<Operation> {
    ASSIGN_OR_RETURN(gradients, optimizer.ComputeGradients(scope, loss, variables));
    ASSIGN_OR_RETURN(compressed, CompressGradients(scope, gradients, compression));
    return optimizer.ApplyGradients(scope, compressed.gradients, global_step_arg);
  };
  if (config.sync_replicas) {
    if (flags.staleness) {
      return absl::InvalidArgumentError(
          "--staleness bounds asynchronous training; --issync 1 is synchronous already");
    }
    ASSIGN_OR_RETURN(SyncReplicasOptions options, SyncOptions(flags, num_workers));
    options.worker_index = task;
    options.local_device = worker_device;
    if (live_workers) {
      options.live_workers = [live_workers] { return static_cast<int>(live_workers().size()); };
      options.contributed = std::move(contributed);
    }
    graph.mode = options.min_replicas_to_aggregate > 0
                     ? fmt::format("sync {} to {} of the live workers",
                                   options.min_replicas_to_aggregate, options.replicas_to_aggregate)
                     : fmt::format("sync {} of {}", options.replicas_to_aggregate, num_workers);
    model_options.build_train = [&sync, &global_step, options, minimize](
                                    const Scope& scope, Optimizer& adam, const Output& loss,
                                    const std::vector<Variable>& variables) {
      sync.emplace(&adam, options);
      return minimize(scope, *sync, loss, variables, global_step);
    };
  } else if (flags.staleness) {
    graph.mode = fmt::format("staleness {}", *flags.staleness);
    model_options.build_train =
        [&](const Scope& scope, Optimizer& adam, const Output& loss,
            const std::vector<Variable>& variables) -> absl::StatusOr<Operation> {
      ASSIGN_OR_RETURN(const Operation update,
                       minimize(scope, adam, loss, variables, &global_step));
      BoundedStalenessOptions options;
      // Workers that come and go: a clock for every index up to the most.
      options.num_workers = std::max(num_workers, static_cast<int>(flags.max_workers.value_or(0)));
      options.worker_index = task;
      options.staleness = static_cast<int>(*flags.staleness);
      options.timeout = absl::Seconds(flags.sync_timeout_secs);
      ASSIGN_OR_RETURN(const BoundedStep bounded,
                       BoundStaleness(scope, update, global_step, options));
      graph.clock = bounded.clock.name();
      graph.slowest = bounded.slowest.name();
      graph.retire = bounded.retire.node()->name();
      if (flags.max_workers && task == 0 && live_workers) {
        graph.staleness_hook =
            MakeStalenessMembershipHook(bounded, options.num_workers, live_workers);
      }
      return bounded.train_op;
    };
  } else {
    model_options.build_train = [&global_step, minimize](const Scope& scope, Optimizer& adam,
                                                         const Output& loss,
                                                         const std::vector<Variable>& variables) {
      return minimize(scope, adam, loss, variables, &global_step);
    };
  }
  ASSIGN_OR_RETURN(const FashionModel model, flags.model == "cnn"
                                                 ? BuildFashionCnn(root, model_options)
                                                 : BuildFashionMlp(root, model_options));
  // Summaries and checkpoints are strings and files, which only a CPU
  // handles (TensorFlow has no GPU kernels for them either).
  const Scope on_cpu = root.WithDevice("/device:CPU:0");
  std::vector<ops::Input> summary_inputs = {
      ops::Input(ops::ScalarSummary(on_cpu.WithOpName("loss_summary"), "loss", model.loss)),
      ops::Input(
          ops::ScalarSummary(on_cpu.WithOpName("accuracy_summary"), "accuracy", model.accuracy))};
  AddHistograms(on_cpu, gradients, &summary_inputs);
  const Output summaries =
      ops::MergeSummary(on_cpu.WithOpName("summary_op"), std::move(summary_inputs));
  graph.loss = model.loss.name();
  graph.accuracy = model.accuracy.name();
  graph.train = model.train.name();
  // The local step of synchronous training and top-k's residuals are each
  // worker's own: neither the chief's to initialize nor a checkpoint's.
  std::set<const Node*> local;
  if (sync) local.insert(sync->local_step().ref().node());
  for (const Variable& residual : compressed.residuals) local.insert(residual.ref().node());
  std::vector<Output> variables;
  for (const Output& variable : AllVariables(root)) {
    if (!local.contains(variable.node())) variables.push_back(variable);
  }
  ASSIGN_OR_RETURN(const Output ready, ReportUninitializedVariables(root, variables));
  // Every worker initializes its local variables, once the chief has
  // initialized the rest.
  std::optional<Operation> local_init;
  if (sync || !compressed.residuals.empty()) {
    NodeBuilder init(root.WithDevice(worker_device).WithOpName("local_init"), "NoOp");
    if (sync)
      init.ControlInput(Operation(root.graph()->FindNode(sync->names().local_step_init_op)));
    if (!compressed.residuals.empty()) init.ControlInput(compressed.residuals_init);
    local_init = init.Finalize();
  }
  // Parts of a partitioned variable are saved whole, under its name.
  ASSIGN_OR_RETURN(std::shared_ptr<Saver> saver, Saver::BuildForVariables(on_cpu, variables));
  ASSIGN_OR_RETURN(graph.def, root.ToGraphDef());

  ReplicaDeviceSetterOptions setter;
  for (int ps_task : config.cluster.TaskIndices("ps")) {
    setter.ps_devices.push_back(fmt::format("/job:ps/task:{}", ps_task));
  }
  setter.worker_device = worker_device;
  ASSIGN_OR_RETURN(setter.strategy, ParsePsStrategy(flags.ps_strategy));
  RETURN_IF_ERROR(ApplyReplicaDeviceSetter(setter, &graph.def));

  graph.scaffold.init_op = model.init.name();
  graph.scaffold.ready_op = ready.name();
  graph.scaffold.summary_op = summaries.name();
  graph.scaffold.global_step = global_step.ref().name();
  graph.scaffold.saver = std::move(saver);
  if (local_init.has_value()) {
    // The global variables: SyncReplicasOptimizer's own report would also
    // wait for the residuals, which only the local init op initializes.
    graph.scaffold.ready_for_local_init_op = ready.name();
    graph.scaffold.local_init_op = local_init->name();
  }
  if (sync) {
    graph.token = sync->names().train_op + ":0";
    ASSIGN_OR_RETURN(graph.sync_hook, sync->MakeSessionRunHook(/*is_chief=*/task == 0));
  }
  return graph;
}

}  // namespace rill::examples
