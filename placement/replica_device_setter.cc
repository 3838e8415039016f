#include "placement/replica_device_setter.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/device_spec.h"
#include "graph/graph.h"
#include "graph/status_macros.h"
#include "graph/types.h"
#include "ops/registry.h"
#include "placement/device_name.h"
#include "placement/colocation.h"

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

// A colocation group: its members in graph order, whether one is a ps op,
// what its ps ops hold, and the device fields its members ask for.
struct SetterGroup {
  std::vector<NodeDef*> members;
  bool has_ps_op = false;
  int64_t bytes = 0;
  DeviceSpec own;
};

// The groups in the order their first members appear in `def`. INVALID_ARGUMENT
// naming two members whose own devices cannot merge (no device could hold
// the group).
absl::StatusOr<std::vector<SetterGroup>> Groups(const ReplicaDeviceSetterOptions& options,
                                                GraphDef& def, const Graph& graph) {
  const std::vector<int> group_of = ColocationGroups(graph);
  std::map<int, size_t> index;
  std::vector<SetterGroup> groups;
  std::vector<const NodeDef*> first_with_device;
  for (NodeDef& node_def : *def.mutable_node()) {
    const int group = group_of[graph.FindNode(node_def.name())->id()];
    auto [it, fresh] = index.emplace(group, groups.size());
    if (fresh) {
      groups.emplace_back();
      first_with_device.push_back(nullptr);
    }
    SetterGroup& g = groups[it->second];
    g.members.push_back(&node_def);
    if (options.ps_ops.count(node_def.op()) > 0) {
      g.has_ps_op = true;
      g.bytes += VariableBytes(node_def);
    }
    absl::StatusOr<DeviceSpec> own = DeviceSpec::Parse(node_def.device());
    if (!own.ok()) {
      return absl::InvalidArgumentError(absl::StrFormat("replica device setter: node '%s': %s",
                                                        node_def.name(), own.status().message()));
    }
    if (own->empty()) continue;
    if (absl::Status merged = MergeDeviceSpecs(&g.own, *own, false); !merged.ok()) {
      const NodeDef& other = *first_with_device[it->second];
      return absl::InvalidArgumentError(absl::StrFormat(
          "replica device setter: nodes '%s' (%s) and '%s' (%s) are colocated but ask for "
          "different devices: %s",
          other.name(), other.device(), node_def.name(), node_def.device(), merged.message()));
    }
    if (first_with_device[it->second] == nullptr) first_with_device[it->second] = &node_def;
  }
  return groups;
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
  ASSIGN_OR_RETURN(std::vector<SetterGroup> groups, Groups(options, *graph, **imported));

  size_t next_ps = 0;
  std::vector<int64_t> load(ps_specs.size(), 0);
  for (SetterGroup& group : groups) {
    DeviceSpec setter = worker_spec;
    if (group.has_ps_op && !ps_specs.empty()) {
      // As tf.train.replica_device_setter: a group that asks for another
      // job than the ps devices' keeps it, takes no ps task and counts for
      // none; the others take the strategy's next ps device.
      const std::optional<std::string>& ps_job = ps_specs.front().job;
      if (ps_job && group.own.job && *group.own.job != *ps_job) {
        setter = ps_specs.front();
        setter.task.reset();
        setter.replica.reset();
      } else {
        size_t device = next_ps++ % ps_specs.size();
        if (options.strategy == PsStrategy::kGreedy) {
          device = static_cast<size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        }
        load[device] += group.bytes;
        setter = ps_specs[device];
      }
    }
    // A group's own fields win (as device scopes inside the setter do), and
    // every member takes the same device: a group is never split.
    const std::string device = DeviceSpec::Override(setter, group.own).ToString();
    for (NodeDef* member : group.members) member->set_device(device);
  }
  return absl::OkStatus();
}

}  // namespace rill
