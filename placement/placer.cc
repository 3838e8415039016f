#include "placement/placer.h"

#include <algorithm>
#include <optional>
#include <set>
#include <string_view>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "placement/colocation.h"
#include "placement/device_name.h"

namespace rill {
namespace {

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

// Joins nodes into colocation groups, merging their requests as it goes:
// the `_class` links first, then reference and resource edges, as
// TensorFlow's placer does. Across an edge whose requests conflict the
// source's request wins (the consumer of a variable follows it); across
// `_class` links a conflict is an error naming both nodes and requests.
class Colocator {
 public:
  Colocator(const Graph& graph, const std::vector<DeviceSpec>& requests,
            const std::vector<bool>& pinned, bool soft)
      : graph_(graph),
        requests_(requests),
        pinned_(pinned),
        soft_(soft),
        sets_(graph.num_nodes()),
        groups_(graph.num_nodes()),
        gave_way_(graph.num_nodes()) {
    for (const Node* node : graph.nodes()) {
      Group& group = groups_[node->id()];
      group.request = requests[node->id()];
      if (!group.request.empty()) group.requesters.push_back(node);
    }
  }

  absl::Status Join(const ColocationLink& link) {
    const int a = sets_.Find(link.a);
    const int b = sets_.Find(link.b);
    if (a == b) return absl::OkStatus();
    Group& first = groups_[a];
    Group& second = groups_[b];
    DeviceSpec merged = first.request;
    DeviceSpec strict = merged;
    const bool strictly = MergeDeviceSpecs(&strict, second.request, false).ok();
    absl::Status status = MergeDeviceSpecs(&merged, second.request, soft_);
    bool softly = first.merged_softly || second.merged_softly || (status.ok() && !strictly);
    if (!status.ok()) {
      if (!link.source_wins || Pinned(second)) return ConflictError(link, first, second);
      // The consumer's group gives way to its source's request.
      merged = first.request;
      softly = first.merged_softly;
      gave_way_[link.b] = second.request.ToString();
      second.requesters.clear();
    }
    Group joined;
    joined.request = std::move(merged);
    joined.merged_softly = softly;
    joined.requesters = first.requesters;
    joined.requesters.insert(joined.requesters.end(), second.requesters.begin(),
                             second.requesters.end());
    std::sort(joined.requesters.begin(), joined.requesters.end(),
              [](const Node* x, const Node* y) { return x->id() < y->id(); });
    const int root = sets_.Join(a, b);
    groups_[root] = std::move(joined);
    groups_[std::max(a, b)] = Group();
    return absl::OkStatus();
  }

  // The groups, each with its members in id order.
  std::vector<Group> Groups() {
    std::vector<Group> out(graph_.num_nodes());
    for (const Node* node : graph_.nodes()) {
      const int root = sets_.Find(node->id());
      if (out[root].members.empty()) {
        out[root].request = groups_[root].request;
        out[root].requesters = groups_[root].requesters;
        out[root].merged_softly = groups_[root].merged_softly;
      }
      out[root].members.push_back(node);
    }
    return out;
  }
  std::vector<int> GroupOf() { return sets_.Roots(); }
  // Per node: the request it gave up to follow its source, or "".
  const std::vector<std::string>& gave_way() const { return gave_way_; }

 private:
  bool Pinned(const Group& group) const {
    return std::any_of(group.requesters.begin(), group.requesters.end(),
                       [&](const Node* n) { return pinned_[n->id()]; });
  }

  // Names a member of each group whose requests do not merge.
  absl::Status ConflictError(const ColocationLink& link, const Group& first, const Group& second) {
    const Node* x = first.requesters.empty() ? graph_.nodes()[link.a] : first.requesters.front();
    const Node* y = second.requesters.empty() ? graph_.nodes()[link.b] : second.requesters.front();
    absl::Status conflict;
    for (const Node* p : first.requesters) {
      for (const Node* q : second.requesters) {
        DeviceSpec probe = requests_[p->id()];
        conflict = MergeDeviceSpecs(&probe, requests_[q->id()], soft_);
        if (!conflict.ok()) {
          x = p;
          y = q;
          break;
        }
      }
      if (!conflict.ok()) break;
    }
    if (conflict.ok()) {
      DeviceSpec probe = first.request;
      conflict = MergeDeviceSpecs(&probe, second.request, soft_);
    }
    if (x->id() > y->id()) std::swap(x, y);
    return AssignError(*graph_.nodes()[link.b],
                       absl::StrFormat("Cannot colocate nodes '%s' (requested %s) and '%s' "
                                       "(requested %s): %s",
                                       x->name(), requests_[x->id()].ToString(), y->name(),
                                       requests_[y->id()].ToString(), conflict.message()));
  }

