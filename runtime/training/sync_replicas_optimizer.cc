#include "runtime/training/sync_replicas_optimizer.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <optional>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/log_sink.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/uninitialized_variables.h"
#include "runtime/training/queue_runner.h"

namespace rill {
namespace {

int64_t TimeoutMs(absl::Duration timeout) {
  return timeout == absl::InfiniteDuration() ? -1 : absl::ToInt64Milliseconds(timeout);
}

// The worker's and the chief's initialisation around every new session,
// the chief's queue runner, and errors that say what a late step waits for.
class SyncReplicasHook final : public SessionRunHook {
 public:
  SyncReplicasHook(SyncReplicasNames names, bool is_chief, int num_tokens,
                   const SyncReplicasOptions& options, int total_num_replicas)
      : names_(std::move(names)),
        is_chief_(is_chief),
        num_tokens_(num_tokens),
        replicas_to_aggregate_(options.replicas_to_aggregate),
        min_replicas_to_aggregate_(options.min_replicas_to_aggregate),
        total_num_replicas_(total_num_replicas),
        worker_index_(options.worker_index),
        token_timeout_(options.token_timeout),
        live_workers_(options.live_workers),
        recount_every_(options.recount_every),
        round_patience_(options.round_patience),
        queue_runner_(std::vector<std::string>{names_.sync_op}, SyncLoopOptions()) {}

  absl::Status AfterCreateSession(Session& session) override {
    ASSIGN_OR_RETURN(std::vector<Tensor> uninitialized,
                     session.Run({}, {names_.ready_for_local_init_op}));
    if (uninitialized[0].NumElements() > 0) {
      std::vector<std::string> names;
      for (int64_t i = 0; i < uninitialized[0].NumElements(); ++i) {
        names.push_back(uninitialized[0].data<std::string>()[i]);
      }
      return absl::FailedPreconditionError(
          absl::StrFormat("synchronous replicas: the global variables are not initialized yet: %s",
                          absl::StrJoin(names, ", ")));
    }
    if (!is_chief_) return session.Run({}, {}, {names_.local_step_init_op}).status();
    RETURN_IF_ERROR(session.Run({}, {}, {names_.chief_init_op}).status());
    if (elastic()) {
      replicas_now_ = -1;  // A new session: set them whatever they hold.
      live_logged_ = -1;
      RETURN_IF_ERROR(Recount(session));
    }
    stopping_.store(false, std::memory_order_relaxed);
    RETURN_IF_ERROR(DrainTokens(session));
    RETURN_IF_ERROR(HandOutTokens(session, num_tokens_));
    return queue_runner_.Start(&session);
  }

  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override {
    (void)context;
    (void)values;
    // The sync loop failed (a ps went away): the step that hits it next
    // would only wait for a token, so its error is the step's.
    if (is_chief_ && !queue_runner_.running()) return queue_runner_.status();
    return absl::OkStatus();
  }

  absl::Status AfterRunError(Session& session, absl::Status error) override {
    if (!absl::IsDeadlineExceeded(error) ||
        !absl::StrContains(error.message(), names_.token_dequeue)) {
      return error;
    }
    return absl::AbortedError(
        absl::StrFormat("worker %d waited %s for the token of its next step: %s", worker_index_,
                        absl::FormatDuration(token_timeout_), WhoIsLate(session)));
  }

  // The chief's last round handed out tokens that workers took; a worker
  // still in a step (a backup, or one whose gradient came late) gets one
  // more, valued at the last step, so that it ends its step and stops
  // rather than wait for a round that never comes.
  absl::Status End(Session& session) override {
    stopping_.store(true, std::memory_order_relaxed);
    queue_runner_.RequestStop();
    if (!is_chief_) return absl::OkStatus();
    return HandOutTokens(session, total_num_replicas_);
  }

  void AfterCloseSession(Session& session) override {
    (void)session;
    stopping_.store(true, std::memory_order_relaxed);
    queue_runner_.RequestStop();
    queue_runner_.Join();
  }

 private:
  bool elastic() const { return !names_.set_replicas_op.empty(); }

  // The sync loop of an elastic job waits before each round until it can
  // be taken whole.
  QueueRunnerOptions SyncLoopOptions() {
    QueueRunnerOptions loop;
    if (elastic()) loop.before_run = [this](Session& session) { return AwaitRound(session); };
    return loop;
  }

  // Until every accumulator holds the gradients of the round as counted
  // now: a take that waited inside the sync op could wait for a worker
  // that left, and a deadline on it could cut a round between its takes
  // and its update. The pause between reads grows from 1 ms to
  // recount_every, so that a round whose gradients are in goes at once.
  // After round_patience the round goes with the gradients it has (at
  // least M): the late workers are its backups, and a worker whose
  // gradient came stale (it joined as the last round ended) gets its
  // token from this round.
  absl::Status AwaitRound(Session& session) {
    absl::Duration pause = absl::Milliseconds(1);
    const absl::Time patient_until = absl::Now() + round_patience_;
    for (;;) {
      if (stopping_.load(std::memory_order_relaxed)) {
        return absl::CancelledError("the sync loop stops");
      }
      RETURN_IF_ERROR(Recount(session));
      ASSIGN_OR_RETURN(const std::vector<Tensor> counts, session.Run({}, names_.accumulated));
      int fewest = std::numeric_limits<int>::max();
      for (const Tensor& count : counts) fewest = std::min(fewest, count.scalar<int32_t>());
      if (fewest >= replicas_now_) return absl::OkStatus();
      if (fewest >= min_replicas_to_aggregate_ && absl::Now() >= patient_until) {
        return SetRound(session, fewest, tokens_now_);
      }
      absl::SleepFor(pause);
      pause = std::min(2 * pause, recount_every_);
    }
  }

