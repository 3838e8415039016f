// Saver, as tf.train.Saver: builds TensorFlow's save/restore subgraph for a
// set of variables (one SaveV2 per device when sharded, joined by
// MergeV2Checkpoints), runs it through any Session, keeps the newest
// checkpoints and the `checkpoint` state file.
//
// Graph names are TensorFlow's, under the scope "save" ("save_1", ...):
//   save/Const                    the checkpoint prefix to feed (default "model")
//   save/SaveV2, save/control_dependency     the save (not sharded)
//   save/StringJoin, save/num_shards, save/ShardedFilename[_i], save/SaveV2[_i],
//   save/MergeV2Checkpoints, save/Identity   the save (sharded)
//   save/RestoreV2[_i], save/Assign[_j], save/restore_all   the restore
// so graphs and .meta files move between rill and TensorFlow.
#ifndef RILL_RUNTIME_TRAINING_SAVER_H_
#define RILL_RUNTIME_TRAINING_SAVER_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/proto/meta_graph.pb.h"
#include "graph/proto/saver.pb.h"
#include "graph/scope.h"
#include "ops/variable.h"
#include "runtime/session.h"

namespace rill {

struct SaverOptions {
  // Checkpoints kept on disk; older ones are deleted. 0 keeps all.
  int max_to_keep = 5;
  // Of the checkpoints past max_to_keep, one per this many hours is kept.
  float keep_checkpoint_every_n_hours = 10000.0f;
  // One SaveV2 per device (each ps task writes its own variables), merged.
  bool sharded = false;
  // "model.ckpt-00001000" instead of "model.ckpt-1000".
  bool pad_step_number = false;
  // The state file's name in the save directory.
  std::string latest_filename = "checkpoint";
};

// Thread safety: Save and Restore may be called from several threads; they
// are serialized.
class Saver {
 public:
  // Builds the save and restore ops for `variables` in `scope`'s graph,
  // each keyed by its op name, or a part of a partitioned variable (one
  // with a SaveSliceInfo) by the full name with its slice, so that the
  // checkpoint holds the whole variable as TensorFlow's does.
  // INVALID_ARGUMENT for no variables, a null one, two with one key and
  // slice, or a key saved both whole and in slices.
  static absl::StatusOr<std::unique_ptr<Saver>> Build(const Scope& scope,
                                                      const std::vector<Variable>& variables,
                                                      const SaverOptions& options = {});
  // The same for variable references (VariableV2 outputs, as
  // AllVariables lists them).
  static absl::StatusOr<std::unique_ptr<Saver>> BuildForVariables(
      const Scope& scope, const std::vector<Output>& variables, const SaverOptions& options = {});
  // The same with the checkpoint keys chosen by the caller (a variable
  // reference output per key, saved whole), as tf.train.Saver({"name": var}).
  static absl::StatusOr<std::unique_ptr<Saver>> BuildWithKeys(
      const Scope& scope, const std::map<std::string, Output>& variables_by_key,
      const SaverOptions& options = {});
  // A saver over a graph that already holds saver nodes (a .meta file's
  // SaverDef, or FindSaverDef's). Retention comes from `def`; of
  // `options`, only pad_step_number and latest_filename apply.
  static std::unique_ptr<Saver> FromSaverDef(const SaverDef& def, const SaverOptions& options = {});

  const SaverDef& saver_def() const { return def_; }

  // Saves to `save_path` ("-<global_step>" appended when given) and returns
  // the prefix. Then writes `meta_graph` (when given) beside it as
  // <prefix>.meta, lists the prefix in the state file of its directory
  // and deletes what max_to_keep no longer keeps (one that cannot be
  // deleted is tried again after the next save).
  // After OK the checkpoint and the state naming it survive a crash. After
  // an error the state file names what it named before, and the new files
  // are removed when no checkpoint was at the prefix before (best effort).
  // Saving again to a listed prefix replaces that checkpoint: a failure
  // midway loses it (its index goes first: it is never read half new).
  // Files go through io::Env::Default(), as the SaveV2 and RestoreV2
  // kernels' files do.
  absl::StatusOr<std::string> Save(Session& session, const std::string& save_path,
                                   std::optional<int64_t> global_step = std::nullopt,
                                   const MetaGraphDef* meta_graph = nullptr);
  // The prefix Save writes for `save_path` and `global_step`.
  std::string CheckpointPrefix(const std::string& save_path,
                               std::optional<int64_t> global_step) const;
  // Restores every variable of the saver from `prefix`. NOT_FOUND when no
  // checkpoint is there.
  absl::Status Restore(Session& session, const std::string& prefix);

  // The kept checkpoints, oldest first.
  std::vector<std::string> last_checkpoints() const;
  // Takes over checkpoints of an earlier run so that max_to_keep counts
  // them (tf.train.Saver.recover_last_checkpoints).
  void RecoverLastCheckpoints(const std::vector<std::string>& prefixes);

 private:
  struct Saveable;
  static absl::StatusOr<std::unique_ptr<Saver>> BuildFromSaveables(const Scope& scope,
                                                                   std::vector<Saveable> saveables,
                                                                   const SaverOptions& options);

  Saver(SaverDef def, SaverOptions options) : def_(std::move(def)), options_(std::move(options)) {}
  // Lists `prefix` as the newest checkpoint and moves those that retention
  // no longer keeps to retired_.
  void RecordAndRetire(const std::string& prefix) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const SaverDef def_;
  const SaverOptions options_;
  mutable absl::Mutex mu_;
  // (prefix, seconds since the epoch when saved), oldest first.
  std::vector<std::pair<std::string, double>> last_checkpoints_ ABSL_GUARDED_BY(mu_);
  double next_keep_time_ ABSL_GUARDED_BY(mu_) = 0;
  // Checkpoints to delete once the state file no longer lists them.
  std::vector<std::string> retired_ ABSL_GUARDED_BY(mu_);
};

// The SaverDef of the saver nodes TensorFlow's Python Saver builds, found
// by name in a graph that came without one (save/Const,
// save/control_dependency or save/Identity, save/restore_all). NOT_FOUND
// when the graph has no saver.
absl::StatusOr<SaverDef> FindSaverDef(const GraphDef& graph);

// Removes the files of the checkpoint `prefix` (.index, data files,
// .meta); missing files are not an error.
absl::Status DeleteCheckpoint(const std::string& prefix);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_SAVER_H_
