#include "runtime/training/checkpoint_saver_hook.h"

#include <cstdio>
#include <filesystem>
#include <utility>

#include "absl/memory/memory.h"
#include "absl/time/clock.h"
#include "graph/graph_io.h"
#include "graph/proto/event.pb.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/meta_graph.h"

namespace rill {
namespace {

constexpr char kHook[] = "CheckpointSaverHook";

}  // namespace

absl::StatusOr<std::unique_ptr<CheckpointSaverHook>> CheckpointSaverHook::Create(
    CheckpointSaverHookOptions options) {
  if (options.checkpoint_dir.empty()) {
    return absl::InvalidArgumentError("CheckpointSaverHook: checkpoint_dir is empty");
  }
  if (options.checkpoint_basename.empty()) {
    return absl::InvalidArgumentError("CheckpointSaverHook: checkpoint_basename is empty");
  }
  if (options.saver == nullptr) {
    return absl::InvalidArgumentError("CheckpointSaverHook: no saver");
  }
  ASSIGN_OR_RETURN(
      SecondOrStepTimer timer,
      SecondOrStepTimer::CreateFor({kHook, "save_secs", "save_steps"}, options.save_secs,
                                   options.save_steps, options.clock));
  // Kept once, in meta_graph_.
  std::optional<MetaGraphDef> meta_graph = std::move(options.meta_graph);
  options.meta_graph.reset();
  if (!meta_graph.has_value() && options.graph.has_value()) {
    meta_graph = MakeMetaGraph(*options.graph, &options.saver->saver_def());
  }
  return absl::WrapUnique(
      new CheckpointSaverHook(std::move(options), std::move(meta_graph), std::move(timer)));
}

CheckpointSaverHook::CheckpointSaverHook(CheckpointSaverHookOptions options,
                                         std::optional<MetaGraphDef> meta_graph,
                                         SecondOrStepTimer timer)
    : options_(std::move(options)),
      save_path_(options_.checkpoint_dir + (options_.checkpoint_dir.ends_with('/') ? "" : "/") +
                 options_.checkpoint_basename),
      meta_graph_(std::move(meta_graph)),
      graph_(options_.graph.has_value() ? &*options_.graph
             : meta_graph_.has_value()  ? &meta_graph_->graph_def()
                                        : nullptr),
      timer_(std::move(timer)) {}

absl::Status CheckpointSaverHook::AfterCreateSession(Session& session) {
  ASSIGN_OR_RETURN(const int64_t step, ReadGlobalStep(session, options_.global_step_tensor, kHook));
  RETURN_IF_ERROR(io::CreateDirectories(options_.checkpoint_dir));
  // Written for every session, as TensorFlow does: the file shows the graph
  // the newest checkpoints came from.
  if (graph_ != nullptr) {
    RETURN_IF_ERROR(io::WriteFileAtomically(options_.checkpoint_dir + "/graph.pbtxt",
                                            SerializeGraphDef(*graph_, GraphFormat::kText)));
  }
  if (options_.summary_writer != nullptr && !graph_events_written_) {
    if (graph_ != nullptr) RETURN_IF_ERROR(options_.summary_writer->AddGraph(*graph_));
    if (meta_graph_.has_value()) {
      Event event;
      event.set_wall_time(absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch()));
      event.set_meta_graph_def(meta_graph_->SerializeAsString());
      RETURN_IF_ERROR(options_.summary_writer->WriteEvent(event));
    }
    graph_events_written_ = true;
  }
  // The checkpoint of the state the session starts from, unless that is the
  // newest checkpoint already: the session was restored from it. Saving it
  // again would replace its files one by one, and a crash of the task that
  // writes them (a ps killed right after a restart) would leave the index
  // of one save beside the data of the other: the newest acknowledged
  // checkpoint unreadable.
  const std::optional<std::string> latest = LatestCheckpoint(options_.checkpoint_dir);
  const std::string prefix = options_.saver->CheckpointPrefix(save_path_, step);
  if (!latest.has_value() || std::filesystem::path(*latest).lexically_normal() !=
                                 std::filesystem::path(prefix).lexically_normal()) {
    RETURN_IF_ERROR(Save(session, step));
  }
  timer_.UpdateLastTriggeredStep(step);
  return absl::OkStatus();
}

std::vector<std::string> CheckpointSaverHook::BeforeRun(SessionRunContext& context) {
  (void)context;
  return {options_.global_step_tensor};
}

absl::Status CheckpointSaverHook::AfterRun(SessionRunContext& context,
                                           const std::vector<Tensor>& values) {
  ASSIGN_OR_RETURN(const int64_t stale,
                   FetchedGlobalStep(values, options_.global_step_tensor, kHook));
  // A step usually advances the global step by one. Only when the timer
  // would fire for that step is it worth a second run to read the real
  // value.
  if (!timer_.ShouldTriggerForStep(stale + 1)) return absl::OkStatus();
  Session& session = *context.session();
  ASSIGN_OR_RETURN(const int64_t step, ReadGlobalStep(session, options_.global_step_tensor, kHook));
  if (!timer_.ShouldTriggerForStep(step)) return absl::OkStatus();
  timer_.UpdateLastTriggeredStep(step);
  return Save(session, step);
}

absl::Status CheckpointSaverHook::End(Session& session) {
  ASSIGN_OR_RETURN(const int64_t step, ReadGlobalStep(session, options_.global_step_tensor, kHook));
  if (timer_.last_triggered_step() == step) return absl::OkStatus();
  return Save(session, step);
}

absl::Status CheckpointSaverHook::Save(Session& session, int64_t step) {
  ASSIGN_OR_RETURN(const std::string prefix,
                   options_.saver->Save(session, save_path_, step,
                                        meta_graph_.has_value() ? &*meta_graph_ : nullptr));
  OrDefault(options_.log)->Log("CheckpointSaverHook: saved %s", prefix.c_str());
  if (options_.summary_writer == nullptr) return absl::OkStatus();
  SessionLog log;
  log.set_status(SessionLog::CHECKPOINT);
  log.set_checkpoint_path(save_path_);
  return options_.summary_writer->AddSessionLog(log, step);
}

}  // namespace rill
