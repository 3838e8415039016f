#include "runtime/training/saver.h"

#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/device_spec.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"
#include "io/bundle_format.h"
#include "io/bundle_writer.h"
#include "io/posix_file.h"
#include "ops/ops.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/meta_graph.h"

namespace rill {
namespace {

// "Assign", "Assign_1", ...: names inside the saver's own fresh scope, so
// they are exactly TensorFlow's.
std::string Numbered(std::string_view base, int i) {
  return i == 0 ? std::string(base) : absl::StrFormat("%s_%d", std::string(base), i);
}

Tensor StringVector(const std::vector<std::string>& values) {
  return Tensor::FromVector<std::string>(absl::MakeConstSpan(values),
                                         TensorShape({static_cast<int64_t>(values.size())}));
}

// A sharded saver writes each device's variables from the CPU of its task,
// as TensorFlow does.
absl::StatusOr<std::string> SaveDeviceOf(const Output& variable) {
  ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(variable.node()->requested_device()));
  if (spec.empty()) return std::string();
  spec.type = "CPU";
  spec.id = 0;
  return spec.ToString();
}

}  // namespace

// What one SaveV2 entry writes and one RestoreV2 entry reads: a variable
// whole (no slice spec) or its part of the variable saved under `key`.
struct Saver::Saveable {
  std::string key;
  std::string slice_spec;
  Output variable;
};

absl::StatusOr<std::unique_ptr<Saver>> Saver::Build(const Scope& scope,
                                                    const std::vector<Variable>& variables,
                                                    const SaverOptions& options) {
  std::vector<Output> refs;
  for (const Variable& variable : variables) {
    if (!variable.ok()) return absl::InvalidArgumentError("Saver: a variable is null");
    refs.push_back(variable.ref());
  }
  return BuildForVariables(scope, refs, options);
}

absl::StatusOr<std::unique_ptr<Saver>> Saver::BuildForVariables(
    const Scope& scope, const std::vector<Output>& variables, const SaverOptions& options) {
  std::vector<Saveable> saveables;
  for (const Output& variable : variables) {
    if (!variable.ok()) return absl::InvalidArgumentError("Saver: a variable is null");
    ASSIGN_OR_RETURN(const std::optional<SaveSliceInfo> slice, SaveSliceInfoOf(*variable.node()));
    saveables.push_back(slice.has_value() ? Saveable{slice->full_name, slice->Spec(), variable}
                                          : Saveable{variable.node()->name(), "", variable});
  }
  return BuildFromSaveables(scope, std::move(saveables), options);
}

absl::StatusOr<std::unique_ptr<Saver>> Saver::BuildWithKeys(
    const Scope& scope, const std::map<std::string, Output>& variables_by_key,
    const SaverOptions& options) {
  std::vector<Saveable> saveables;
  for (const auto& [key, variable] : variables_by_key) saveables.push_back({key, "", variable});
  return BuildFromSaveables(scope, std::move(saveables), options);
}

