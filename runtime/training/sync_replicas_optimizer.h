// SyncReplicasOptimizer, as tf.train.SyncReplicasOptimizer: synchronous
// between-graph training, where every step applies the mean of R workers'
// gradients once.
//
// Each worker's train op puts its gradients into per-variable accumulators
// on the ps, tagged with its local step, then waits for a token. The chief
// runs the sync op in a queue runner: it takes the mean of R fresh
// gradients from every accumulator, applies them with the wrapped
// optimizer, advances the global step and hands out the next step's tokens.
// Gradients computed at an older step are dropped, which is how the
// slowest of W > R workers (backup workers) are left behind.
//
// The graph has TensorFlow's names (`name` defaults to "sync_replicas"):
//   sync_rep_local_step                   this worker's step, on local_device
//   sync_replicas/conditional_accumulator[_N]
//                                         shared "<var>:0/grad_accum", beside <var>
//   sync_replicas/AccumulatorApplyGradient[_N], .../AccumulatorTakeGradient[_N]
//   sync_token_q                          FIFOQueueV2 of steps, beside global_step
//   sync_token_q_Dequeue, then sync_replicas/train_op (Assign of the token)
//   sync_replicas/update                  the wrapped optimizer's apply (its
//                                         ops beside their variables and the
//                                         global step, so the sync op needs
//                                         nothing from the chief's task)
//   sync_token_q_EnqueueMany              the sync op
//
// Beyond TensorFlow, whose workers wait for a token forever:
//   - the dequeue has a timeout (token_timeout); the session hook turns it
//     into ABORTED that names the round, the gradients it has and when
//     each worker was last heard, so that a supervised session recovers;
//   - every worker's step ticks its clock (WorkerClocks beside the global
//     step), which is how the hook knows who was heard when;
//   - a restarted chief resets the round: accumulators move to the
//     restored global step (dropping older gradients), leftover tokens are
//     drained, and fresh ones are handed out.
#ifndef RILL_RUNTIME_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_
#define RILL_RUNTIME_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/scope.h"
#include "ops/variable.h"
#include "runtime/training/optimizer.h"
#include "runtime/training/session_run_hook.h"

