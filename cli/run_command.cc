// `rill run GRAPH`: replays a saved graph (a GraphDef, a .meta MetaGraphDef
// or a SavedModel) in this process or on a cluster, feeding tensors from
// .npy files or JSON literals, restoring and saving its variables with the
// graph's own saver, and printing or saving the fetches.
#include <algorithm>
#include <charconv>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "cli/commands.h"
#include "cli/device_count_flag.h"
#include "cli/flags.h"
#include "cli/graph_file.h"
#include "cli/npy.h"
#include "cli/tensor_json.h"
#include "cli/tensor_text.h"
#include "fmt/core.h"
#include "graph/device_spec.h"
#include "graph/graph.h"
#include "graph/node_def_util.h"
#include "graph/progress_line.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"
#include "ops/registry.h"
#include "placement/replica_device_setter.h"
#include "runtime/distributed/remote_session.h"
#include "runtime/exec/timeline.h"
#include "runtime/session.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/saver.h"
#include "transport/curve.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill run GRAPH [--feed NAME=FILE.npy | --feed NAME=JSON]... [--init OP]...\n"
    "                [--target OP]... [--fetch TENSOR]... [--steps N] [--json] [--out DIR]\n"
    "                [--quiet]   (no progress line on stderr for --steps N > 1)\n"
    "                [--trace FILE]   (the last step's timeline, every task's, as a Chrome\n"
    "                                  trace: open it in Perfetto or chrome://tracing)\n"
    "                [--restore PREFIX|DIR] [--save PREFIX]   (with the graph's own saver)\n"
    "                [--log_device_placement] [--device_count CPU=N[,GPU=N]]\n"
    "                [--allow_soft_placement]\n"
    "                [--replica_device_setter [--ps_strategy round_robin|greedy]]\n"
    "                [--target zmq://HOST:PORT]   (run on the cluster whose server is there)\n"
    "                [--curve_keys DIR]   (its keys, when the cluster uses CURVE)\n"
    "                [--max_tensor_bytes N]   (the most one tensor may take here)\n"
    "--out DIR writes one DIR/NAME.npy per fetch, with ':' as '_' (\"w:0\" is DIR/w_0.npy)\n"
    "and each '/' a subdirectory; a name with an empty, '.' or '..' part is refused, and\n"
    "no symbolic link inside DIR is followed.\n";

struct RunFlags {
  bool help = false;  // --help: print the usage, run nothing.
  std::string graph_path;
  std::vector<std::pair<std::string, std::string>> feeds;  // (name, value text)
  std::vector<std::string> inits;
  std::vector<std::string> targets;
  std::vector<std::string> fetches;
  int64_t steps = 1;
  bool quiet = false;                     // No progress line on stderr.
  std::optional<std::string> trace_path;  // The last step's Chrome trace.
  size_t max_tensor_bytes = 0;            // 0: the process default.
  bool json = false;
  std::optional<std::string> out_dir;
  bool log_device_placement = false;
  std::map<std::string, int> device_count;  // This process's devices.
  int cpus = 1;
  bool allow_soft_placement = false;
  // Variables on CPU:1..N-1 (or CPU:0 with one CPU), the rest on CPU:0;
  // on a cluster, variables on the ps tasks and the rest on the worker.
  std::optional<PsStrategy> replica_device_setter;
  // "zmq://HOST:PORT" (a --target with a scheme): run on that cluster.
  std::string session_target;
  // Checkpoint prefixes (or, for --restore, a directory whose newest
  // checkpoint is restored), through the graph's saver nodes.
  std::optional<std::string> restore;
  std::optional<std::string> save;
  // --curve_keys: the keys of a cluster that uses CURVE.
  std::shared_ptr<const CurveKeys> curve;
};

// The file --out writes a fetch to, relative to its directory: "w:0" is
// "w_0.npy"; a '/' in a name is a subdirectory.
std::string FetchFileName(std::string fetch) {
  std::replace(fetch.begin(), fetch.end(), ':', '_');
  return fetch + ".npy";
}