absl::StatusOr<std::unique_ptr<Saver>> Saver::BuildFromSaveables(const Scope& scope,
                                                                 std::vector<Saveable> saveables,
                                                                 const SaverOptions& options) {
  if (saveables.empty()) return absl::InvalidArgumentError("Saver: no variables to save");
  std::sort(saveables.begin(), saveables.end(), [](const Saveable& a, const Saveable& b) {
    return std::tie(a.key, a.slice_spec) < std::tie(b.key, b.slice_spec);
  });
  // Keyed by the CPU of the variables' task ("" when unplaced).
  std::map<std::string, std::vector<Saveable>> groups;
  for (size_t i = 0; i < saveables.size(); ++i) {
    const Saveable& saveable = saveables[i];
    if (!saveable.variable.ok() || !IsRefType(saveable.variable.type())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Saver: '%s' is not a variable reference (VariableV2 output)", saveable.key));
    }
    if (i > 0 && saveables[i - 1].key == saveable.key &&
        (saveable.slice_spec.empty() || saveables[i - 1].slice_spec.empty() ||
         saveables[i - 1].slice_spec == saveable.slice_spec)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Saver: variable '%s' is listed twice (as '%s' and '%s'%s)", saveable.key,
          saveables[i - 1].variable.node()->name(), saveable.variable.node()->name(),
          saveable.slice_spec.empty() ? "" : absl::StrCat(", slice ", saveable.slice_spec)));
    }
    std::string device;
    if (options.sharded) {
      ASSIGN_OR_RETURN(device, SaveDeviceOf(saveable.variable));
    }
    groups[device].push_back(saveable);
  }

  const Scope save = scope.NewSubScope("save").WithNoControlDependencies();
  const Output filename =
      ops::Const(save.WithOpName("Const"), Tensor::Scalar<std::string>("model"), DT_STRING);
  SaverDef def;
  def.set_filename_tensor_name(filename.name() + ":0");
  def.set_max_to_keep(options.max_to_keep);
  def.set_sharded(options.sharded);
  def.set_keep_checkpoint_every_n_hours(options.keep_checkpoint_every_n_hours);
  def.set_version(SaverDef::V2);

  // Save: one SaveV2 per group; sharded groups write under a temporary
  // prefix and are merged into the requested one.
  Output shard_base;
  Output num_shards;
  if (options.sharded) {
    thread_local std::mt19937_64 random(std::random_device{}());
    const std::string suffix = absl::StrFormat("_temp_%016x%016x/part", random(), random());
    shard_base =
        ops::StringJoin(save.WithOpName("StringJoin"),
                        {ops::Input(filename),
                         ops::Input(ops::Const(save.WithOpName("StringJoin/inputs_1"),
                                               Tensor::Scalar<std::string>(suffix), DT_STRING))});
    num_shards = ops::Const(save.WithOpName("num_shards"),
                            Tensor::Scalar<int32_t>(static_cast<int32_t>(groups.size())), DT_INT32);
  }
  std::vector<ops::Input> shard_prefixes;
  std::vector<Operation> shard_saves;
  std::vector<Operation> restores;
  int index = 0;
  int assign_index = 0;
  for (const auto& [device, group] : groups) {
    const Scope on_device = save.WithDevice(device);
    std::vector<std::string> keys;
    std::vector<std::string> slices;
    std::vector<ops::Input> tensors;
    DataTypeVector dtypes;
    for (const Saveable& saveable : group) {
      keys.push_back(saveable.key);
      slices.push_back(saveable.slice_spec);
      tensors.emplace_back(saveable.variable);
      dtypes.push_back(BaseType(saveable.variable.type()));
    }
    Output prefix = filename;
    if (options.sharded) {
      const std::string name = Numbered("ShardedFilename", index);
      prefix = ops::ShardedFilename(on_device.WithOpName(name), shard_base,
                                    ops::Const(on_device.WithOpName(name + "/shard"),
                                               Tensor::Scalar<int32_t>(index), DT_INT32),
                                    num_shards);
    }
    const std::string save_name = Numbered("SaveV2", index);
    const Operation save_op =
        ops::SaveV2(on_device.WithOpName(save_name), prefix,
                    ops::Const(on_device.WithOpName(save_name + "/tensor_names"),
                               StringVector(keys), DT_STRING),
                    ops::Const(on_device.WithOpName(save_name + "/shape_and_slices"),
                               StringVector(slices), DT_STRING),
                    tensors)
            .operation;
    const Output saved = ops::Identity(on_device.WithOpName(Numbered("control_dependency", index))
                                           .WithControlDependencies({save_op}),
                                       prefix);
    shard_prefixes.emplace_back(saved);
    shard_saves.push_back(saved.op());

    // Restore: read every tensor, assign each to its variable on the
    // variable's device.
    const std::string restore_name = Numbered("RestoreV2", index);
    const ops::RestoreV2 restore(
        on_device.WithOpName(restore_name), filename,
        ops::Const(on_device.WithOpName(restore_name + "/tensor_names"), StringVector(keys),
                   DT_STRING),
        ops::Const(on_device.WithOpName(restore_name + "/shape_and_slices"), StringVector(slices),
                   DT_STRING),
        dtypes);
    std::vector<Operation> assigns;
    for (size_t i = 0; i < group.size(); ++i) {
      const Output& variable = group[i].variable;
      if (i >= restore.tensors.size()) break;  // The scope holds the error.
      assigns.push_back(ops::Assign(save.WithDevice(variable.node()->requested_device())
                                        .WithOpName(Numbered("Assign", assign_index++)),
                                    variable, restore.tensors[i])
                            .operation);
    }
    if (options.sharded) {
      NodeBuilder shard(on_device.WithOpName(Numbered("restore_shard", index)), "NoOp");
      for (const Operation& assign : assigns) shard.ControlInput(assign);
      restores.push_back(shard.Finalize());
    } else {
      restores.insert(restores.end(), assigns.begin(), assigns.end());
    }
    ++index;
  }
  Output save_tensor = shard_prefixes.empty() ? Output() : shard_prefixes.front().output();
  if (options.sharded) {
    const Output all =
        ops::Pack(save.WithOpName("MergeV2Checkpoints/checkpoint_prefixes"), shard_prefixes);
    const Operation merge =
        ops::MergeV2Checkpoints(save.WithOpName("MergeV2Checkpoints"), all, filename).operation;
    save_tensor =
        ops::Identity(save.WithOpName("Identity").WithControlDependencies({merge}), filename);
  }
  NodeBuilder restore_all(save.WithOpName("restore_all"), "NoOp");
  for (const Operation& op : restores) restore_all.ControlInput(op);
  const Operation restore_op = restore_all.Finalize();
  RETURN_IF_ERROR(scope.status());
  def.set_save_tensor_name(save_tensor.name() + ":0");
  def.set_restore_op_name(restore_op.name());
  return FromSaverDef(def, options);
}

