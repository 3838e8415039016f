#include "placement/placer.h"

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <string_view>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"
#include "placement/device_name.h"

namespace rill {
namespace {

// Why two nodes must share a device; `kind` is printed in reasons.
struct ColocationLink {
  int a;
  int b;
  const char* kind;
};

std::vector<ColocationLink> ColocationLinks(const Graph& graph) {
  std::vector<ColocationLink> links;
  for (const Node* node : graph.nodes()) {
    for (const Edge* edge : node->in_edges()) {
      if (edge == nullptr || edge->IsControl()) continue;
      const DataType type = node->input_type(edge->dst_input);
      if (IsRefType(type)) {
        links.push_back({edge->src->id(), node->id(), "ref edge"});
      } else if (type == DT_RESOURCE) {
        links.push_back({edge->src->id(), node->id(), "resource edge"});
      }
    }
    auto it = node->def().attr().find("_class");
    if (it == node->def().attr().end()) continue;
    std::vector<std::string> entries(it->second.list().s().begin(), it->second.list().s().end());
    if (it->second.value_case() == AttrValue::kS) entries.push_back(it->second.s());
    for (const std::string& entry : entries) {
      constexpr std::string_view kPrefix = "loc:@";
      if (!std::string_view(entry).starts_with(kPrefix)) continue;
      const Node* other = graph.FindNode(std::string_view(entry).substr(kPrefix.size()));
      if (other != nullptr && other != node) {
        links.push_back({other->id(), node->id(), "_class attr"});
      }
    }
  }
  return links;
}

int FindRoot(std::vector<int>& parent, int i) {
  while (parent[i] != i) {
    parent[i] = parent[parent[i]];
    i = parent[i];
  }
  return i;
}

std::vector<int> GroupsFromLinks(int num_nodes, const std::vector<ColocationLink>& links) {
  std::vector<int> parent(num_nodes);
  std::iota(parent.begin(), parent.end(), 0);
  for (const ColocationLink& link : links) {
    const int a = FindRoot(parent, link.a);
    const int b = FindRoot(parent, link.b);
    // The lowest id becomes the root, so a group is named by its first node.
    if (a != b) parent[std::max(a, b)] = std::min(a, b);
  }
  std::vector<int> group(num_nodes);
  for (int i = 0; i < num_nodes; ++i) group[i] = FindRoot(parent, i);
  return group;
}

std::string NodeLabel(const Node& node) {
  return absl::StrFormat("'%s' (%s)", node.name(), node.op());
}

// The device types of the set that can run every constrained member; a
// member with no kernel on any of the set's types constrains nothing.
struct GroupKernels {
  bool constrained = false;
  std::set<std::string> types;
  // Per member (same order as the group), the types it has kernels for.
  std::vector<std::set<std::string>> member_types;

