// CheckpointSaverHook, as tf.train.CheckpointSaverHook: saves a checkpoint
// when a session starts, every so many seconds or steps, and at the end.
#ifndef RILL_RUNTIME_TRAINING_CHECKPOINT_SAVER_HOOK_H_
#define RILL_RUNTIME_TRAINING_CHECKPOINT_SAVER_HOOK_H_

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/log_sink.h"
#include "graph/proto/graph.pb.h"
#include "graph/proto/meta_graph.pb.h"
#include "graph/tensor.h"
#include "runtime/session.h"
#include "runtime/training/global_step.h"
#include "runtime/training/saver.h"
#include "runtime/training/second_or_step_timer.h"
#include "runtime/training/session_run_hook.h"
#include "runtime/training/summary_writer.h"

namespace rill {

// Every field has an initializer, so that options can be written as
// designated initializers ({.save_steps = 100}) without GCC warning about
// the fields left out.
struct CheckpointSaverHookOptions {
  // Created if missing; holds the checkpoints, `checkpoint` and graph.pbtxt.
  std::string checkpoint_dir = {};
  // Exactly one of the two.
  std::optional<double> save_secs = std::nullopt;
  std::optional<int64_t> save_steps = std::nullopt;
  // Required; must outlive the hook.
  Saver* saver = nullptr;
  std::string checkpoint_basename = "model.ckpt";
  std::string global_step_tensor = kGlobalStepTensorName;
  // The graph the session runs. When given: graph.pbtxt (text GraphDef),
  // the writer's graph event and, unless meta_graph is given, the .meta of
  // every checkpoint (the graph with the saver's SaverDef).
  std::optional<GraphDef> graph = std::nullopt;
  // The .meta of every checkpoint (and, without `graph`, its graph_def is
  // the graph).
  std::optional<MetaGraphDef> meta_graph = std::nullopt;
  // Optional; must outlive the hook. Gets the graph and meta graph events
  // once and a SessionLog CHECKPOINT after every save.
  SummaryWriter* summary_writer = nullptr;
  // Where each save is acknowledged ("CheckpointSaverHook: saved PREFIX"),
  // once the checkpoint state file lists it; null: stderr (LogSink::Discard()
  // for none).
  LogSink* log = nullptr;
  HookClock clock = nullptr;  // Empty: absl::Now.
};

// Saves a checkpoint <checkpoint_dir>/<basename>-<global step> when a
// session is created (unless it is the newest checkpoint, the one the
// session was restored from), then every save_secs or save_steps, and at
// End unless the last step was saved already.
// Thread safety: none of its own; called as SessionRunHook is.
class CheckpointSaverHook final : public SessionRunHook {
 public:
  // INVALID_ARGUMENT for an empty checkpoint_dir or basename, no saver, or
  // not exactly one positive save_secs / save_steps.
  static absl::StatusOr<std::unique_ptr<CheckpointSaverHook>> Create(
      CheckpointSaverHookOptions options);

  // Writes graph.pbtxt and the graph events, then saves at the current step
  // unless the newest checkpoint is that step's.
  absl::Status AfterCreateSession(Session& session) override;
  std::vector<std::string> BeforeRun(SessionRunContext& context) override;
  // Saves when the timer fires for the global step after the step.
  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override;
  absl::Status End(Session& session) override;

  // <checkpoint_dir>/<basename>: what checkpoint names start with, and the
  // checkpoint_path of the CHECKPOINT events.
  const std::string& save_path() const { return save_path_; }

 private:
  CheckpointSaverHook(CheckpointSaverHookOptions options, std::optional<MetaGraphDef> meta_graph,
                      SecondOrStepTimer timer);
  absl::Status Save(Session& session, int64_t step);

  // Constant after construction. options_.meta_graph is moved to
  // meta_graph_.
  const CheckpointSaverHookOptions options_;
  const std::string save_path_;
  // The .meta written beside each checkpoint, if any.
  const std::optional<MetaGraphDef> meta_graph_;
  // graph.pbtxt and the graph event: options_.graph, else meta_graph_'s
  // graph, else none.
  const GraphDef* const graph_;

  SecondOrStepTimer timer_;
  bool graph_events_written_ = false;
};

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_CHECKPOINT_SAVER_HOOK_H_