std::unique_ptr<Saver> Saver::FromSaverDef(const SaverDef& def, const SaverOptions& options) {
  return std::unique_ptr<Saver>(new Saver(def, options));
}

absl::StatusOr<std::string> Saver::Save(Session& session, const std::string& save_path,
                                        std::optional<int64_t> global_step,
                                        const MetaGraphDef* meta_graph) {
  if (save_path.empty()) return absl::InvalidArgumentError("Saver: empty save path");
  // Refused here too, before any task runs the save: the path names no
  // checkpoint whatever the step appended to it.
  if (absl::Status bad = io::CheckCheckpointPrefix(save_path); !bad.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("Saver: ", bad.message()));
  }
  const std::string prefix = CheckpointPrefix(save_path, global_step);
  absl::MutexLock lock(&mu_);
  // The save is done when the state file names it: every file it names is
  // synced, renamed into place and its directory synced before. An error
  // before then leaves the state as it was, so that a save that failed is
  // never taken for one that did. A failed save's files are removed when
  // there was no checkpoint at the prefix before: they are nothing else's.
  const bool fresh_prefix = !CheckpointExists(prefix);
  const auto failed = [&](absl::Status status) {
    if (fresh_prefix) DeleteCheckpoint(prefix).IgnoreError();
    return status;
  };
  if (absl::Status saved =
          session
              .Run({{def_.filename_tensor_name(), Tensor::Scalar<std::string>(prefix)}},
                   {def_.save_tensor_name()}, {})
              .status();
      !saved.ok()) {
    return failed(std::move(saved));
  }
  if (meta_graph != nullptr) {
    MetaGraphDef meta = *meta_graph;
    *meta.mutable_saver_def() = def_;
    if (absl::Status written = WriteMetaGraph(MetaGraphFilename(prefix), meta); !written.ok()) {
      return failed(std::move(written));
    }
  }
  const std::string dir = io::Dirname(prefix);
  const std::string state_path = CheckpointStatePath(dir, options_.latest_filename);
  std::optional<std::string> previous_state;
  if (io::FileExists(state_path)) {
    absl::StatusOr<std::string> read = io::ReadFileToString(state_path);
    if (!read.ok()) return failed(read.status());
    previous_state = *std::move(read);
  }
  const auto last_checkpoints = last_checkpoints_;
  const auto retired = retired_;
  const double next_keep_time = next_keep_time_;
  RecordAndRetire(prefix);
  std::vector<std::string> kept;
  for (const auto& [path, time] : last_checkpoints_) kept.push_back(path);
  if (absl::Status updated =
          UpdateCheckpointState(dir, prefix, std::move(kept), options_.latest_filename);
      !updated.ok()) {
    last_checkpoints_ = last_checkpoints;
    retired_ = retired;
    next_keep_time_ = next_keep_time;
    // The new state may be in place already (its directory sync failed):
    // the old one goes back, and only then may the new files go.
    absl::Status restored;
    if (previous_state.has_value()) {
      restored = io::WriteFileAtomically(state_path, *previous_state);
    } else if (io::FileExists(state_path)) {
      restored = io::DeleteFile(state_path);
      if (restored.ok()) restored = io::Env::Default()->SyncDir(dir);
    }
    if (!restored.ok()) return updated;
    return failed(std::move(updated));
  }
  // Only now, with the state file no longer naming them, old checkpoints
  // go. The save itself succeeded: one that cannot be deleted now is
  // tried again after the next save.
  std::vector<std::string> undeleted;
  for (const std::string& old : retired_) {
    if (!DeleteCheckpoint(old).ok()) undeleted.push_back(old);
  }
  retired_ = std::move(undeleted);
  return prefix;
}

