#include "placement/replica_device_setter.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/device_spec.h"
#include "graph/graph.h"
#include "graph/status_macros.h"
#include "graph/types.h"
#include "ops/registry.h"
#include "placement/placer.h"

namespace rill {
namespace {

absl::StatusOr<DeviceSpec> ParseOption(std::string_view option, std::string_view value) {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(value);
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replica device setter option %s: %s", option, spec.status().message()));
  }
  return spec;
}

// Bytes of the variable a ps op holds, from its `shape` and `dtype` attrs;
// unknown dimensions (and an unknown rank) count as 1.
int64_t VariableBytes(const NodeDef& node) {
  int64_t elements = 1;
  if (auto it = node.attr().find("shape"); it != node.attr().end()) {
    for (const auto& dim : it->second.shape().dim()) elements *= std::max<int64_t>(dim.size(), 1);
  }
  int64_t bytes_per_element = 0;
  if (auto it = node.attr().find("dtype"); it != node.attr().end()) {
    bytes_per_element = DataTypeSize(BaseType(it->second.type()));
  }
  return elements * bytes_per_element;
}

// The ps device for each colocation group holding a ps op, in the order
// the groups' first ps ops appear in `def`.
std::map<int, int> AssignPsDevices(const ReplicaDeviceSetterOptions& options, const GraphDef& def,
                                   const Graph& graph, const std::vector<int>& group_of) {
  std::vector<int> order;
  std::map<int, int64_t> group_bytes;
  for (const NodeDef& node_def : def.node()) {
    if (options.ps_ops.count(node_def.op()) == 0) continue;
    const Node* node = graph.FindNode(node_def.name());
    const int group = group_of[node->id()];
    if (!group_bytes.contains(group)) order.push_back(group);
    group_bytes[group] += VariableBytes(node->def());
  }
  std::map<int, int> device_of_group;
  std::vector<int64_t> load(options.ps_devices.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    int device = static_cast<int>(i % options.ps_devices.size());
    if (options.strategy == PsStrategy::kGreedy) {
      device = static_cast<int>(std::min_element(load.begin(), load.end()) - load.begin());
    }
    load[device] += group_bytes[order[i]];
    device_of_group[order[i]] = device;
  }
  return device_of_group;
}

}  // namespace

absl::StatusOr<PsStrategy> ParsePsStrategy(std::string_view name) {
  if (name == "round_robin") return PsStrategy::kRoundRobin;
  if (name == "greedy") return PsStrategy::kGreedy;
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown ps strategy '%s' (want 'round_robin' or 'greedy')", name));
}

absl::Status ApplyReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options, GraphDef* graph) {
  std::vector<DeviceSpec> ps_specs;
  for (size_t i = 0; i < options.ps_devices.size(); ++i) {
    ASSIGN_OR_RETURN(DeviceSpec spec,
                     ParseOption(absl::StrFormat("ps_devices[%d]", i), options.ps_devices[i]));
    ps_specs.push_back(std::move(spec));
  }
  ASSIGN_OR_RETURN(const DeviceSpec worker_spec,
                   ParseOption("worker_device", options.worker_device));

  absl::StatusOr<std::unique_ptr<Graph>> imported = ImportGraphDef(*graph, StandardOps());
  if (!imported.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("replica device setter: %s", imported.status().message()));
  }
  const Graph& g = **imported;
  const std::vector<int> group_of = ColocationGroups(g);
  std::map<int, int> ps_device_of_group;
  if (!ps_specs.empty()) ps_device_of_group = AssignPsDevices(options, *graph, g, group_of);

  for (NodeDef& node_def : *graph->mutable_node()) {
    absl::StatusOr<DeviceSpec> own = DeviceSpec::Parse(node_def.device());
    if (!own.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("replica device setter: node '%s': %s",
                                                        node_def.name(), own.status().message()));
    }
    const int group = group_of[g.FindNode(node_def.name())->id()];
    auto ps = ps_device_of_group.find(group);
    const DeviceSpec& setter = ps == ps_device_of_group.end() ? worker_spec : ps_specs[ps->second];
    node_def.set_device(DeviceSpec::Override(setter, *own).ToString());
  }
  return absl::OkStatus();
}

}  // namespace rill