  bool Supports(const std::string& type) const { return !constrained || types.count(type) > 0; }
};

GroupKernels ComputeGroupKernels(const std::vector<const Node*>& members,
                                 const std::vector<std::string>& set_types,
                                 const KernelRegistry& kernels) {
  GroupKernels out;
  for (const Node* node : members) {
    std::set<std::string> has;
    for (const std::string& type : set_types) {
      if (kernels.HasKernel(node->def(), type)) has.insert(type);
    }
    if (!has.empty()) {
      if (!out.constrained) {
        out.types = has;
      } else {
        std::erase_if(out.types, [&](const std::string& t) { return has.count(t) == 0; });
      }
      out.constrained = true;
    }
    out.member_types.push_back(std::move(has));
  }
  return out;
}

// `request` with the fields it leaves open taken from `base`. A job, type
// or task of `base` describes `base`'s own device, so the fields under it
// are taken only when the request agrees on the field above.
DeviceSpec Complete(const DeviceSpec& base, const DeviceSpec& request) {
  DeviceSpec out = request;
  const bool same_job = !request.job || request.job == base.job;
  if (!out.job) out.job = base.job;
  if (same_job) {
    if (!out.replica) out.replica = base.replica;
    if (!out.task) out.task = base.task;
  }
  if (!out.type) {
    out.type = base.type;
    out.id = base.id;
  } else if (!out.id && out.type == base.type) {
    out.id = base.id;
  }
  return out;
}

DeviceSpec WithoutDevice(DeviceSpec spec) {
  spec.type.reset();
  spec.id.reset();
  return spec;
}

struct Pick {
  int device;
  bool gpu_preferred;  // A GPU came before the first match in set order.
};

// The first device matching `spec` whose type runs the group; GPUs first
// when the spec leaves the type open and the group has GPU kernels.
std::optional<Pick> PickDevice(const DeviceSet& devices, const DeviceSpec& spec,
                               const GroupKernels& kernels) {
  std::vector<int> ok;
  for (int i : devices.Matching(spec)) {
    if (kernels.Supports(*devices.specs()[i].type)) ok.push_back(i);
  }
  if (ok.empty()) return std::nullopt;
  if (!spec.type && kernels.constrained && kernels.types.count(kDeviceGpu) > 0) {
    for (int i : ok) {
      if (devices.specs()[i].type == kDeviceGpu) return Pick{i, i != ok.front()};
    }
  }
  return Pick{ok.front(), false};
}

struct Group {
  std::vector<const Node*> members;  // In id order.
  DeviceSpec request;                // Merged over the members.
  std::vector<const Node*> requesters;
  // Soft placement dropped a type or id on which the requests disagreed.
  bool merged_softly = false;
};

// "node 'n' (Neg) has no GPU kernel" for the first member that cannot run
// on `type`; nullopt when all can.
std::optional<std::string> MissingKernel(const Group& group, const GroupKernels& kernels,
                                         const std::string& type) {
  for (size_t m = 0; m < group.members.size(); ++m) {
    if (!kernels.member_types[m].empty() && kernels.member_types[m].count(type) == 0) {
      return absl::StrFormat("node %s has no %s kernel", NodeLabel(*group.members[m]), type);
    }
  }
  return std::nullopt;
}

absl::Status AssignError(const Node& node, const std::string& message) {
  return absl::InvalidArgumentError(
      absl::StrFormat("Cannot assign a device for operation '%s': %s", node.name(), message));
}

absl::Status MergeGroupRequests(const std::vector<DeviceSpec>& requests, bool soft, Group& group) {
  for (const Node* node : group.members) {
    const DeviceSpec& own = requests[node->id()];
    if (own.empty()) continue;
    DeviceSpec strict = group.request;
    if (soft && !MergeDeviceSpecs(&strict, own, false).ok()) group.merged_softly = true;
    if (!MergeDeviceSpecs(&group.request, own, soft).ok()) {
      // Name the earlier member this request clashes with, and both devices.
      const Node* other = group.requesters.front();
      absl::Status conflict;
      for (const Node* earlier : group.requesters) {
        DeviceSpec probe = requests[earlier->id()];
        conflict = MergeDeviceSpecs(&probe, own, soft);
        if (!conflict.ok()) {
          other = earlier;
          break;
        }
      }
      if (conflict.ok()) conflict = MergeDeviceSpecs(&group.request, own, soft);
      return AssignError(
          *node, absl::StrFormat("Cannot colocate nodes '%s' (requested %s) and '%s' "
                                 "(requested %s): %s",
                                 other->name(), requests[other->id()].ToString(), node->name(),
                                 own.ToString(), conflict.message()));
    }
    group.requesters.push_back(node);
  }
  return absl::OkStatus();
}

// Why no device matches `request` for the group (soft placement off or
// exhausted): the explicit specification, or the missing kernels.
absl::Status NoDeviceError(const Group& group, const GroupKernels& kernels,
                           const DeviceSet& devices) {
  const Node& named = group.requesters.empty() ? *group.members.front() : *group.requesters.front();
  const std::vector<int> matching = devices.Matching(group.request);
  const std::string available = absl::StrJoin(devices.names(), ", ");
  if (matching.empty()) {
    return AssignError(
        named, absl::StrFormat("Could not satisfy explicit device specification '%s' because no "
                               "devices matching that specification are registered in this "
                               "process; available devices: %s",
                               group.request.ToString(), available));
  }
  std::vector<std::string> missing;
  std::set<std::string> seen;
  for (int i : matching) {
    const std::string& type = *devices.specs()[i].type;
    if (!seen.insert(type).second) continue;
    if (std::optional<std::string> why = MissingKernel(group, kernels, type)) {
      missing.push_back(*std::move(why));
    }
  }
  const std::string why = absl::StrJoin(missing, "; ");
  if (group.request.empty()) {
    return AssignError(named, absl::StrFormat("no device has kernels for its colocation group: %s; "
                                              "available devices: %s",
                                              why, available));
  }
  return AssignError(named, absl::StrFormat("Could not satisfy explicit device specification '%s' "
                                            "because %s; available devices: %s",
                                            group.request.ToString(), why, available));
}

// What kept the group's own request from being honoured, for soft
// placement's reason.
std::string SoftReason(const Group& group, const GroupKernels& kernels, const DeviceSet& devices) {
  for (int i : devices.Matching(group.request)) {
    if (std::optional<std::string> why = MissingKernel(group, kernels, *devices.specs()[i].type)) {
      return *std::move(why);
    }
  }
  return absl::StrFormat("no device matches %s", group.request.ToString());
}

struct Decision {
  int device;
  std::string reason;
};

absl::StatusOr<Decision> PlaceGroup(const Group& group, const GroupKernels& kernels,
                                    const DeviceSet& devices, const DeviceSpec& default_spec,
                                    bool explicit_default, bool soft) {
  // The request first, then (soft) without its id, then without its type.
  std::vector<DeviceSpec> variants = {group.request};
  if (soft && group.request.id) {
    DeviceSpec any_id = group.request;
    any_id.id.reset();
    variants.push_back(any_id);
  }
  if (soft && group.request.type) variants.push_back(WithoutDevice(group.request));
  // The default completes the request; where it cannot (its device has
  // no kernel for the group), it is only a preference and is dropped.
  const DeviceSpec bases[] = {default_spec, WithoutDevice(default_spec), DeviceSpec()};
  for (size_t b = 0; b < std::size(bases); ++b) {
    for (size_t v = 0; v < variants.size(); ++v) {
      const DeviceSpec spec = Complete(bases[b], variants[v]);
      const std::optional<Pick> pick = PickDevice(devices, spec, kernels);
      if (!pick) continue;
      const std::string& name = devices.names()[pick->device];
      std::string reason;
      if (v == 0 && group.merged_softly) {
        reason = absl::StrFormat(
            "soft placement: the group's requests name different devices, "
            "took %s",
            name);
      } else if (v > 0) {
        reason = absl::StrFormat("soft placement: %s, took %s", SoftReason(group, kernels, devices),
                                 name);
      } else if (group.request.empty()) {
        reason = b == 0 ? absl::StrFormat("no request: client default %s", default_spec.ToString())
                        : absl::StrFormat(
                              "no request: nothing on client default %s runs the "
                              "group, took %s",
                              default_spec.ToString(), name);
      } else {
        reason = absl::StrFormat("requested %s", group.request.ToString());
        if (group.requesters.front() != group.members.front()) {
          absl::StrAppendFormat(&reason, " by '%s'", group.requesters.front()->name());
        }
        if (explicit_default && b < 2 && spec != group.request) {
          absl::StrAppendFormat(&reason, ", completed from default %s", bases[b].ToString());
        }
      }
      if (pick->gpu_preferred) reason += " (GPU kernel preferred)";
      return Decision{pick->device, std::move(reason)};
    }
  }
  return NoDeviceError(group, kernels, devices);
}

// For each member but the first, the neighbour through which it joined the
// group, so its reason can say why it follows.
std::vector<std::string> ColocationReasons(const Graph& graph, const std::vector<int>& groups,
                                           const std::vector<ColocationLink>& links) {
  std::vector<std::vector<std::pair<int, const char*>>> adjacent(graph.num_nodes());
  for (const ColocationLink& link : links) {
    adjacent[link.a].emplace_back(link.b, link.kind);
    adjacent[link.b].emplace_back(link.a, link.kind);
  }
  std::vector<std::string> reasons(graph.num_nodes());
  std::vector<bool> seen(graph.num_nodes(), false);
  for (int root = 0; root < graph.num_nodes(); ++root) {
    if (groups[root] != root) continue;
    std::vector<int> queue = {root};
    seen[root] = true;
    for (size_t q = 0; q < queue.size(); ++q) {
      const int at = queue[q];
      for (const auto& [next, kind] : adjacent[at]) {
        if (seen[next]) continue;
        seen[next] = true;
        reasons[next] =
            absl::StrFormat("colocated with '%s' (%s)", graph.nodes()[at]->name(), kind);
        queue.push_back(next);
      }
    }
  }
  return reasons;
}

absl::StatusOr<DeviceSpec> DefaultSpec(const PlacerOptions& options, const DeviceSet& devices) {
  if (options.default_device.empty()) return WithoutDevice(devices.specs().front());
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(options.default_device);
  if (!spec.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("PlacerOptions.default_device: %s", spec.status().message()));
  }
  return spec;
}

}  // namespace