std::string Saver::CheckpointPrefix(const std::string& save_path,
                                    std::optional<int64_t> global_step) const {
  if (!global_step.has_value()) return save_path;
  return save_path + (options_.pad_step_number ? absl::StrFormat("-%08d", *global_step)
                                               : absl::StrFormat("-%d", *global_step));
}

void Saver::RecordAndRetire(const std::string& prefix) {
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  if (next_keep_time_ == 0) {
    next_keep_time_ = now + def_.keep_checkpoint_every_n_hours() * 3600.0;
  }
  if (def_.max_to_keep() <= 0) return;
  last_checkpoints_.erase(std::remove_if(last_checkpoints_.begin(), last_checkpoints_.end(),
                                         [&](const auto& entry) { return entry.first == prefix; }),
                          last_checkpoints_.end());
  last_checkpoints_.emplace_back(prefix, now);
  while (static_cast<int>(last_checkpoints_.size()) > def_.max_to_keep()) {
    const auto [oldest, saved_at] = last_checkpoints_.front();
    last_checkpoints_.erase(last_checkpoints_.begin());
    // One checkpoint per keep_checkpoint_every_n_hours survives retention.
    if (saved_at > next_keep_time_) {
      next_keep_time_ += def_.keep_checkpoint_every_n_hours() * 3600.0;
      continue;
    }
    retired_.push_back(oldest);
  }
}

absl::Status Saver::Restore(Session& session, const std::string& prefix) {
  if (!CheckpointExists(prefix)) {
    return absl::NotFoundError(absl::StrFormat("no checkpoint at '%s': '%s' does not exist", prefix,
                                               io::IndexFilename(prefix)));
  }
  absl::MutexLock lock(&mu_);
  return session
      .Run({{def_.filename_tensor_name(), Tensor::Scalar<std::string>(prefix)}}, {},
           {def_.restore_op_name()})
      .status();
}

std::vector<std::string> Saver::last_checkpoints() const {
  absl::MutexLock lock(&mu_);
  std::vector<std::string> paths;
  for (const auto& [path, time] : last_checkpoints_) paths.push_back(path);
  return paths;
}

void Saver::RecoverLastCheckpoints(const std::vector<std::string>& prefixes) {
  absl::MutexLock lock(&mu_);
  const double now = absl::ToDoubleSeconds(absl::Now() - absl::UnixEpoch());
  last_checkpoints_.clear();
  for (const std::string& prefix : prefixes) last_checkpoints_.emplace_back(prefix, now);
}

absl::StatusOr<SaverDef> FindSaverDef(const GraphDef& graph) {
  std::set<std::string> names;
  for (const NodeDef& node : graph.node()) names.insert(node.name());
  const auto has = [&](const char* name) { return names.count(name) > 0; };
  if (!has("save/Const") || !has("save/restore_all")) {
    return absl::NotFoundError("the graph has no saver (no nodes save/Const and save/restore_all)");
  }
  SaverDef def;
  def.set_filename_tensor_name("save/Const:0");
  def.set_restore_op_name("save/restore_all");
  // A sharded saver's result is save/Identity, a plain one's
  // save/control_dependency.
  def.set_sharded(has("save/MergeV2Checkpoints"));
  def.set_save_tensor_name(def.sharded() && has("save/Identity") ? "save/Identity:0"
                                                                 : "save/control_dependency:0");
  def.set_max_to_keep(5);
  def.set_keep_checkpoint_every_n_hours(10000.0f);
  def.set_version(SaverDef::V2);
  return def;
}

absl::Status DeleteCheckpoint(const std::string& prefix) {
  const std::string dir = io::Dirname(prefix);
  const size_t slash = prefix.rfind('/');
  const std::string base = slash == std::string::npos ? prefix : prefix.substr(slash + 1);
  std::string pattern;
  for (char c : base) {
    if (c == '*' || c == '?' || c == '[' || c == ']' || c == '\\') pattern.push_back('\\');
    pattern.push_back(c);
  }
  std::vector<std::string> files = {io::IndexFilename(prefix), MetaGraphFilename(prefix)};
  ASSIGN_OR_RETURN(const std::vector<std::string> data,
                   io::MatchingNames(dir, pattern + ".data-\?\?\?\?\?-of-\?\?\?\?\?"));
  for (const std::string& name : data) files.push_back(dir + "/" + name);
  for (const std::string& file : files) {
    const absl::Status status = io::DeleteFile(file);
    if (!status.ok() && !absl::IsNotFound(status)) return status;
  }
  return absl::OkStatus();
}

}  // namespace rill