// The repeatable options are taken out first; the shared parser handles
// the rest (and rejects anything it does not know).
absl::StatusOr<RunFlags> ParseRunFlags(const std::vector<std::string>& args) {
  RunFlags flags;
  std::vector<std::string> feeds;
  const std::map<std::string, std::vector<std::string>*> repeatable = {{"feed", &feeds},
                                                                       {"init", &flags.inits},
                                                                       {"target", &flags.targets},
                                                                       {"fetch", &flags.fetches}};
  std::vector<std::string> rest;
  // Reported after the shared parser has looked for --help, which wins.
  absl::Status missing_value;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const size_t eq = arg.find('=');
    const std::string name =
        arg.starts_with("--") ? arg.substr(2, eq == std::string::npos ? eq : eq - 2) : "";
    const auto it = repeatable.find(name);
    if (it == repeatable.end()) {
      rest.push_back(arg);
    } else if (eq != std::string::npos) {
      it->second->push_back(arg.substr(eq + 1));
    } else if (i + 1 < args.size()) {
      it->second->push_back(args[++i]);
    } else {
      missing_value = absl::InvalidArgumentError(fmt::format("--{} needs a value", name));
    }
  }
  ASSIGN_OR_RETURN(const ParsedArgs parsed,
                   ParseArgs(rest,
                             {"steps", "out", "device_count", "ps_strategy", "restore", "save",
                              "curve_keys", "max_tensor_bytes", "trace"},
                             {"json", "log_device_placement", "allow_soft_placement",
                              "replica_device_setter", "quiet"}));
  if (parsed.help) {
    flags.help = true;
    return flags;
  }
  RETURN_IF_ERROR(missing_value);
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(parsed.positional.empty()
                                          ? "missing GRAPH"
                                          : "expected one GRAPH, got " +
                                                std::to_string(parsed.positional.size()));
  }
  flags.graph_path = parsed.positional[0];
  // Node names cannot hold "://", so such a --target names a cluster.
  for (auto it = flags.targets.begin(); it != flags.targets.end();) {
    if (it->find("://") == std::string::npos) {
      ++it;
      continue;
    }
    if (!flags.session_target.empty()) {
      return absl::InvalidArgumentError(fmt::format(
          "--target '{}': a cluster is already given ('{}')", *it, flags.session_target));
    }
    flags.session_target = *it;
    it = flags.targets.erase(it);
  }
  if (const auto keys = parsed.Value("curve_keys")) {
    if (flags.session_target.empty()) {
      return absl::InvalidArgumentError("--curve_keys is for a cluster (--target zmq://...)");
    }
    ASSIGN_OR_RETURN(CurveKeys loaded, LoadCurveKeys(*keys));
    flags.curve = std::make_shared<const CurveKeys>(std::move(loaded));
  }
  if (!flags.session_target.empty() && parsed.Value("device_count")) {
    return absl::InvalidArgumentError(
        "--device_count is for this process; a cluster's devices are its tasks'");
  }
  for (const std::string& feed : feeds) {
    const size_t eq = feed.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == feed.size()) {
      return absl::InvalidArgumentError(
          fmt::format("--feed '{}': expected NAME=FILE.npy or NAME=JSON", feed));
    }
    flags.feeds.emplace_back(feed.substr(0, eq), feed.substr(eq + 1));
  }
  if (const auto steps = parsed.Value("steps")) {
    const auto [end, ec] =
        std::from_chars(steps->data(), steps->data() + steps->size(), flags.steps);
    if (ec != std::errc() || end != steps->data() + steps->size() || flags.steps < 1) {
      return absl::InvalidArgumentError(
          fmt::format("--steps '{}': expected a whole number >= 1", *steps));
    }
  }
  flags.json = parsed.Has("json");
  flags.quiet = parsed.Has("quiet");
  flags.out_dir = parsed.Value("out");
  flags.trace_path = parsed.Value("trace");
  if (flags.trace_path && flags.targets.empty() && flags.fetches.empty()) {
    return absl::InvalidArgumentError("--trace: no step to trace (give --target or --fetch)");
  }
  if (flags.out_dir) {
    for (const std::string& fetch : flags.fetches) {
      if (!io::IsPlainRelativePath(FetchFileName(fetch))) {
        return absl::InvalidArgumentError(fmt::format(
            "--out: fetch '{}' names no file inside {}: its file '{}' has an empty, '.' or '..' "
            "part",
            fetch, *flags.out_dir, FetchFileName(fetch)));
      }
    }
  }
  flags.log_device_placement = parsed.Has("log_device_placement");
  flags.allow_soft_placement = parsed.Has("allow_soft_placement");
  if (const auto count = parsed.Value("device_count")) {
    ASSIGN_OR_RETURN(flags.device_count, ParseDeviceCountFlag(*count));
    if (auto cpu = flags.device_count.find("CPU"); cpu != flags.device_count.end()) {
      flags.cpus = cpu->second;
    }
  }
  if (parsed.Has("replica_device_setter")) {
    ASSIGN_OR_RETURN(flags.replica_device_setter,
                     ParsePsStrategy(parsed.Value("ps_strategy").value_or("round_robin")));
  } else if (parsed.Value("ps_strategy")) {
    return absl::InvalidArgumentError("--ps_strategy needs --replica_device_setter");
  }
  ASSIGN_OR_RETURN(const std::optional<size_t> max_tensor_bytes, ParseMaxTensorBytesFlag(parsed));
  flags.max_tensor_bytes = max_tensor_bytes.value_or(0);
  flags.restore = parsed.Value("restore");
  flags.save = parsed.Value("save");
  if (flags.inits.empty() && flags.targets.empty() && flags.fetches.empty() && !flags.restore &&
      !flags.save) {
    return absl::InvalidArgumentError(
        "nothing to run: give --fetch, --target, --init, --restore or --save");
  }
  return flags;
}

