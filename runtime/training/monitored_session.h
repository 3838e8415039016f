// MonitoredSession, as tf.train.MonitoredSession: a session made by a
// creator (the chief's or a waiting worker's), hooks around every step, and
// recovery: a step that fails because a task went away re-creates the
// session with the same creator and runs again.
#ifndef RILL_RUNTIME_TRAINING_MONITORED_SESSION_H_
#define RILL_RUNTIME_TRAINING_MONITORED_SESSION_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "graph/proto/graph.pb.h"
#include "runtime/session.h"
#include "runtime/training/session_manager.h"
#include "runtime/training/session_run_hook.h"

namespace rill {

class SessionCreator {
 public:
  virtual ~SessionCreator() = default;
  virtual absl::StatusOr<std::unique_ptr<Session>> CreateSession() = 0;
  // Ends a creation that waits (CANCELLED).
  virtual void Cancel() {}
};

// The chief: restores the newest checkpoint of `checkpoint_dir` or
// initializes (SessionManager::PrepareSession).
class ChiefSessionCreator final : public SessionCreator {
 public:
  ChiefSessionCreator(std::shared_ptr<SessionManager> manager, std::string checkpoint_dir)
      : manager_(std::move(manager)), checkpoint_dir_(std::move(checkpoint_dir)) {}
  absl::StatusOr<std::unique_ptr<Session>> CreateSession() override;
  void Cancel() override { manager_->Cancel(); }

 private:
  const std::shared_ptr<SessionManager> manager_;
  const std::string checkpoint_dir_;
};

// Any other worker: waits until the chief made the model ready.
class WorkerSessionCreator final : public SessionCreator {
 public:
  WorkerSessionCreator(std::shared_ptr<SessionManager> manager, absl::Duration max_wait)
      : manager_(std::move(manager)), max_wait_(max_wait) {}
  absl::StatusOr<std::unique_ptr<Session>> CreateSession() override;
  void Cancel() override { manager_->Cancel(); }

 private:
  const std::shared_ptr<SessionManager> manager_;
  const absl::Duration max_wait_;
};

struct MonitoredSessionOptions {
  // Re-create the session after UNAVAILABLE or ABORTED (a restarted ps or
  // chief) and run the step again; false: return the error.
  bool recover = true;
  // How long recovery keeps trying to re-create a session before it gives
  // up with the last error, and how long it waits between attempts.
  absl::Duration max_recovery_time = absl::Minutes(30);
  absl::Duration recovery_wait = absl::Seconds(1);
  // Where recovery says what happened; null: stderr.
  LogSink* log = nullptr;
};

// Thread safety: one thread runs it (as TensorFlow's).
class MonitoredSession {
 public:
  // Calls every hook's Begin, creates the session (with recovery),
  // then every hook's AfterCreateSession.
  static absl::StatusOr<std::unique_ptr<MonitoredSession>> Create(
      std::unique_ptr<SessionCreator> creator, std::vector<std::unique_ptr<SessionRunHook>> hooks,
      MonitoredSessionOptions options = {});
  ~MonitoredSession();
  MonitoredSession(const MonitoredSession&) = delete;
  MonitoredSession& operator=(const MonitoredSession&) = delete;

  // One step with the hooks' fetches added; after a recoverable error the
  // session is re-created and the step runs again.
  absl::StatusOr<std::vector<Tensor>> Run(const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets = {});

  // A hook asked to stop (e.g. the last step was reached).
  bool ShouldStop() const { return should_stop_; }

  // Calls every hook's End (unless a step failed), then closes the session.
  absl::Status Close();

  // Sessions created so far (1 + recoveries).
  int sessions_created() const { return sessions_created_; }
  // The current session, for what hooks do not cover. May change after a
  // recovery.
  Session* raw_session() const { return session_.get(); }

 private:
  MonitoredSession(std::unique_ptr<SessionCreator> creator,
                   std::vector<std::unique_ptr<SessionRunHook>> hooks,
                   MonitoredSessionOptions options);
  // Creates the session, retrying recoverable errors, then runs the hooks'
  // AfterCreateSession.
  absl::Status CreateWithRecovery(const absl::Status& cause);
  absl::StatusOr<std::vector<Tensor>> RunOnce(const SessionRunArgs& args);
  // Closes the session (cancelling its steps), tells the hooks, drops it.
  absl::Status CloseSession();

  std::unique_ptr<SessionCreator> creator_;
  std::vector<std::unique_ptr<SessionRunHook>> hooks_;
  const MonitoredSessionOptions options_;
  std::unique_ptr<Session> session_;
  bool should_stop_ = false;
  bool failed_ = false;
  bool closed_ = false;
  int sessions_created_ = 0;
};

// tf.train.MonitoredTrainingSession's settings. The chief gets its
// standard hooks (step counter, summaries, checkpoints) added before the
// caller's; other workers run only the caller's hooks.
struct MonitoredTrainingSessionOptions {
  // Where the session, its manager and the hooks it makes write (restores,
  // recoveries, global_step/sec, saves), unless manager.log or
  // monitored.log say otherwise; null: stderr.
  LogSink* log = nullptr;
  SessionManagerOptions manager;
  bool is_chief = true;
  // Checkpoints (and, unless summary_dir is set, events) go here; empty:
  // none, and the chief always initializes.
  std::string checkpoint_dir;
  std::string summary_dir;
  // Checkpoint every this many seconds (default 600) or steps; 0 or unset
  // turns that one off.
  std::optional<absl::Duration> save_checkpoint_secs;
  std::optional<int64_t> save_checkpoint_steps;
  // Summaries every this many steps (default 100) or seconds.
  std::optional<int64_t> save_summaries_steps;
  std::optional<absl::Duration> save_summaries_secs;
  // global_step/sec every this many steps; 0: off.
  int64_t log_step_count_steps = 100;
  // How long a worker waits for the chief.
  absl::Duration max_wait = absl::Hours(2);
  std::vector<std::unique_ptr<SessionRunHook>> hooks;
  std::vector<std::unique_ptr<SessionRunHook>> chief_only_hooks;
  MonitoredSessionOptions monitored;
};

absl::StatusOr<std::unique_ptr<MonitoredSession>> NewMonitoredTrainingSession(
    GraphDef graph, Scaffold scaffold, MonitoredTrainingSessionOptions options);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_MONITORED_SESSION_H_
