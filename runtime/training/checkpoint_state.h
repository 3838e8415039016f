// The text `checkpoint` file TensorFlow keeps in a save directory: which
// checkpoint is newest and which are kept, and LatestCheckpoint(dir).
#ifndef RILL_RUNTIME_TRAINING_CHECKPOINT_STATE_H_
#define RILL_RUNTIME_TRAINING_CHECKPOINT_STATE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/proto/checkpoint_state.pb.h"
#include "io/env.h"

namespace rill {

inline constexpr char kCheckpointStateFile[] = "checkpoint";

// The state in `dir`, with relative paths made relative to `dir`'s parent
// as TensorFlow reads them (prefixed with `dir`). nullopt when there is no
// state file; INVALID_ARGUMENT naming the file when it does not parse or
// names no checkpoint.
absl::StatusOr<std::optional<CheckpointState>> GetCheckpointState(
    const std::string& dir, const std::string& latest_filename = kCheckpointStateFile,
    io::Env* env = io::Env::Default());

// Writes the state file atomically and durably (synced, renamed over the
// old one, the directory synced): after OK a crash keeps it. `all_paths` (oldest first) should end
// with `newest`; it is appended when it does not. When `dir` is relative,
// the relative paths (as a saver names them: relative to the working
// directory, "logs/model.ckpt-5") are written relative to `dir`
// ("model.ckpt-5"), as TensorFlow writes them, so that GetCheckpointState
// finds them again.
absl::Status UpdateCheckpointState(const std::string& dir, const std::string& newest,
                                   std::vector<std::string> all_paths,
                                   const std::string& latest_filename = kCheckpointStateFile,
                                   io::Env* env = io::Env::Default());

// The newest checkpoint prefix listed in `dir` whose files exist, or
// nullopt (no state file, an unreadable one, or the checkpoint is gone).
std::optional<std::string> LatestCheckpoint(
    const std::string& dir, const std::string& latest_filename = kCheckpointStateFile,
    io::Env* env = io::Env::Default());

// The checkpoints `state` lists, newest first: its model_checkpoint_path,
// then the rest of all_model_checkpoint_paths from the newest.
std::vector<std::string> CheckpointsNewestFirst(const CheckpointState& state);

// The state file's path: `latest_filename` in `dir`.
std::string CheckpointStatePath(const std::string& dir,
                                const std::string& latest_filename = kCheckpointStateFile);

// Whether `prefix` names a V2 checkpoint (its .index exists).
bool CheckpointExists(const std::string& prefix, io::Env* env = io::Env::Default());

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_CHECKPOINT_STATE_H_
