// SessionManager, as tf.train.SessionManager: the chief's session restores
// the newest checkpoint or initializes the model; every other worker's
// waits until the model is ready. Both check readiness with the graph's
// ready op (names of uninitialized variables).
#ifndef RILL_RUNTIME_TRAINING_SESSION_MANAGER_H_
#define RILL_RUNTIME_TRAINING_SESSION_MANAGER_H_

#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "graph/proto/graph.pb.h"
#include "runtime/session.h"
#include "runtime/training/saver.h"

namespace rill {

// The ops a supervised session runs, by name, so that a graph read from a
// file works as well as one built in C++. An empty name means none.
struct Scaffold {
  std::string init_op;                  // Run when nothing was restored.
  std::string ready_op;                 // 1-D string: uninitialized variables' names.
  std::string ready_for_local_init_op;  // Must pass before local_init_op runs.
  std::string local_init_op;            // Run in every new session.
  std::string summary_op;               // A serialized Summary (for hooks).
  std::string global_step;              // "global_step:0" (for hooks).
  std::shared_ptr<Saver> saver;         // Restores the chief's checkpoints.
};

struct SessionManagerOptions {
  // target: "" for this process, "zmq://HOST:PORT" for a cluster.
  SessionOptions session_options;
  // How long a waiting worker (or a chief waiting for a checkpoint) sleeps
  // between attempts.
  absl::Duration recovery_wait = absl::Seconds(30);
  // Where the chief says which checkpoint it restored ("SessionManager:
  // restored PREFIX"); null: stderr (LogSink::Discard() for none).
  LogSink* log = nullptr;
};

// Thread safety: the methods may be called from several threads; Cancel
// wakes every wait.
class SessionManager {
 public:
  SessionManager(GraphDef graph, Scaffold scaffold, SessionManagerOptions options);

  // The chief's session: restores the newest intact checkpoint listed in
  // `checkpoint_dir` (when there is one and a saver; a damaged or missing
  // one is logged and the one before it tried; DATA_LOSS naming each when
  // none restores), else runs init_op;
  // then local init; then the ready op must pass. FAILED_PRECONDITION
  // ("Init operations did not make model ready: ...") otherwise.
  // `*restored` (when given) says which happened.
  absl::StatusOr<std::unique_ptr<Session>> PrepareSession(const std::string& checkpoint_dir,
                                                          bool* restored = nullptr);

  // A non-chief's session: creates one, runs local init and the ready op
  // every recovery_wait until both pass. DEADLINE_EXCEEDED ("Session was
  // not ready after waiting N secs.") after `max_wait`; CANCELLED after
  // Cancel. A cluster that is not reachable yet counts as not ready.
  absl::StatusOr<std::unique_ptr<Session>> WaitForSession(absl::Duration max_wait);

  // nullopt when the model is ready; otherwise why not ("Variables not
  // initialized: a, b"). Errors other than "not initialized" are returned.
  absl::StatusOr<std::optional<std::string>> ModelNotReady(Session& session,
                                                           const std::string& ready_op) const;

  // Ends every wait (now and later) with CANCELLED.
  void Cancel() { cancelled_.Notify(); }

  const Scaffold& scaffold() const { return scaffold_; }
  const GraphDef& graph() const { return graph_; }
  const SessionManagerOptions& options() const { return options_; }

 private:
  // Local init when ready_for_local_init_op passes; the reason when not.
  absl::StatusOr<std::optional<std::string>> TryLocalInit(Session& session) const;
  // Whether a checkpoint listed in `checkpoint_dir` was restored.
  absl::StatusOr<bool> RestoreNewestIntact(Session& session, const std::string& checkpoint_dir);

  const GraphDef graph_;
  const Scaffold scaffold_;
  const SessionManagerOptions options_;
  absl::Notification cancelled_;
};

// Whether `status` says that a task went away or a step was aborted: a
// supervised session re-creates its session and tries again.
bool IsRecoverable(const absl::Status& status);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_SESSION_MANAGER_H_
