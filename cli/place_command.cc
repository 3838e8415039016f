// `rill place GRAPH`: shows where each node of a saved graph would run, in
// this process or on a cluster, and with --partition what crosses devices.
#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli/commands.h"
#include "cli/device_count_flag.h"
#include "cli/flags.h"
#include "cli/graph_file.h"
#include "fmt/core.h"
#include "graph/graph.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "kernels/framework/op_kernel.h"
#include "ops/registry.h"
#include "placement/device_set.h"
#include "placement/partitioner.h"
#include "placement/placement_report.h"
#include "placement/placer.h"
#include "placement/replica_device_setter.h"
#include "runtime/distributed/cluster_spec.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill place GRAPH [--cluster 'ps=HOST:PORT[,...];worker=HOST:PORT[,...]']\n"
    "                  [--replica_device_setter [--ps_strategy round_robin|greedy]]\n"
    "                  [--device_count CPU=N[,GPU=N]]\n"
    "                  [--allow_soft_placement] [--explain] [--partition] [--dot FILE]\n"
    "  GRAPH: a GraphDef (.pb or .pbtxt), a MetaGraphDef (.meta) or a SavedModel\n"
    "  (saved_model.pb)\n"
    "  --device_count: the devices of this process, or with --cluster of each task\n"
    "  (CPU=1 there), whether this machine has them or not (default CPU=1)\n";

// No device type: with GPUs, a node the GPU has a kernel for goes there,
// as in TensorFlow.
constexpr char kLocalTask[] = "/job:localhost/replica:0/task:0";

struct PlaceFlags {
  bool help = false;  // --help: print the usage, place nothing.
  std::string graph_path;
  ClusterSpec cluster;  // Empty: this process.
  bool replica_device_setter = false;
  PsStrategy ps_strategy = PsStrategy::kRoundRobin;
  bool allow_soft_placement = false;
  bool explain = false;
  bool partition = false;
  std::optional<std::string> dot_path;
  int cpus = 1;  // Per task with a cluster.
  int gpus = 0;
};

absl::StatusOr<PlaceFlags> ParsePlaceFlags(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(
      const ParsedArgs parsed,
      ParseArgs(args, {"cluster", "ps_strategy", "dot", "device_count"},
                {"replica_device_setter", "allow_soft_placement", "explain", "partition"}));
  PlaceFlags flags;
  if (parsed.help) {
    flags.help = true;
    return flags;
  }
  if (parsed.positional.size() != 1) {
    return absl::InvalidArgumentError(parsed.positional.empty()
                                          ? "missing GRAPH"
                                          : "expected one GRAPH, got " +
                                                std::to_string(parsed.positional.size()));
  }
  flags.graph_path = parsed.positional[0];
  if (const auto cluster = parsed.Value("cluster")) {
    auto spec = ClusterSpec::Parse(*cluster);
    if (!spec.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--cluster '{}': {}", *cluster, std::string(spec.status().message())));
    }
    // The devices are built from task counts, which name tasks 0..N-1.
    for (const std::string& job : spec->jobs()) {
      const std::vector<int> tasks = spec->TaskIndices(job);
      if (tasks.back() != static_cast<int>(tasks.size()) - 1) {
        return absl::InvalidArgumentError(fmt::format(
            "--cluster '{}': job '{}' lists only some tasks; rill place needs tasks 0..N-1",
            *cluster, job));
      }
    }
    flags.cluster = *std::move(spec);
  }
  flags.replica_device_setter = parsed.Has("replica_device_setter");
  if (const auto strategy = parsed.Value("ps_strategy")) {
    if (!flags.replica_device_setter) {
      return absl::InvalidArgumentError("--ps_strategy needs --replica_device_setter");
    }
    auto parsed_strategy = ParsePsStrategy(*strategy);
    if (!parsed_strategy.ok()) {
      return absl::InvalidArgumentError(
          fmt::format("--ps_strategy: {}", std::string(parsed_strategy.status().message())));
    }
    flags.ps_strategy = *parsed_strategy;
  }
  if (flags.replica_device_setter && !flags.cluster.HasJob("ps")) {
    return absl::InvalidArgumentError("--replica_device_setter needs a --cluster with a ps job");
  }
  if (const auto count = parsed.Value("device_count")) {
    ASSIGN_OR_RETURN(const auto device_count, ParseDeviceCountFlag(*count));
    for (const auto& [type, n] : device_count) (type == kDeviceGpu ? flags.gpus : flags.cpus) = n;
    if (!flags.cluster.empty() && flags.cpus != 1) {
      return absl::InvalidArgumentError(
          fmt::format("--device_count '{}': with --cluster each task has one CPU device", *count));
    }
  }
  flags.allow_soft_placement = parsed.Has("allow_soft_placement");
  flags.explain = parsed.Has("explain");
  flags.partition = parsed.Has("partition");
  flags.dot_path = parsed.Value("dot");
  return flags;
}

// Where the client runs, and so where unrequested nodes go: task 0 of the
// worker job, else of the first job that is not ps, else of ps.
std::string ClientDevice(const ClusterSpec& cluster) {
  if (cluster.empty()) return kLocalTask;
  const std::vector<std::string> jobs = cluster.jobs();
  std::string job = jobs.front();
  if (cluster.HasJob("worker")) {
    job = "worker";
  } else {
    for (const std::string& name : jobs) {
      if (name != "ps") {
        job = name;
        break;
      }
    }
  }
  return "/job:" + job + "/task:0";
}

