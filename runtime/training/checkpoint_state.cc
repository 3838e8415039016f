#include "runtime/training/checkpoint_state.h"

#include <algorithm>
#include <filesystem>

#include "absl/strings/str_format.h"
#include "google/protobuf/text_format.h"
#include "graph/status_macros.h"
#include "graph/text_proto.h"
#include "io/bundle_format.h"
#include "io/posix_file.h"

namespace rill {
namespace {

std::string JoinPath(const std::string& dir, const std::string& path) {
  if (path.empty() || path.front() == '/') return path;
  return dir + "/" + path;
}

// A checkpoint path as the state file of a relative `dir` holds it: a
// saver names checkpoints relative to the working directory
// ("logs/model.ckpt-5"), and the file lists them relative to `dir`
// ("model.ckpt-5"), which is how they are read back (JoinPath). With an
// absolute `dir` paths are kept as given, as TensorFlow keeps them.
std::string ForStateFile(const std::string& dir, const std::string& path) {
  if (dir.empty() || dir.front() == '/' || path.empty() || path.front() == '/') return path;
  const std::filesystem::path relative =
      std::filesystem::path(path).lexically_normal().lexically_relative(
          std::filesystem::path(dir).lexically_normal());
  return relative.empty() ? path : relative.string();
}

}  // namespace

std::vector<std::string> CheckpointsNewestFirst(const CheckpointState& state) {
  std::vector<std::string> prefixes = {state.model_checkpoint_path()};
  const auto& all = state.all_model_checkpoint_paths();
  for (auto it = all.rbegin(); it != all.rend(); ++it) {
    if (std::find(prefixes.begin(), prefixes.end(), *it) == prefixes.end()) {
      prefixes.push_back(*it);
    }
  }
  return prefixes;
}

std::string CheckpointStatePath(const std::string& dir, const std::string& latest_filename) {
  return JoinPath(dir, latest_filename);
}

bool CheckpointExists(const std::string& prefix, io::Env* env) {
  return env->FileExists(io::IndexFilename(prefix));
}

absl::StatusOr<std::optional<CheckpointState>> GetCheckpointState(
    const std::string& dir, const std::string& latest_filename, io::Env* env) {
  const std::string path = JoinPath(dir, latest_filename);
  if (!env->FileExists(path)) return std::nullopt;
  ASSIGN_OR_RETURN(const std::string text, io::ReadFileToString(path, env));
  CheckpointState state;
  RETURN_IF_ERROR(ParseTextProto(text, &state, path));
  if (state.model_checkpoint_path().empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("'%s' names no model_checkpoint_path", path));
  }
  state.set_model_checkpoint_path(JoinPath(dir, state.model_checkpoint_path()));
  for (std::string& p : *state.mutable_all_model_checkpoint_paths()) p = JoinPath(dir, p);
  return state;
}

absl::Status UpdateCheckpointState(const std::string& dir, const std::string& newest,
                                   std::vector<std::string> all_paths,
                                   const std::string& latest_filename, io::Env* env) {
  if (all_paths.empty() || all_paths.back() != newest) all_paths.push_back(newest);
  CheckpointState state;
  state.set_model_checkpoint_path(ForStateFile(dir, newest));
  for (const std::string& p : all_paths) state.add_all_model_checkpoint_paths(ForStateFile(dir, p));
  std::string text;
  if (!google::protobuf::TextFormat::PrintToString(state, &text)) {
    return absl::InternalError("cannot print the checkpoint state");
  }
  RETURN_IF_ERROR(io::CreateDirectories(dir, env));
  return io::WriteFileAtomically(JoinPath(dir, latest_filename), text, env);
}

std::optional<std::string> LatestCheckpoint(const std::string& dir,
                                            const std::string& latest_filename, io::Env* env) {
  absl::StatusOr<std::optional<CheckpointState>> state =
      GetCheckpointState(dir, latest_filename, env);
  if (!state.ok() || !state->has_value()) return std::nullopt;
  const std::string& prefix = (*state)->model_checkpoint_path();
  if (!CheckpointExists(prefix, env)) return std::nullopt;
  return prefix;
}

}  // namespace rill
