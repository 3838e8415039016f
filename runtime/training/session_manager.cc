#include "runtime/training/session_manager.h"

#include <cstdio>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "io/bundle_format.h"
#include "runtime/training/checkpoint_state.h"

namespace rill {

bool IsRecoverable(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsAborted(status);
}

SessionManager::SessionManager(GraphDef graph, Scaffold scaffold, SessionManagerOptions options)
    : graph_(std::move(graph)), scaffold_(std::move(scaffold)), options_(std::move(options)) {}

absl::StatusOr<std::optional<std::string>> SessionManager::ModelNotReady(
    Session& session, const std::string& ready_op) const {
  if (ready_op.empty()) return std::nullopt;
  absl::StatusOr<std::vector<Tensor>> out = session.Run({}, {ready_op}, {});
  if (!out.ok()) {
    // A variable read before its initialization fails this way.
    if (absl::IsFailedPrecondition(out.status()) &&
        absl::StrContains(out.status().message(), "uninitialized")) {
      return std::string(out.status().message());
    }
    return out.status();
  }
  const Tensor& names = out->front();
  // TensorFlow also takes an int32 result as ready (a legacy form).
  if (names.NumElements() == 0 || names.dtype() == DT_INT32) return std::nullopt;
  if (names.dtype() != DT_STRING) {
    return absl::InvalidArgumentError(
        absl::StrFormat("ready op '%s' gives %s, want the names of variables (string)", ready_op,
                        DataTypeString(names.dtype())));
  }
  std::vector<std::string> list(names.data<std::string>(),
                                names.data<std::string>() + names.NumElements());
  return "Variables not initialized: " + absl::StrJoin(list, ", ");
}

absl::StatusOr<std::optional<std::string>> SessionManager::TryLocalInit(Session& session) const {
  if (scaffold_.local_init_op.empty()) return std::nullopt;
  ASSIGN_OR_RETURN(std::optional<std::string> not_ready,
                   ModelNotReady(session, scaffold_.ready_for_local_init_op));
  if (not_ready.has_value()) return not_ready;
  RETURN_IF_ERROR(session.Run({}, {}, {scaffold_.local_init_op}).status());
  return std::nullopt;
}

namespace {

// What a checkpoint that does not restore says of it: damaged or gone
// (another, older one may do), or a cluster that failed (which no other
// checkpoint mends).
bool IsDamagedCheckpoint(const absl::Status& status) {
  switch (status.code()) {
    case absl::StatusCode::kDataLoss:
    case absl::StatusCode::kNotFound:
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kOutOfRange:
      return true;
    default:
      return false;
  }
}

}  // namespace

absl::StatusOr<bool> SessionManager::RestoreNewestIntact(Session& session,
                                                         const std::string& checkpoint_dir) {
  ASSIGN_OR_RETURN(std::optional<CheckpointState> state, GetCheckpointState(checkpoint_dir));
  if (!state.has_value()) return false;
  std::vector<std::string> skipped;
  for (const std::string& prefix : CheckpointsNewestFirst(*state)) {
    absl::Status restored =
        CheckpointExists(prefix)
            ? scaffold_.saver->Restore(session, prefix)
            : absl::NotFoundError(absl::StrFormat("%s is gone", io::IndexFilename(prefix)));
    if (restored.ok()) {
      scaffold_.saver->RecoverLastCheckpoints(
          {state->all_model_checkpoint_paths().begin(), state->all_model_checkpoint_paths().end()});
      OrDefault(options_.log)
          ->Log("SessionManager: restored %s%s", prefix.c_str(),
                skipped.empty() ? ""
                                : absl::StrCat(", the newest intact checkpoint; skipped ",
                                               absl::StrJoin(skipped, "; "))
                                      .c_str());
      return true;
    }
    if (!IsDamagedCheckpoint(restored)) return restored;
    skipped.push_back(absl::StrCat(prefix, " (", restored.message(), ")"));
    OrDefault(options_.log)
        ->Log("SessionManager: checkpoint %s does not restore: %s", prefix.c_str(),
              std::string(restored.message()).c_str());
  }
  // Listed checkpoints and none restores: starting over would silently
  // drop the training they hold.
  return absl::DataLossError(absl::StrFormat("no checkpoint listed in %s/%s restores: %s",
                                             checkpoint_dir, kCheckpointStateFile,
                                             absl::StrJoin(skipped, "; ")));
}

absl::StatusOr<std::unique_ptr<Session>> SessionManager::PrepareSession(
    const std::string& checkpoint_dir, bool* restored) {
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options_.session_options, graph_));
  bool did_restore = false;
  if (scaffold_.saver != nullptr && !checkpoint_dir.empty()) {
    ASSIGN_OR_RETURN(did_restore, RestoreNewestIntact(*session, checkpoint_dir));
  }
  if (!did_restore) {
    if (scaffold_.init_op.empty() && scaffold_.local_init_op.empty()) {
      return absl::FailedPreconditionError(
          "Model is not initialized and no init_op or local_init_op was given");
    }
    if (!scaffold_.init_op.empty()) {
      RETURN_IF_ERROR(session->Run({}, {}, {scaffold_.init_op}).status());
    }
  }
  ASSIGN_OR_RETURN(std::optional<std::string> local, TryLocalInit(*session));
  if (local.has_value()) {
    return absl::FailedPreconditionError(
        "Init operations did not make model ready for local_init: " + *local);
  }
  ASSIGN_OR_RETURN(std::optional<std::string> not_ready,
                   ModelNotReady(*session, scaffold_.ready_op));
  if (not_ready.has_value()) {
    return absl::FailedPreconditionError("Init operations did not make model ready: " + *not_ready);
  }
  if (restored != nullptr) *restored = did_restore;
  return session;
}

absl::StatusOr<std::unique_ptr<Session>> SessionManager::WaitForSession(absl::Duration max_wait) {
  const absl::Time deadline = absl::Now() + max_wait;
  while (true) {
    if (cancelled_.HasBeenNotified()) return absl::CancelledError("waiting for the session");
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options_.session_options, graph_);
    std::string why;
    if (session.ok()) {
      absl::StatusOr<std::optional<std::string>> local = TryLocalInit(**session);
      absl::StatusOr<std::optional<std::string>> ready =
          local.ok() && !local->has_value() ? ModelNotReady(**session, scaffold_.ready_op) : local;
      if (ready.ok() && !ready->has_value()) return session;
      if (!ready.ok() && !IsRecoverable(ready.status())) return ready.status();
      why = ready.ok() ? **ready : std::string(ready.status().message());
      (void)(*session)->Close();
    } else if (IsRecoverable(session.status())) {
      why = std::string(session.status().message());
    } else {
      return session.status();
    }
    const absl::Duration left = deadline - absl::Now();
    if (left < options_.recovery_wait) {
      return absl::DeadlineExceededError(
          absl::StrFormat("Session was not ready after waiting %d secs. (%s)",
                          absl::ToInt64Seconds(max_wait), why));
    }
    // Readiness lives on other tasks, so it is polled; Cancel ends the wait.
    cancelled_.WaitForNotificationWithTimeout(options_.recovery_wait);
  }
}

}  // namespace rill
