#include "runtime/training/sync_replicas_hook.h"

#include <algorithm>
#include <atomic>
#include <functional>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "graph/log_sink.h"
#include "graph/status_macros.h"
#include "runtime/training/queue_runner.h"

namespace rill {
namespace {

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
        contributed_(options.contributed),
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
      clocks_.clear();
      if (contributed_ && !names_.clocks.empty()) {
        // The baseline, before any worker of this session can tick.
        const absl::Time read = absl::Now();
        ASSIGN_OR_RETURN(const std::vector<Tensor> clocks, session.Run({}, {names_.clocks}));
        NoteContributions(clocks[0], read);
      }
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
      std::vector<std::string> fetches = names_.accumulated;
      const bool watch_clocks = contributed_ && !names_.clocks.empty();
      if (watch_clocks) fetches.push_back(names_.clocks);
      const absl::Time read = absl::Now();
      ASSIGN_OR_RETURN(std::vector<Tensor> counts, session.Run({}, fetches));
      int joined = 0;
      if (watch_clocks) {
        joined = NoteContributions(counts.back(), read);
        counts.pop_back();
      }
      RETURN_IF_ERROR(Recount(session));
      RETURN_IF_ERROR(HandOutTokens(session, joined));
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

  // The workers whose clocks moved since the last read (begun at
  // clocks_read_), told to `contributed_`; returns how many of them count
  // now and did not before.
  int NoteContributions(const Tensor& clocks, absl::Time read) {
    int joined = 0;
    const int64_t n = clocks.NumElements();
    if (static_cast<int64_t>(clocks_.size()) == n) {
      for (int64_t w = 0; w < n; ++w) {
        if (clocks.data<int64_t>()[w] > clocks_[w] &&
            contributed_(static_cast<int>(w), clocks_read_)) {
          ++joined;
        }
      }
    }
    clocks_.assign(clocks.data<int64_t>(), clocks.data<int64_t>() + n);
    clocks_read_ = read;
    return joined;
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
  const std::function<bool(int, absl::Time)> contributed_;
  const absl::Duration recount_every_;
  const absl::Duration round_patience_;
  int live_logged_ = -1;  // The live workers Recount last logged.
  // Set by End and AfterCloseSession: the elastic sync loop's wait ends.
  std::atomic<bool> stopping_{false};
  // Elastic: what the variables were last set to.
  int replicas_now_ = -1;
  int64_t tokens_now_ = -1;
  // Elastic with `contributed_`: the clocks at the sync loop's last read,
  // and when that read began.
  std::vector<int64_t> clocks_;
  absl::Time clocks_read_;
  QueueRunner queue_runner_;
};

}  // namespace

std::unique_ptr<SessionRunHook> NewSyncReplicasHook(const SyncReplicasNames& names, bool is_chief,
                                                    int num_tokens,
                                                    const SyncReplicasOptions& options,
                                                    int total_num_replicas) {
  return std::make_unique<SyncReplicasHook>(names, is_chief, num_tokens, options,
                                            total_num_replicas);
}

}  // namespace rill