absl::StatusOr<Tensor> LoadFeed(const std::string& name, const std::string& value,
                                const Graph& graph) {
  const auto fail = [&](std::string_view what) {
    return absl::InvalidArgumentError(fmt::format("--feed {}: {}", name, what));
  };
  auto id = ParseTensorName(name);
  if (!id.ok() || id->IsControl()) return fail("not a tensor name");
  const Node* node = graph.FindNode(id->node);
  if (node == nullptr) return fail(fmt::format("no node '{}' in the graph", id->node));
  if (id->index >= node->num_outputs()) {
    return fail(fmt::format("node '{}' ({}) has {} output(s)", node->name(), node->op(),
                            node->num_outputs()));
  }
  const DataType dtype = BaseType(node->output_type(id->index));
  Tensor tensor;
  if (value.ends_with(".npy")) {
    auto read = ReadNpy(value);
    if (!read.ok()) return fail(std::string(read.status().message()));
    if (read->dtype() != dtype) {
      return fail(fmt::format("{} holds {}, but {}:{} is {}", value, NumpyDtypeName(read->dtype()),
                              node->name(), id->index, NumpyDtypeName(dtype)));
    }
    tensor = *std::move(read);
  } else {
    auto parsed = ParseJsonTensor(value, dtype);
    if (!parsed.ok()) {
      return fail(fmt::format("'{}' as {}: {}", value, NumpyDtypeName(dtype),
                              std::string(parsed.status().message())));
    }
    tensor = *std::move(parsed);
  }
  if (node->op() == "Placeholder") {
    const PartialTensorShape& expected = node->output_shape(0);
    if (!expected.IsCompatibleWith(PartialTensorShape(tensor.shape()))) {
      return fail(fmt::format(
          "Cannot feed value of shape {} for Tensor '{}:{}', which has shape '{}'",
          tensor.shape().DebugString(), node->name(), id->index, expected.DebugString()));
    }
  }
  return tensor;
}

