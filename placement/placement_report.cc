#include "placement/placement_report.h"

#include <algorithm>
#include <array>
#include <cstdint>
#include <optional>
#include <set>
#include <tuple>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/device_spec.h"
#include "graph/node_def_util.h"
#include "graph/types.h"

namespace rill {
namespace {

// Ops whose node holds a variable's storage, sized in the summary.
const std::set<std::string>& VariableOps() {
  static const auto* ops =
      new std::set<std::string>{"Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable"};
  return *ops;
}

// Tolerates a placement that misses nodes, so that a report can be printed
// for any placement.
const std::string& DeviceOf(const Placement& placement, const Node& node) {
  static const auto* none = new std::string;
  const size_t id = static_cast<size_t>(node.id());
  return id < placement.nodes.size() ? placement.nodes[id].device : *none;
}

// Devices sort by job, replica, task, type and id, numbers as numbers
// (task:2 before task:10); names that do not parse come last, as strings.
bool DeviceLess(const std::string& a, const std::string& b) {
  const auto key = [](const std::string& name) {
    const absl::StatusOr<DeviceSpec> parsed = DeviceSpec::Parse(name);
    const DeviceSpec spec = parsed.ok() ? *parsed : DeviceSpec();
    return std::make_tuple(!parsed.ok() || name.empty(), spec.job, spec.replica, spec.task,
                           spec.type, spec.id, name);
  };
  return key(a) < key(b);
}

std::vector<std::string> SortedDevices(const Graph& graph, const Placement& placement,
                                       const std::map<std::string, GraphDef>* partitions) {
  std::set<std::string> unique;
  for (const Node* node : graph.nodes()) unique.insert(DeviceOf(placement, *node));
  if (partitions != nullptr) {
    for (const auto& [device, def] : *partitions) unique.insert(device);
  }
  std::vector<std::string> devices(unique.begin(), unique.end());
  std::sort(devices.begin(), devices.end(), DeviceLess);
  return devices;
}

int64_t VariableBytes(const Node& node) {
  if (VariableOps().count(node.op()) == 0) return 0;
  const absl::StatusOr<DataType> dtype = GetTypeAttr(node.def(), "dtype");
  const absl::StatusOr<PartialTensorShape> shape = GetShapeAttr(node.def(), "shape");
  if (!dtype.ok()) return 0;
  int64_t elements = 1;
  if (shape.ok() && !shape->unknown_rank()) {
    for (int64_t dim : shape->dim_sizes()) elements *= dim < 0 ? 1 : dim;
  }
  return elements * DataTypeSize(BaseType(*dtype));
}

std::string FormatBytes(int64_t bytes) {
  if (bytes < 1024) return absl::StrFormat("%d B", bytes);
  constexpr std::array<const char*, 4> kUnits = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  size_t unit = 0;
  while (value >= 1024 && unit + 1 < kUnits.size()) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.1f %s", value, kUnits[unit]);
}

std::string Plural(int64_t n, const char* word) {
  return absl::StrFormat("%d %s%s", n, word, n == 1 ? "" : "s");
}

// A DOT double-quoted string body.
std::string DotEscape(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

// Light fills that keep black labels readable; devices beyond the palette
// reuse it.
constexpr std::array<const char*, 10> kPalette = {"#a6cee3", "#b2df8a", "#fdbf6f", "#cab2d6",
                                                  "#fb9a99", "#ffff99", "#8dd3c7", "#bebada",
                                                  "#fccde5", "#d9d9d9"};

std::string NodeStatement(const std::string& id, const std::string& name, const std::string& op,
                          const std::string& color) {
  const char* shape = op == "_Send" || op == "_Recv" ? "cds" : "box";
  return absl::StrFormat("  \"%s\" [label=\"%s\\n%s\", shape=%s, fillcolor=\"%s\"];\n", id,
                         DotEscape(name), DotEscape(op), shape, color);
}

std::string EdgeStatement(const std::string& from, const std::string& to, int slot) {
  if (slot == kControlSlot) {
    return absl::StrFormat("  \"%s\" -> \"%s\" [style=dashed];\n", from, to);
  }
  if (slot == 0) return absl::StrFormat("  \"%s\" -> \"%s\";\n", from, to);
  return absl::StrFormat("  \"%s\" -> \"%s\" [taillabel=\"%d\"];\n", from, to, slot);
}

std::string Legend(const std::vector<std::string>& devices,
                   const std::map<std::string, std::string>& colors) {
  std::string out = "  subgraph cluster_legend {\n    label=\"devices\";\n    style=dashed;\n";
  for (size_t i = 0; i < devices.size(); ++i) {
    out += absl::StrFormat("    \"legend_%d\" [label=\"%s\", shape=box, fillcolor=\"%s\"];\n", i,
                           DotEscape(devices[i].empty() ? "(unplaced)" : devices[i]),
                           colors.at(devices[i]));
  }
  return out + "  }\n";
}

std::string GraphBody(const Graph& graph, const Placement& placement,
                      const std::map<std::string, std::string>& colors) {
  std::string out;
  for (const Node* node : graph.nodes()) {
    out += NodeStatement(absl::StrFormat("n%d", node->id()), node->name(), node->op(),
                         colors.at(DeviceOf(placement, *node)));
  }
  for (const Node* node : graph.nodes()) {
    for (const Edge* edge : node->in_edges()) {
      out += EdgeStatement(absl::StrFormat("n%d", edge->src->id()),
                           absl::StrFormat("n%d", node->id()), edge->src_output);
    }
  }
  return out;
}

std::string PartitionsBody(const std::map<std::string, GraphDef>& partitions,
                           const std::map<std::string, std::string>& colors) {
  std::string out;
  std::string edges;
  // (send_device, recv_device, tensor_name) -> the _Send's DOT id.
  std::map<std::tuple<std::string, std::string, std::string>, std::string> sends;
  std::vector<std::pair<std::tuple<std::string, std::string, std::string>, std::string>> recvs;
  int p = 0;
  for (const auto& [device, def] : partitions) {
    out += absl::StrFormat("  subgraph cluster_%d {\n    label=\"%s\";\n", p, DotEscape(device));
    std::map<std::string, std::string> ids;
    for (int i = 0; i < def.node_size(); ++i) {
      ids[def.node(i).name()] = absl::StrFormat("p%d_%d", p, i);
    }
    for (int i = 0; i < def.node_size(); ++i) {
      const NodeDef& node = def.node(i);
      const std::string& id = ids[node.name()];
      out += "  " + NodeStatement(id, node.name(), node.op(), colors.at(device));
      for (const std::string& input : node.input()) {
        const absl::StatusOr<TensorId> tensor = ParseTensorName(input);
        if (!tensor.ok()) continue;
        if (auto it = ids.find(tensor->node); it != ids.end()) {
          edges += EdgeStatement(it->second, id, tensor->index);
        }
      }
      if (node.op() == "_Send" || node.op() == "_Recv") {
        const auto attr = [&](const char* name) {
          const absl::StatusOr<std::string> value = GetStringAttr(node, name);
          return value.ok() ? *value : std::string();
        };
        auto key = std::make_tuple(attr("send_device"), attr("recv_device"), attr("tensor_name"));
        if (node.op() == "_Send") {
          sends[key] = id;
        } else {
          recvs.emplace_back(std::move(key), id);
        }
      }
    }
    out += "  }\n";
    ++p;
  }
  for (const auto& [key, recv_id] : recvs) {
    if (auto it = sends.find(key); it != sends.end()) {
      edges += absl::StrFormat("  \"%s\" -> \"%s\" [style=dotted, label=\"%s\"];\n", it->second,
                               recv_id, DotEscape(std::get<2>(key)));
    }
  }
  return out + edges;
}

}  // namespace

std::string PlacementLog(const Graph& graph, const Placement& placement) {
  std::string out;
  for (const Node* node : graph.nodes()) {
    out += absl::StrFormat("%s: (%s): %s\n", node->name(), node->op(), DeviceOf(placement, *node));
  }
  return out;
}

std::string PlacementExplanation(const Graph& graph, const Placement& placement) {
  std::string out;
  for (const Node* node : graph.nodes()) {
    const size_t id = static_cast<size_t>(node->id());
    const std::string reason = id < placement.nodes.size() ? placement.nodes[id].reason : "";
    out += absl::StrFormat("%s: (%s): %s%s\n", node->name(), node->op(), DeviceOf(placement, *node),
                           reason.empty() ? "" : "  <- " + reason);
  }
  return out;
}

std::string PlacementSummary(const Graph& graph, const Placement& placement,
                             const std::map<std::string, GraphDef>* partitions) {
  std::map<std::string, int64_t> nodes;
  std::map<std::string, int64_t> bytes;
  for (const Node* node : graph.nodes()) {
    const std::string& device = DeviceOf(placement, *node);
    ++nodes[device];
    bytes[device] += VariableBytes(*node);
  }
  std::string out;
  for (const std::string& device : SortedDevices(graph, placement, partitions)) {
    out += absl::StrFormat("%s: %s, %s of variables", device.empty() ? "(unplaced)" : device,
                           Plural(nodes[device], "node"), FormatBytes(bytes[device]));
    if (partitions != nullptr) {
      int64_t sends = 0;
      int64_t recvs = 0;
      if (auto it = partitions->find(device); it != partitions->end()) {
        for (const NodeDef& node : it->second.node()) {
          sends += node.op() == "_Send";
          recvs += node.op() == "_Recv";
        }
      }
      out += absl::StrFormat(", %d send, %d recv", sends, recvs);
    }
    out += '\n';
  }
  return out;
}

std::string PlacementDot(const Graph& graph, const Placement& placement,
                         const std::map<std::string, GraphDef>* partitions) {
  const std::vector<std::string> devices = SortedDevices(graph, placement, partitions);
  std::map<std::string, std::string> colors;
  for (size_t i = 0; i < devices.size(); ++i) colors[devices[i]] = kPalette[i % kPalette.size()];
  std::string out =
      "digraph placement {\n"
      "  node [style=\"rounded,filled\", fontname=\"Helvetica\", fontsize=10];\n";
  out += Legend(devices, colors);
  out += partitions != nullptr ? PartitionsBody(*partitions, colors)
                               : GraphBody(graph, placement, colors);
  return out + "}\n";
}

}  // namespace rill