absl::StatusOr<DeviceSet> Devices(const PlaceFlags& flags) {
  if (flags.cluster.empty()) return DeviceSet::Local(flags.cpus, flags.gpus);
  return DeviceSet::ForCluster(flags.cluster.TasksPerJob(), flags.gpus);
}

// What a _Send carries, as the user knows it: "w/read:0", or "^w" for the
// dummy the partitioner sends after `w` for a control edge.
std::string SentTensor(const NodeDef& send, const GraphDef& partition) {
  if (send.input_size() == 0) return "?";
  const absl::StatusOr<TensorId> input = ParseTensorName(send.input(0));
  if (!input.ok()) return send.input(0);
  for (const NodeDef& node : partition.node()) {
    if (node.name() != input->node) continue;
    if (node.op() == "Const" && node.input_size() == 1 && node.input(0).starts_with("^") &&
        node.name().starts_with(node.input(0).substr(1) + "/_")) {
      return node.input(0);
    }
    break;
  }
  return fmt::format("{}:{}", input->node, input->index);
}

std::string StringAttr(const NodeDef& node, const char* name) {
  const absl::StatusOr<std::string> value = GetStringAttr(node, name);
  return value.ok() ? *value : "?";
}

// Per partition, one line per _Send and _Recv:
//   send w/read:0 -> /job:worker/replica:0/task:0/device:CPU:0 (edge_3_w/read)
//   recv w/read:0 <- /job:ps/replica:0/task:0/device:CPU:0 (edge_3_w/read)
std::string Transfers(const std::map<std::string, GraphDef>& partitions) {
  using Key = std::tuple<std::string, std::string, std::string>;
  const auto key_of = [](const NodeDef& node) {
    return Key{StringAttr(node, "send_device"), StringAttr(node, "recv_device"),
               StringAttr(node, "tensor_name")};
  };
  std::map<Key, std::string> sent;
  for (const auto& [device, def] : partitions) {
    for (const NodeDef& node : def.node()) {
      if (node.op() == "_Send") sent[key_of(node)] = SentTensor(node, def);
    }
  }
  std::string out;
  for (const auto& [device, def] : partitions) {
    std::string lines;
    for (const NodeDef& node : def.node()) {
      if (node.op() == "_Send") {
        lines += fmt::format("  send {} -> {} ({})\n", sent[key_of(node)],
                             StringAttr(node, "recv_device"), StringAttr(node, "tensor_name"));
      } else if (node.op() == "_Recv") {
        const auto it = sent.find(key_of(node));
        lines += fmt::format("  recv {} <- {} ({})\n", it == sent.end() ? "?" : it->second,
                             StringAttr(node, "send_device"), StringAttr(node, "tensor_name"));
      }
    }
    if (!lines.empty()) out += fmt::format("\n{}:\n{}", device, lines);
  }
  return out.empty() ? "\nno tensor crosses devices\n" : out;
}

absl::Status Place(const PlaceFlags& flags) {
  ASSIGN_OR_RETURN(LoadedGraph loaded, LoadGraphFile(flags.graph_path));
  GraphDef& def = loaded.graph;
  ASSIGN_OR_RETURN(const DeviceSet devices, Devices(flags));
  const std::string client = ClientDevice(flags.cluster);
  if (flags.replica_device_setter) {
    ReplicaDeviceSetterOptions options;
    for (const int task : flags.cluster.TaskIndices("ps")) {
      options.ps_devices.push_back(fmt::format("/job:ps/task:{}", task));
    }
    options.worker_device = client;
    options.strategy = flags.ps_strategy;
    RETURN_IF_ERROR(ApplyReplicaDeviceSetter(options, &def));
  }
  auto graph = ImportGraphDef(def, StandardOps());
  if (!graph.ok()) {
    return absl::InvalidArgumentError(
        fmt::format("{}: {}", flags.graph_path, std::string(graph.status().message())));
  }
  PlacerOptions placer_options;
  placer_options.allow_soft_placement = flags.allow_soft_placement;
  placer_options.default_device = client;
  ASSIGN_OR_RETURN(const Placement placement, PlaceGraph(**graph, devices, placer_options));
  std::optional<std::map<std::string, GraphDef>> partitions;
  if (flags.partition) {
    ASSIGN_OR_RETURN(partitions, PartitionGraph(**graph, placement, {}));
  }
  const std::map<std::string, GraphDef>* shown = partitions ? &*partitions : nullptr;
  if (flags.dot_path) {
    std::ofstream file(*flags.dot_path);
    file << PlacementDot(**graph, placement, shown);
    file.close();
    if (!file) return absl::PermissionDeniedError(fmt::format("cannot write {}", *flags.dot_path));
  }
  fmt::print(
      "{}\n{}",
      flags.explain ? PlacementExplanation(**graph, placement) : PlacementLog(**graph, placement),
      PlacementSummary(**graph, placement, shown));
  if (partitions) fmt::print("{}", Transfers(*partitions));
  return absl::OkStatus();
}

}  // namespace

int RunPlaceCommand(const std::vector<std::string>& args) {
  auto flags = ParsePlaceFlags(args);
  if (!flags.ok()) {
    fmt::print(stderr, "rill place: {}\n{}", OneLine(std::string(flags.status().message())),
               kUsage);
    return 2;
  }
  if (flags->help) return PrintHelp(kUsage);
  if (const absl::Status status = Place(*flags); !status.ok()) {
    fmt::print(stderr, "rill place: {}\n", OneLine(std::string(status.message())));
    return 1;
  }
  return 0;
}

}  // namespace rill::cli