std::vector<int> ColocationGroups(const Graph& graph) {
  return GroupsFromLinks(graph.num_nodes(), ColocationLinks(graph));
}

absl::StatusOr<Placement> PlaceGraph(const Graph& graph, const DeviceSet& devices,
                                     const PlacerOptions& options) {
  Placement placement;
  placement.nodes.resize(graph.num_nodes());
  if (graph.num_nodes() == 0) return placement;
  if (devices.empty()) {
    return AssignError(*graph.nodes().front(), "the device set is empty");
  }
  const KernelRegistry& kernels = options.kernels ? *options.kernels : StandardKernels();
  ASSIGN_OR_RETURN(const DeviceSpec default_spec, DefaultSpec(options, devices));

  std::vector<DeviceSpec> requests(graph.num_nodes());
  for (const Node* node : graph.nodes()) {
    absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(node->requested_device());
    if (!spec.ok()) return AssignError(*node, std::string(spec.status().message()));
    requests[node->id()] = *std::move(spec);
  }

  std::vector<std::string> set_types;
  for (const DeviceSpec& spec : devices.specs()) {
    if (std::find(set_types.begin(), set_types.end(), *spec.type) == set_types.end()) {
      set_types.push_back(*spec.type);
    }
  }

  const std::vector<ColocationLink> links = ColocationLinks(graph);
  const std::vector<int> group_of = GroupsFromLinks(graph.num_nodes(), links);
  std::vector<Group> groups(graph.num_nodes());
  for (const Node* node : graph.nodes()) groups[group_of[node->id()]].members.push_back(node);
  const std::vector<std::string> follow_reasons = ColocationReasons(graph, group_of, links);

  for (Group& group : groups) {
    if (group.members.empty()) continue;
    RETURN_IF_ERROR(MergeGroupRequests(requests, options.allow_soft_placement, group));
    const GroupKernels group_kernels = ComputeGroupKernels(group.members, set_types, kernels);
    ASSIGN_OR_RETURN(Decision decision,
                     PlaceGroup(group, group_kernels, devices, default_spec,
                                !options.default_device.empty(), options.allow_soft_placement));
    for (const Node* node : group.members) {
      NodePlacement& out = placement.nodes[node->id()];
      out.device = devices.names()[decision.device];
      out.reason = node == group.members.front() ? decision.reason : follow_reasons[node->id()];
    }
  }
  return placement;
}

}  // namespace rill