std::string JsonKey(const std::string& name) {
  std::string out = "\"";
  for (char c : name) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

absl::Status PrintFetches(const RunFlags& flags, const std::vector<Tensor>& values) {
  if (flags.json) {
    std::string out = "{";
    std::vector<std::string> printed;
    for (size_t i = 0; i < values.size(); ++i) {
      if (std::find(printed.begin(), printed.end(), flags.fetches[i]) != printed.end()) continue;
      ASSIGN_OR_RETURN(const std::string json, TensorToJson(values[i]));
      if (!printed.empty()) out += ", ";
      out += JsonKey(flags.fetches[i]) + ": " + json;
      printed.push_back(flags.fetches[i]);
    }
    fmt::print("{}}}\n", out);
    return absl::OkStatus();
  }
  for (size_t i = 0; i < values.size(); ++i) {
    fmt::print("{}\n", ReadableTensorLine(flags.fetches[i], values[i]));
  }
  return absl::OkStatus();
}

// One .npy per fetch under --out; ParseRunFlags has checked that every
// name stays inside the directory.
absl::Status SaveFetches(const RunFlags& flags, const std::vector<Tensor>& values) {
  for (size_t i = 0; i < values.size(); ++i) {
    const std::string file = FetchFileName(flags.fetches[i]);
    ASSIGN_OR_RETURN(const std::string bytes, SerializeNpy(values[i]));
    ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> out,
                     io::WritableFile::CreateBeneath(*flags.out_dir, file));
    RETURN_IF_ERROR(out->Append(bytes));
    RETURN_IF_ERROR(out->Close());
  }
  return absl::OkStatus();
}

// Variables on the cluster's ps tasks, everything else on its first
// worker task (the first task of another job when there is no worker job).
absl::StatusOr<ReplicaDeviceSetterOptions> ClusterReplicaDeviceSetter(
    const std::string& target, std::shared_ptr<const CurveKeys> curve) {
  ASSIGN_OR_RETURN(const std::vector<std::string> devices,
                   ListRemoteDevices(target, absl::Seconds(30), std::move(curve)));
  ReplicaDeviceSetterOptions setter;
  std::string other_task;
  for (const std::string& device : devices) {
    ASSIGN_OR_RETURN(const std::string task, TaskOfDevice(device));
    if (task.starts_with("/job:ps/")) {
      if (std::find(setter.ps_devices.begin(), setter.ps_devices.end(), task) ==
          setter.ps_devices.end()) {
        setter.ps_devices.push_back(task);
      }
    } else if (setter.worker_device.empty() && task.starts_with("/job:worker/")) {
      setter.worker_device = task;
    } else if (other_task.empty()) {
      other_task = task;
    }
  }
  if (setter.ps_devices.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("--replica_device_setter: the cluster at {} has no ps job", target));
  }
  if (setter.worker_device.empty()) setter.worker_device = other_task;
  return setter;
}

// --restore DIR restores the newest checkpoint its state file lists.
absl::StatusOr<std::string> RestorePrefix(const std::string& flag) {
  if (!std::filesystem::is_directory(flag)) return flag;
  std::optional<std::string> latest = LatestCheckpoint(flag);
  if (!latest.has_value()) {
    return absl::NotFoundError(
        fmt::format("--restore {}: the directory lists no checkpoint that exists", flag));
  }
  return *latest;
}

