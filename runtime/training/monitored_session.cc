#include "runtime/training/monitored_session.h"

#include <cstdio>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "runtime/training/basic_session_run_hooks.h"
#include "runtime/training/summary_writer.h"

namespace rill {

absl::StatusOr<std::unique_ptr<Session>> ChiefSessionCreator::CreateSession() {
  return manager_->PrepareSession(checkpoint_dir_);
}

absl::StatusOr<std::unique_ptr<Session>> WorkerSessionCreator::CreateSession() {
  return manager_->WaitForSession(max_wait_);
}

MonitoredSession::MonitoredSession(std::unique_ptr<SessionCreator> creator,
                                   std::vector<std::unique_ptr<SessionRunHook>> hooks,
                                   MonitoredSessionOptions options)
    : creator_(std::move(creator)), hooks_(std::move(hooks)), options_(options) {}

MonitoredSession::~MonitoredSession() {
  if (!closed_) (void)Close();
}

absl::StatusOr<std::unique_ptr<MonitoredSession>> MonitoredSession::Create(
    std::unique_ptr<SessionCreator> creator, std::vector<std::unique_ptr<SessionRunHook>> hooks,
    MonitoredSessionOptions options) {
  std::unique_ptr<MonitoredSession> monitored(
      new MonitoredSession(std::move(creator), std::move(hooks), options));
  for (const auto& hook : monitored->hooks_) RETURN_IF_ERROR(hook->Begin());
  RETURN_IF_ERROR(monitored->CreateWithRecovery(absl::OkStatus()));
  return monitored;
}

absl::Status MonitoredSession::CreateWithRecovery(const absl::Status& cause) {
  LogSink* const log = OrDefault(options_.log);
  const absl::Time deadline = absl::Now() + options_.max_recovery_time;
  if (session_ != nullptr) (void)CloseSession();
  if (!cause.ok()) {
    log->Log("MonitoredSession: %s; creating a new session", std::string(cause.message()).c_str());
  }
  while (true) {
    absl::StatusOr<std::unique_ptr<Session>> created = creator_->CreateSession();
    if (created.ok()) {
      session_ = *std::move(created);
      ++sessions_created_;
      break;
    }
    if (!options_.recover || !IsRecoverable(created.status()) || absl::Now() > deadline) {
      return created.status();
    }
    log->Log("MonitoredSession: cannot create a session yet (%s); retrying",
             std::string(created.status().message()).c_str());
    absl::SleepFor(options_.recovery_wait);
  }
  for (const auto& hook : hooks_) RETURN_IF_ERROR(hook->AfterCreateSession(*session_));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Tensor>> MonitoredSession::RunOnce(const SessionRunArgs& args) {
  SessionRunContext context(args, session_.get());
  std::vector<std::string> fetches = args.fetches;
  std::vector<size_t> hook_begin(hooks_.size() + 1, fetches.size());
  for (size_t i = 0; i < hooks_.size(); ++i) {
    hook_begin[i] = fetches.size();
    const std::vector<std::string> extra = hooks_[i]->BeforeRun(context);
    fetches.insert(fetches.end(), extra.begin(), extra.end());
  }
  hook_begin[hooks_.size()] = fetches.size();
  ASSIGN_OR_RETURN(std::vector<Tensor> values, session_->Run(args.feeds, fetches, args.targets));
  for (size_t i = 0; i < hooks_.size(); ++i) {
    const std::vector<Tensor> mine(values.begin() + hook_begin[i],
                                   values.begin() + hook_begin[i + 1]);
    RETURN_IF_ERROR(hooks_[i]->AfterRun(context, mine));
  }
  if (context.stop_requested()) should_stop_ = true;
  values.resize(args.fetches.size());
  return values;
}

absl::StatusOr<std::vector<Tensor>> MonitoredSession::Run(
    const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets) {
  if (closed_) return absl::FailedPreconditionError("MonitoredSession is closed");
  const SessionRunArgs args{feeds, fetches, targets};
  while (true) {
    absl::StatusOr<std::vector<Tensor>> values = RunOnce(args);
    if (!values.ok()) {
      absl::Status error = values.status();
      for (const auto& hook : hooks_) {
        // A hook cannot turn a failed step into a success.
        if (absl::Status explained = hook->AfterRunError(*session_, error); !explained.ok()) {
          error = std::move(explained);
        }
      }
      values = std::move(error);
    }
    if (values.ok() || !options_.recover || !IsRecoverable(values.status())) {
      if (!values.ok()) failed_ = true;
      return values;
    }
    if (absl::Status recreated = CreateWithRecovery(values.status()); !recreated.ok()) {
      failed_ = true;
      return recreated;
    }
  }
}

absl::Status MonitoredSession::Close() {
  if (closed_) return absl::OkStatus();
  closed_ = true;
  absl::Status status;
  if (session_ != nullptr && !failed_) {
    for (const auto& hook : hooks_) {
      if (absl::Status s = hook->End(*session_); !s.ok() && status.ok()) status = s;
    }
  }
  if (session_ != nullptr) {
    if (absl::Status s = CloseSession(); !s.ok() && status.ok()) status = s;
  }
  return status;
}

absl::Status MonitoredSession::CloseSession() {
  const absl::Status status = session_->Close();
  for (const auto& hook : hooks_) hook->AfterCloseSession(*session_);
  session_.reset();
  return status;
}

namespace {

// Keeps what the chief's standard hooks point to (the event writer, the
// saver) alive as long as the session, and closes the writer at the end.
// It runs last, after the hooks that write to it.
class ResourceOwnerHook final : public SessionRunHook {
 public:
  ResourceOwnerHook(std::shared_ptr<SummaryWriter> writer, std::shared_ptr<Saver> saver)
      : writer_(std::move(writer)), saver_(std::move(saver)) {}
  ~ResourceOwnerHook() override {
    if (writer_ != nullptr) (void)writer_->Close();
  }
  absl::Status End(Session& session) override {
    (void)session;
    return writer_ != nullptr ? writer_->Close() : absl::OkStatus();
  }

 private:
  const std::shared_ptr<SummaryWriter> writer_;
  const std::shared_ptr<Saver> saver_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<MonitoredSession>> NewMonitoredTrainingSession(
    GraphDef graph, Scaffold scaffold, MonitoredTrainingSessionOptions options) {
  if (options.manager.log == nullptr) options.manager.log = options.log;
  if (options.monitored.log == nullptr) options.monitored.log = options.log;
  std::vector<std::unique_ptr<SessionRunHook>> hooks;
  std::shared_ptr<SummaryWriter> writer;
  const std::string global_step =
      scaffold.global_step.empty() ? std::string(kGlobalStepTensorName) : scaffold.global_step;
  if (options.is_chief) {
    for (auto& hook : options.chief_only_hooks) hooks.push_back(std::move(hook));
    const std::string summary_dir =
        options.summary_dir.empty() ? options.checkpoint_dir : options.summary_dir;
    if (!summary_dir.empty()) {
      ASSIGN_OR_RETURN(std::unique_ptr<SummaryWriter> created, SummaryWriter::Create(summary_dir));
      writer = std::move(created);
    }
    if (options.log_step_count_steps > 0) {
      StepCounterHookOptions counter;
      counter.every_n_steps = options.log_step_count_steps;
      counter.summary_writer = writer.get();
      counter.global_step_tensor = global_step;
      counter.log = options.log;
      ASSIGN_OR_RETURN(std::unique_ptr<StepCounterHook> hook, StepCounterHook::Create(counter));
      hooks.push_back(std::move(hook));
    }
    // TensorFlow's defaults: summaries every 100 steps unless seconds are
    // given; checkpoints every 600 s unless steps are given.
    if (writer != nullptr && !scaffold.summary_op.empty()) {
      SummarySaverHookOptions summaries;
      if (options.save_summaries_secs.has_value()) {
        summaries.save_secs = absl::ToDoubleSeconds(*options.save_summaries_secs);
      } else {
        summaries.save_steps = options.save_summaries_steps.value_or(100);
      }
      summaries.summary_writer = writer.get();
      summaries.summary_op = scaffold.summary_op;
      summaries.global_step_tensor = global_step;
      if (summaries.save_steps.value_or(1) > 0 && summaries.save_secs.value_or(1) > 0) {
        ASSIGN_OR_RETURN(std::unique_ptr<SummarySaverHook> hook,
                         SummarySaverHook::Create(summaries));
        hooks.push_back(std::move(hook));
      }
    }
    if (!options.checkpoint_dir.empty() && scaffold.saver != nullptr) {
      CheckpointSaverHookOptions checkpoints;
      checkpoints.checkpoint_dir = options.checkpoint_dir;
      if (options.save_checkpoint_steps.has_value()) {
        checkpoints.save_steps = *options.save_checkpoint_steps;
      } else {
        checkpoints.save_secs =
            absl::ToDoubleSeconds(options.save_checkpoint_secs.value_or(absl::Seconds(600)));
      }
      checkpoints.saver = scaffold.saver.get();
      checkpoints.global_step_tensor = global_step;
      checkpoints.graph = graph;
      checkpoints.summary_writer = writer.get();
      checkpoints.log = options.log;
      if (checkpoints.save_steps.value_or(1) > 0 && checkpoints.save_secs.value_or(1) > 0) {
        ASSIGN_OR_RETURN(std::unique_ptr<CheckpointSaverHook> hook,
                         CheckpointSaverHook::Create(checkpoints));
        hooks.push_back(std::move(hook));
      }
    }
  }
  for (auto& hook : options.hooks) hooks.push_back(std::move(hook));
  hooks.push_back(std::make_unique<ResourceOwnerHook>(writer, scaffold.saver));

  const std::string checkpoint_dir = options.checkpoint_dir;
  auto manager =
      std::make_shared<SessionManager>(std::move(graph), std::move(scaffold), options.manager);
  std::unique_ptr<SessionCreator> creator;
  if (options.is_chief) {
    creator = std::make_unique<ChiefSessionCreator>(manager, checkpoint_dir);
  } else {
    creator = std::make_unique<WorkerSessionCreator>(manager, options.max_wait);
  }
  return MonitoredSession::Create(std::move(creator), std::move(hooks), options.monitored);
}

}  // namespace rill
