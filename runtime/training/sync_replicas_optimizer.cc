#include "runtime/training/sync_replicas_optimizer.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/uninitialized_variables.h"
#include "runtime/training/sync_replicas_hook.h"

namespace rill {
namespace {

int64_t TimeoutMs(absl::Duration timeout) {
  return timeout == absl::InfiniteDuration() ? -1 : absl::ToInt64Milliseconds(timeout);
}

}  // namespace

SyncReplicasOptimizer::SyncReplicasOptimizer(Optimizer* optimizer, SyncReplicasOptions options)
    : optimizer_(optimizer),
      options_(std::move(options)),
      total_num_replicas_(options_.total_num_replicas < 0 ? options_.replicas_to_aggregate
                                                          : options_.total_num_replicas) {}

absl::StatusOr<Operation> SyncReplicasOptimizer::Minimize(const Scope& scope, const Output& loss,
                                                          const std::vector<Variable>& variables,
                                                          const Variable& global_step) {
  ASSIGN_OR_RETURN(std::vector<GradientAndVariable> gradients,
                   ComputeGradients(scope, loss, variables));
  return ApplyGradients(scope, gradients, global_step);
}

absl::StatusOr<Operation> SyncReplicasOptimizer::ApplyGradients(
    const Scope& scope, const std::vector<GradientAndVariable>& gradients,
    const Variable& global_step) {
  RETURN_IF_ERROR(scope.status());
  const int replicas = options_.replicas_to_aggregate;
  if (replicas < 1 || total_num_replicas_ < 1) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SyncReplicasOptimizer: replicas_to_aggregate (%d) and total_num_replicas (%d) must be "
        ">= 1",
        replicas, total_num_replicas_));
  }
  const bool elastic = options_.min_replicas_to_aggregate != -1;
  if (elastic &&
      (options_.min_replicas_to_aggregate < 1 || options_.min_replicas_to_aggregate > replicas)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SyncReplicasOptimizer: min_replicas_to_aggregate %d is not in [1, replicas_to_aggregate "
        "%d]",
        options_.min_replicas_to_aggregate, replicas));
  }
  if (options_.worker_index >= total_num_replicas_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SyncReplicasOptimizer: worker_index %d is not below total_num_replicas %d",
                        options_.worker_index, total_num_replicas_));
  }
  if (!global_step.ok()) {
    return absl::InvalidArgumentError("SyncReplicasOptimizer: global_step is required");
  }
  if (built_) {
    return absl::FailedPreconditionError(
        "SyncReplicasOptimizer: ApplyGradients was called already; it builds one train op");
  }
  if (BaseType(global_step.ref().type()) != DT_INT64) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SyncReplicasOptimizer: global step %s must be int64, not %s",
                        global_step.name(), DataTypeString(BaseType(global_step.ref().type()))));
  }
  const Scope sync = scope.NewSubScope(options_.name);
  const Operation& step_op = global_step.ref().op();
  // Everything of the round but the gradients lives with the global step
  // or with its variable, so that a round needs no worker once started.
  const Scope beside_step = scope.ColocateWith(step_op);

  const Scope local =
      options_.local_device.empty() ? scope : scope.WithDevice(options_.local_device);
  const Variable local_step(local, "sync_rep_local_step", Tensor::Scalar<int64_t>(0));
  RETURN_IF_ERROR(scope.status());
  const Output local_step_value = local_step.value();

  // Elastic: how many gradients a round takes and how many tokens it hands
  // out, set by the chief's hook as workers come and go.
  const int64_t tokens_per_step = std::max(total_num_replicas_, replicas);
  std::optional<Variable> replicas_now;
  std::optional<Variable> tokens_now;
  if (elastic) {
    const Scope beside = sync.ColocateWith(step_op);
    replicas_now.emplace(beside, "replicas_to_aggregate", Tensor::Scalar<int32_t>(replicas));
    tokens_now.emplace(beside, "tokens_per_step",
                       Tensor::FromVector<int64_t>({tokens_per_step}, TensorShape({1})));
    RETURN_IF_ERROR(scope.status());
  }

  std::vector<Operation> applies;
  std::vector<GradientAndVariable> averaged;
  std::vector<Output> accumulators;
  for (const GradientAndVariable& g : gradients) {
    if (!g.gradient.ok()) {
      averaged.push_back(g);
      continue;
    }
    const Scope with_var = sync.ColocateWith(g.variable.ref().op());
    ASSIGN_OR_RETURN(const PartialTensorShape shape, g.variable.ref().shape().AsTensorShape());
    const ops::ConditionalAccumulator accumulator(
        with_var.WithOpName("conditional_accumulator"), BaseType(g.gradient.type()), shape,
        ops::ConditionalAccumulator::SharedName(g.variable.name() + ":0/grad_accum"));
    applies.push_back(
        ops::AccumulatorApplyGradient(with_var, accumulator.handle, local_step_value, g.gradient)
            .operation);
    const Output num_required =
        elastic ? replicas_now->value()
                : Output(ops::Const(with_var.WithOpName("num_required"),
                                    Tensor::Scalar<int32_t>(replicas), DT_INT32));
    const ops::AccumulatorTakeGradient take(with_var, accumulator.handle, num_required,
                                            BaseType(g.gradient.type()));
    averaged.push_back(GradientAndVariable{take.average, g.variable});
    accumulators.push_back(accumulator.handle);
  }
  RETURN_IF_ERROR(scope.status());
  if (accumulators.empty()) {
    return absl::InvalidArgumentError("SyncReplicasOptimizer: no gradient for any variable");
  }
  // The inner optimizer puts each update with its own variable (which may
  // be on another ps task than the step) and the rest beside the step.
  ASSIGN_OR_RETURN(
      const Operation update,
      optimizer_->ApplyGradients(beside_step, averaged, &global_step, options_.name + "/update"));

  // The token queue and the worker clocks sit with the global step.
  const ops::FIFOQueueV2 queue(
      beside_step.WithOpName("sync_token_q"), {DT_INT64},
      ops::FIFOQueueV2::Shapes({PartialTensorShape({})}).Capacity(-1).SharedName("sync_token_q"));
  std::vector<Operation> before_token = applies;
  SyncReplicasNames names;
  if (options_.worker_index >= 0) {
    const ops::WorkerClocks clocks(beside_step.WithOpName(options_.name + "/worker_clocks"),
                                   total_num_replicas_,
                                   ops::WorkerClocks::SharedName(options_.name + "/worker_clocks"));
    const ops::Const worker(beside_step.WithOpName(options_.name + "/worker_index"),
                            Tensor::Scalar<int32_t>(options_.worker_index), DT_INT32);
    const ops::WorkerClocksTick tick(
        beside_step.WithOpName(options_.name + "/tick").WithControlDependencies(applies),
        clocks.handle, worker);
    before_token = {tick.operation};
    const ops::WorkerClocksState state(
        beside_step.WithOpName(options_.name + "/worker_clocks_state"), clocks.handle);
    names.clocks = state.clocks.name();
    names.seconds_since_heard = state.seconds_since_heard.name();
  }
  const ops::QueueDequeueV2 token(
      beside_step.WithOpName("sync_token_q_Dequeue").WithControlDependencies(before_token),
      queue.handle, {DT_INT64}, ops::QueueDequeueV2::TimeoutMs(TimeoutMs(options_.token_timeout)));
  const ops::Assign train_op(local.WithOpName(options_.name + "/train_op"), local_step.ref(),
                             token.components[0]);

  // The sync op: after the update, one token per worker for the next step,
  // valued at the new global step.
  const Scope after_update = beside_step.WithControlDependencies({update});
  const Output token_count =
      elastic ? tokens_now->value()
              : Output(ops::Const(after_update.WithOpName(options_.name + "/tokens_per_step"),
                                  Tensor::FromVector<int64_t>({tokens_per_step}, TensorShape({1})),
                                  DT_INT64));
  const ops::Fill tokens(after_update.WithOpName(options_.name + "/tokens"), token_count,
                         global_step.value());
  const ops::QueueEnqueueManyV2 sync_op(after_update.WithOpName("sync_token_q_EnqueueMany"),
                                        queue.handle, {ops::Input(tokens)});

  // Initial tokens, fed by the chief's hook; the drain it runs first.
  const ops::Placeholder init_tokens(beside_step.WithOpName("sync_token_q_init_tokens"), DT_INT64,
                                     ops::Placeholder::Shape(PartialTensorShape({-1})));
  const ops::QueueEnqueueManyV2 enqueue_init(
      beside_step.WithOpName("sync_token_q_init_tokens_EnqueueMany"), queue.handle,
      {ops::Input(init_tokens)});
  const ops::QueueSizeV2 size(beside_step.WithOpName("sync_token_q_Size"), queue.handle);
  const ops::QueueDequeueManyV2 drain(beside_step.WithOpName("sync_token_q_drain"), queue.handle,
                                      size, {DT_INT64}, ops::QueueDequeueManyV2::TimeoutMs(0));

  // Initialisation: the local step from the global step; the chief also
  // moves every accumulator to it.
  const ops::Assign local_step_init(local.WithOpName(options_.name + "/local_step_init"),
                                    local_step.ref(), global_step.value());
  std::vector<Operation> chief_init = {local_step_init.operation};
  for (const Output& accumulator : accumulators) {
    chief_init.push_back(ops::AccumulatorSetGlobalStep(
                             sync.ColocateWith(accumulator.op()).WithOpName("SetGlobalStep"),
                             accumulator, global_step.value())
                             .operation);
  }
  const ops::NoOp chief_init_op(
      sync.WithOpName("chief_init_op").WithControlDependencies(chief_init));
  const ops::AccumulatorNumAccumulated num_accumulated(
      sync.ColocateWith(accumulators[0].op()).WithOpName("num_accumulated"), accumulators[0]);

  // Every variable but the local step is the chief's to initialize.
  std::vector<Output> global_variables;
  for (const Output& variable : AllVariables(scope)) {
    if (variable.node() != local_step.ref().node()) global_variables.push_back(variable);
  }
  ASSIGN_OR_RETURN(
      const Output ready_for_local_init,
      ReportUninitializedVariables(sync.NewSubScope("ready_for_local_init"), global_variables));
  RETURN_IF_ERROR(scope.status());

  if (elastic) {
    const Scope beside = sync.ColocateWith(step_op);
    const ops::Placeholder new_replicas(beside.WithOpName("new_replicas_to_aggregate"), DT_INT32,
                                        ops::Placeholder::Shape(PartialTensorShape({})));
    const ops::Placeholder new_tokens(beside.WithOpName("new_tokens_per_step"), DT_INT64,
                                      ops::Placeholder::Shape(PartialTensorShape({1})));
    const ops::Assign set_replicas(beside, replicas_now->ref(), new_replicas);
    const ops::Assign set_tokens(beside, tokens_now->ref(), new_tokens);
    const ops::NoOp set(
        beside.WithOpName("set_replicas")
            .WithControlDependencies({set_replicas.operation, set_tokens.operation}));
    RETURN_IF_ERROR(scope.status());
    for (const Output& accumulator : accumulators) {
      names.accumulated.push_back(
          ops::AccumulatorNumAccumulated(
              sync.ColocateWith(accumulator.op()).WithOpName("accumulated"), accumulator)
              .num_accumulated.name());
    }
    RETURN_IF_ERROR(scope.status());
    names.replicas_now = replicas_now->value().name();
    names.set_replicas_op = set.operation.node()->name();
    names.new_replicas = new_replicas.output.name();
    names.new_tokens_per_step = new_tokens.output.name();
  }
  names.train_op = train_op.operation.node()->name();
  names.local_step = local_step.name();
  names.local_step_init_op = local_step_init.operation.node()->name();
  names.ready_for_local_init_op = ready_for_local_init.name();
  names.chief_init_op = chief_init_op.operation.node()->name();
  names.sync_op = sync_op.operation.node()->name();
  names.token_queue = queue.operation.node()->name();
  names.token_dequeue = token.operation.node()->name();
  names.token_queue_size = size.size.name();
  names.drain_tokens_op = drain.operation.node()->name();
  names.init_tokens = init_tokens.output.name();
  names.init_tokens_op = enqueue_init.operation.node()->name();
  names.global_step = global_step.value().name();
  names.num_accumulated = num_accumulated.num_accumulated.name();
  names_ = std::move(names);
  local_step_ = local_step;
  built_ = true;
  return train_op.operation;
}

absl::StatusOr<std::unique_ptr<SessionRunHook>> SyncReplicasOptimizer::MakeSessionRunHook(
    bool is_chief, int num_tokens) const {
  if (!built_) {
    return absl::FailedPreconditionError(
        "SyncReplicasOptimizer: ApplyGradients must be called before the session hook is made");
  }
  const int replicas = options_.replicas_to_aggregate;
  if (num_tokens < 0) num_tokens = replicas;
  if (num_tokens < replicas - total_num_replicas_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SyncReplicasOptimizer: %d initial tokens are too few: with %d workers aggregating %d "
        "gradients the first round needs at least %d",
        num_tokens, total_num_replicas_, replicas, replicas - total_num_replicas_));
  }
  return NewSyncReplicasHook(names_, is_chief, num_tokens, options_, total_num_replicas_);
}

}  // namespace rill