namespace rill {

struct SyncReplicasOptions {
  // R: the gradients averaged per variable for one update.
  int replicas_to_aggregate = 1;
  // W: the worker tasks; -1 means R. W > R gives W - R backup workers.
  int total_num_replicas = -1;
  // This worker's task index, for its clock; -1: no clocks (and errors
  // cannot say who was heard when).
  int worker_index = -1;
  // Where this worker's local step lives; "" takes the scope's device. In
  // between-graph replication name the worker's task: a replica device
  // setter would otherwise put the variable on a ps, shared by all.
  std::string local_device;
  // How long a worker waits for its next token (for the round to finish)
  // before its step fails; InfiniteDuration() waits as TensorFlow does.
  absl::Duration token_timeout = absl::Seconds(60);
  std::string name = "sync_replicas";
  // Elastic membership: with M >= 1 here, each round aggregates as many
  // gradients as workers are live, between M and replicas_to_aggregate
  // (R, the most), and hands out a token to each live worker. R and the
  // tokens per round are then variables beside the global step, which the
  // chief's hook sets from `live_workers`. Its sync loop takes a round only
  // once every accumulator holds the gradients it needs (it reads their
  // counts and the live workers again, pausing at most `recount_every`
  // between reads), so that a round never waits inside its take for a
  // worker that left, and is never cut in half. W (the clocks' size)
  // bounds the workers' indices.
  int min_replicas_to_aggregate = -1;
  // The chief's: the workers live now (a job's membership).
  std::function<int()> live_workers;
  // The chief's, with clocks (worker_index >= 0): its sync loop reads the
  // clocks and calls this for each worker whose clock moved (it sent a
  // gradient) since the previous read, which began at `since`, e.g.
  // JobMembership::Contributed. True when that made the worker count in
  // live_workers: the loop then hands out one more token, since the
  // worker's first step took none and the rounds before did not count it.
  // So live_workers may count only the workers that send gradients, and
  // a member that never does holds no round up.
  std::function<bool(int worker, absl::Time since)> contributed;
  absl::Duration recount_every = absl::Milliseconds(50);
  // How long a round waits for gradients the live workers owe it before it
  // goes with those it has (at least M; the late workers are backups).
  absl::Duration round_patience = absl::Seconds(15);
};

// The graph's names, for a Scaffold and for tools.
struct SyncReplicasNames {
  std::string train_op;                 // The worker's step (returned by ApplyGradients).
  std::string local_step;               // "sync_rep_local_step".
  std::string local_step_init_op;       // local_step = global_step; a Scaffold's local_init_op.
  std::string ready_for_local_init_op;  // The global variables not initialized.
  std::string chief_init_op;            // local_step_init_op and every accumulator's step.
  std::string sync_op;                  // One round: take, apply, hand out tokens.
  std::string token_queue;
  std::string token_dequeue;
  std::string token_queue_size;
  std::string drain_tokens_op;      // Takes every token left (timeout 0).
  std::string init_tokens;          // A fed int64 vector of tokens ...
  std::string init_tokens_op;       // ... that this enqueues.
  std::string global_step;          // The global step's value ("global_step:0").
  std::string num_accumulated;      // The first accumulator's count.
  std::string clocks;               // WorkerClocksState's clocks, or "".
  std::string seconds_since_heard;  // ... and its seconds since heard, or "".
  // Elastic membership only (else ""): R and the tokens per round now,
  // and the op that sets both from the two fed values.
  std::string replicas_now;
  std::string set_replicas_op;
  std::string new_replicas;              // A fed int32 scalar ...
  std::string new_tokens_per_step;       // ... and int64 vector of one.
  std::vector<std::string> accumulated;  // Each accumulator's count.
};

// Thread safety: build graphs from one thread (as Scope); the hooks it
// makes belong to one MonitoredSession each.
class SyncReplicasOptimizer {
 public:
  // `optimizer` applies the averaged gradients; it must outlive this.
  SyncReplicasOptimizer(Optimizer* optimizer, SyncReplicasOptions options);

  absl::StatusOr<std::vector<GradientAndVariable>> ComputeGradients(
      const Scope& scope, const Output& loss, const std::vector<Variable>& variables) {
    return optimizer_->ComputeGradients(scope, loss, variables);
  }

  // Builds the graph above once per optimizer and returns the worker's
  // train op. INVALID_ARGUMENT for R < 1, W < 1, a null global step, no
  // gradient at all; FAILED_PRECONDITION when called a second time.
  absl::StatusOr<Operation> ApplyGradients(const Scope& scope,
                                           const std::vector<GradientAndVariable>& gradients,
                                           const Variable& global_step);
  absl::StatusOr<Operation> Minimize(const Scope& scope, const Output& loss,
                                     const std::vector<Variable>& variables,
                                     const Variable& global_step);

  // tf's make_session_run_hook: after every session is created it sets the
  // local step from the global step; the chief also resets the
  // accumulators and the tokens (num_tokens: -1 means R; 0 none) and runs
  // the sync op in a queue runner until the session closes.
  // FAILED_PRECONDITION before ApplyGradients; INVALID_ARGUMENT when
  // num_tokens < R - W (the first round could never complete).
  absl::StatusOr<std::unique_ptr<SessionRunHook>> MakeSessionRunHook(bool is_chief,
                                                                     int num_tokens = -1) const;

  const SyncReplicasNames& names() const { return names_; }
  // The local step, to leave out of savers and of the global variables.
  // REQUIRES: ApplyGradients succeeded.
  const Variable& local_step() const { return *local_step_; }
  int replicas_to_aggregate() const { return options_.replicas_to_aggregate; }
  int total_num_replicas() const { return total_num_replicas_; }

 private:
  Optimizer* const optimizer_;
  const SyncReplicasOptions options_;
  const int total_num_replicas_;
  bool built_ = false;
  std::optional<Variable> local_step_;
  SyncReplicasNames names_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_SYNC_REPLICAS_OPTIMIZER_H_