absl::Status Run(const RunFlags& flags) {
  // Refused before any step runs, not after: the trace replaces its file.
  if (flags.trace_path) {
    if (absl::Status bad = io::CheckOutputPath(*flags.trace_path); !bad.ok()) {
      return absl::InvalidArgumentError(fmt::format("--trace: {}", std::string(bad.message())));
    }
  }
  ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphFile(flags.graph_path));
  GraphDef& def = loaded.graph;
  std::unique_ptr<Saver> saver;
  if (flags.restore || flags.save) {
    if (!loaded.saver.has_value()) {
      absl::StatusOr<SaverDef> found = FindSaverDef(def);
      if (!found.ok()) {
        return absl::InvalidArgumentError(fmt::format("--restore/--save: {}: {}", flags.graph_path,
                                                      std::string(found.status().message())));
      }
      loaded.saver = *found;
    }
    saver = Saver::FromSaverDef(*loaded.saver);
  }
  auto graph = ImportGraphDef(def, StandardOps());
  if (!graph.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", flags.graph_path, std::string(graph.status().message())));
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  for (const auto& [name, value] : flags.feeds) {
    ASSIGN_OR_RETURN(Tensor tensor, LoadFeed(name, value, **graph));
    feeds.emplace_back(name, std::move(tensor));
  }
  if (flags.replica_device_setter) {
    ReplicaDeviceSetterOptions setter;
    setter.strategy = *flags.replica_device_setter;
    if (flags.session_target.empty()) {
      setter.worker_device = "/device:CPU:0";
      for (int cpu = flags.cpus > 1 ? 1 : 0; cpu < flags.cpus; ++cpu) {
        setter.ps_devices.push_back(fmt::format("/device:CPU:{}", cpu));
      }
    } else {
      ASSIGN_OR_RETURN(setter, ClusterReplicaDeviceSetter(flags.session_target, flags.curve));
      setter.strategy = *flags.replica_device_setter;
    }
    RETURN_IF_ERROR(ApplyReplicaDeviceSetter(setter, &def));
  }
  SessionOptions options;
  options.target = flags.session_target;
  options.curve = flags.curve;
  options.max_tensor_bytes = flags.max_tensor_bytes;
  options.log_device_placement = flags.log_device_placement;
  options.allow_soft_placement = flags.allow_soft_placement;
  if (flags.session_target.empty()) options.device_count = flags.device_count;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options, def));
  if (!flags.inits.empty()) RETURN_IF_ERROR(session->Run(feeds, {}, flags.inits).status());
  if (flags.restore) {
    ASSIGN_OR_RETURN(const std::string prefix, RestorePrefix(*flags.restore));
    RETURN_IF_ERROR(saver->Restore(*session, prefix));
    fmt::print(stderr, "restored {}\n", prefix);
  }
  // With targets, the fetches are read in a run of their own after the last
  // step, so that they see its updates (a fetch in the same run as an
  // update could read the variable before or after it).
  std::vector<Tensor> values;
  // The steps are counted on stderr: stdout holds the fetches, which
  // scripts read. A single step needs no count.
  const bool repeats = flags.steps > 1 && (!flags.targets.empty() || !flags.fetches.empty());
  ProgressLine progress("run", flags.steps, {.enabled = repeats && !flags.quiet});
  // With --trace, the last step (of the targets, else of the fetches) is
  // traced on every task it runs on.
  RunMetadata metadata;
  const auto step_options = [&](int64_t step) {
    RunOptions options;
    options.trace = flags.trace_path.has_value() && step + 1 == flags.steps;
    return options;
  };
  if (!flags.targets.empty()) {
    for (int64_t step = 0; step < flags.steps; ++step) {
      RETURN_IF_ERROR(
          session->Run(step_options(step), feeds, {}, flags.targets, &metadata).status());
      progress.Update(step + 1);
    }
    if (!flags.fetches.empty()) {
      ASSIGN_OR_RETURN(values, session->Run(feeds, flags.fetches));
    }
  } else if (!flags.fetches.empty()) {
    for (int64_t step = 0; step < flags.steps; ++step) {
      ASSIGN_OR_RETURN(values,
                       session->Run(step_options(step), feeds, flags.fetches, {}, &metadata));
      progress.Update(step + 1);
    }
  }
  progress.Finish();
  if (flags.trace_path) {
    RETURN_IF_ERROR(Timeline(metadata).WriteChromeTrace(*flags.trace_path));
    fmt::print(stderr, "trace: {} ({} nodes; open it in Perfetto or chrome://tracing)\n",
               *flags.trace_path, metadata.step_stats.size());
  }
  if (flags.save) {
    ASSIGN_OR_RETURN(const std::string prefix, saver->Save(*session, *flags.save));
    fmt::print(stderr, "saved {}\n", prefix);
  }
  if (flags.out_dir) RETURN_IF_ERROR(SaveFetches(flags, values));
  if (!values.empty()) RETURN_IF_ERROR(PrintFetches(flags, values));
  return session->Close();
}

}  // namespace

int RunRunCommand(const std::vector<std::string>& args) {
  auto flags = ParseRunFlags(args);
  if (!flags.ok()) {
    fmt::print(stderr, "rill run: {}\n{}", OneLine(std::string(flags.status().message())), kUsage);
    return 2;
  }
  if (flags->help) return PrintHelp(kUsage);
  if (const absl::Status status = Run(*flags); !status.ok()) {
    fmt::print(stderr, "rill run: {}\n", OneLine(std::string(status.message())));
    return 1;
  }
  return 0;
}

}  // namespace rill::cli