  // Elastic: the round aggregates as many gradients as workers are live
  // (within its bounds) and hands each live worker a token. Runs before
  // the sync loop starts and then on its thread only.
  absl::Status Recount(Session& session) {
    const int live = live_workers_ ? live_workers_() : replicas_to_aggregate_;
    const int replicas = std::clamp(live, min_replicas_to_aggregate_, replicas_to_aggregate_);
    const int64_t tokens = std::max(live, replicas);
    if (live != live_logged_) {
      LogSink::Stderr()->Log(
          "synchronous replicas: %d live workers; each round aggregates %d gradients (%d to %d) "
          "and hands out %d tokens",
          live, replicas, min_replicas_to_aggregate_, replicas_to_aggregate_, tokens);
      live_logged_ = live;
    }
    return SetRound(session, replicas, tokens);
  }

  // Sets the variables the sync op reads, when they change.
  absl::Status SetRound(Session& session, int replicas, int64_t tokens) {
    if (replicas == replicas_now_ && tokens == tokens_now_) return absl::OkStatus();
    Tensor tokens_tensor(DT_INT64, TensorShape({1}));
    tokens_tensor.data<int64_t>()[0] = tokens;
    RETURN_IF_ERROR(session
                        .Run({{names_.new_replicas, Tensor::Scalar<int32_t>(replicas)},
                              {names_.new_tokens_per_step, tokens_tensor}},
                             {}, {names_.set_replicas_op})
                        .status());
    replicas_now_ = replicas;
    tokens_now_ = tokens;
    return absl::OkStatus();
  }

  // `count` tokens valued at the current global step.
  absl::Status HandOutTokens(Session& session, int count) {
    if (count <= 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(std::vector<Tensor> step, session.Run({}, {names_.global_step}));
    Tensor tokens(DT_INT64, TensorShape({count}));
    std::fill_n(tokens.data<int64_t>(), count, step[0].scalar<int64_t>());
    return session.Run({{names_.init_tokens, tokens}}, {}, {names_.init_tokens_op}).status();
  }

  // Tokens a dead chief handed out and nobody took would let workers run
  // ahead of the round; another worker may take one meanwhile, so the
  // all-or-nothing drain is tried again.
  absl::Status DrainTokens(Session& session) {
    absl::Status status;
    for (int attempt = 0; attempt < 10; ++attempt) {
      ASSIGN_OR_RETURN(std::vector<Tensor> size, session.Run({}, {names_.token_queue_size}));
      if (size[0].scalar<int32_t>() == 0) return absl::OkStatus();
      status = session.Run({}, {}, {names_.drain_tokens_op}).status();
      if (status.ok()) return status;
      if (!absl::IsDeadlineExceeded(status)) return status;
    }
    return status;
  }

  // "round 42: 1 of 2 gradients; worker 1 last heard 31.0 s ago (at its
  // step 40)", read with a short deadline from a session that still works.
  std::string WhoIsLate(Session& session) const {
    RunOptions options;
    options.timeout_in_ms = 5000;
    std::vector<std::string> fetches = {names_.global_step, names_.num_accumulated};
    if (!names_.clocks.empty()) {
      fetches.push_back(names_.clocks);
      fetches.push_back(names_.seconds_since_heard);
    }
    absl::StatusOr<std::vector<Tensor>> values = session.Run(options, {}, fetches, {}, nullptr);
    if (!values.ok()) {
      return absl::StrFormat("the round's state cannot be read either (%s)",
                             values.status().message());
    }
    std::string text =
        absl::StrFormat("round %d: %d of %d gradients", (*values)[0].scalar<int64_t>(),
                        (*values)[1].scalar<int32_t>(), replicas_to_aggregate_);
    if (values->size() < 4) return text;
    const Tensor& clocks = (*values)[2];
    const Tensor& seconds = (*values)[3];
    // The longest silent first.
    std::vector<int> workers;
    for (int w = 0; w < clocks.NumElements(); ++w) {
      if (w != worker_index_) workers.push_back(w);
    }
    const auto silence = [&](int w) {
      const double s = seconds.data<double>()[w];
      return s < 0 ? 1e300 : s;
    };
    std::stable_sort(workers.begin(), workers.end(),
                     [&](int a, int b) { return silence(a) > silence(b); });
    for (int w : workers) {
      const double s = seconds.data<double>()[w];
      if (s < 0) {
        absl::StrAppendFormat(&text, "; worker %d never heard", w);
      } else {
        absl::StrAppendFormat(&text, "; worker %d last heard %.1f s ago (after %d steps)", w, s,
                              clocks.data<int64_t>()[w]);
      }
    }
    return text;
  }

  const SyncReplicasNames names_;
  const bool is_chief_;
  const int num_tokens_;
  const int replicas_to_aggregate_;
  const int min_replicas_to_aggregate_;
  const int total_num_replicas_;
  const int worker_index_;
  const absl::Duration token_timeout_;
  const std::function<int()> live_workers_;
  const absl::Duration recount_every_;
  const absl::Duration round_patience_;
  int live_logged_ = -1;  // The live workers Recount last logged.
  // Set by End and AfterCloseSession: the elastic sync loop's wait ends.
  std::atomic<bool> stopping_{false};
  // Elastic: what the variables were last set to.
  int replicas_now_ = -1;
  int64_t tokens_now_ = -1;
  QueueRunner queue_runner_;
};

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
  return std::unique_ptr<SessionRunHook>(std::make_unique<SyncReplicasHook>(
      names_, is_chief, num_tokens, options_, total_num_replicas_));
}

}  // namespace rill