  const Graph& graph_;
  const std::vector<DeviceSpec>& requests_;
  const std::vector<bool>& pinned_;
  const bool soft_;
  NodeSets sets_;
  std::vector<Group> groups_;  // Valid at roots.
  std::vector<std::string> gave_way_;
};

// No device type runs every member of the group: names a member and an
// earlier one whose kernels leave no type in common, as TensorFlow does.
absl::Status NoCommonTypeError(const Group& group, const GroupKernels& kernels) {
  const auto types = [&](size_t m) { return absl::StrJoin(kernels.member_types[m], " "); };
  std::set<std::string> common;
  bool started = false;
  for (size_t m = 0; m < group.members.size(); ++m) {
    const std::set<std::string>& has = kernels.member_types[m];
    if (has.empty()) continue;
    if (!started) {
      common = has;
      started = true;
      continue;
    }
    std::erase_if(common, [&](const std::string& t) { return has.count(t) == 0; });
    if (!common.empty()) continue;
    // The earlier member that shares no type with this one, or the first.
    size_t other = 0;
    for (size_t e = 0; e < m; ++e) {
      if (kernels.member_types[e].empty()) continue;
      const bool disjoint = std::none_of(has.begin(), has.end(), [&](const std::string& t) {
        return kernels.member_types[e].count(t) > 0;
      });
      if (disjoint || other == 0) other = e;
      if (disjoint) break;
    }
    const Node& a = *group.members[m];
    const Node& b = *group.members[other];
    return AssignError(
        a, absl::StrFormat("Cannot colocate nodes '%s' and '%s' because no device type supports "
                           "both of those nodes and the other nodes colocated with them: %s: %s; "
                           "%s: %s",
                           a.name(), b.name(), a.op(), types(m), b.op(), types(other)));
  }
  return AssignError(*group.members.front(), "no device type runs its colocation group");
}

// Why no device matches `request` for the group (soft placement off or
// exhausted): the explicit specification, or the missing kernels.
absl::Status NoDeviceError(const Group& group, const GroupKernels& kernels,
                           const DeviceSet& devices) {
  if (kernels.constrained && kernels.types.empty()) return NoCommonTypeError(group, kernels);
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
  std::vector<bool> pinned(graph.num_nodes(), false);
  for (const Node* node : graph.nodes()) {
    std::string_view requested = node->requested_device();
    if (auto it = options.assigned.find(node->name()); it != options.assigned.end()) {
      requested = it->second;
      pinned[node->id()] = true;
    }
    absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(requested);
    if (!spec.ok()) return AssignError(*node, std::string(spec.status().message()));
    requests[node->id()] = *std::move(spec);
  }

  std::vector<std::string> set_types;
  for (const DeviceSpec& spec : devices.specs()) {
    if (std::find(set_types.begin(), set_types.end(), *spec.type) == set_types.end()) {
      set_types.push_back(*spec.type);
    }
  }

  std::vector<ColocationLink> links = ColocationLinks(graph);
  // TensorFlow's order: `_class` groups first, then the edges to variables.
  std::stable_partition(links.begin(), links.end(),
                        [](const ColocationLink& link) { return !link.source_wins; });
  Colocator colocator(graph, requests, pinned, options.allow_soft_placement);
  for (const ColocationLink& link : links) RETURN_IF_ERROR(colocator.Join(link));
  const std::vector<std::string> follow_reasons =
      ColocationReasons(graph, colocator.GroupOf(), links, colocator.gave_way());

  for (const Group& group : colocator.Groups()) {
    if (group.members.empty()) continue;
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
