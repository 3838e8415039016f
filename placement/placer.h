// The placer: a pure function from a graph, the devices that exist and the
// options to one device per node, each with the reason it was chosen.
#ifndef RILL_PLACEMENT_PLACER_H_
#define RILL_PLACEMENT_PLACER_H_

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "kernels/framework/kernel_registry.h"
#include "placement/device_set.h"

namespace rill {

struct PlacerOptions {
  // A request naming a device type or id that does not exist (or has no
  // kernel for the node) falls back to a device that does: GPU:N -> GPU:0
  // -> CPU on the requested job/replica/task. Off: such requests fail.
  bool allow_soft_placement = false;
  // Where nodes go that request nothing (partial requests are completed
  // from it): the client's device, e.g. "/job:worker/task:0" or
  // "/job:localhost/replica:0/task:0/device:CPU:0". Empty: the set's first
  // device.
  std::string default_device;
  // Which kernels exist per device type; null: StandardKernels(). An op
  // with no kernel on any device type is placed by its request alone (the
  // executor reports the missing kernel when it runs).
  const KernelRegistry* kernels = nullptr;
  // Nodes placed before (by name, full device names), as a session keeps
  // the nodes of its graph where it first placed them: each stays there,
  // and nodes colocated with it follow.
  absl::flat_hash_map<std::string, std::string> assigned;
};

struct NodePlacement {
  std::string device;  // Full canonical name.
  // One line for `rill place --explain`, e.g. "requested /job:ps/task:0",
  // "colocated with 'w' (ref edge)", "soft placement: no GPU:1, took CPU:0",
  // "no request: client default /job:worker/task:0".
  std::string reason;
};

// Indexed by Node::id().
struct Placement {
  std::vector<NodePlacement> nodes;
  const std::string& device(const Node& node) const { return nodes[node.id()].device; }
};

// Places every node of `graph`:
//  1. colocation groups: nodes whose `_class` attr lists "loc:@NAME", then
//     nodes joined by reference or resource edges, are placed as one;
//  2. a group's requests (each node's requested device) are merged as the
//     groups join: across `_class` links incompatible requests fail naming
//     both nodes and devices; across an edge the source's request wins
//     (the consumer of a variable goes where the variable goes), as in
//     TensorFlow;
//  3. the group goes to the first device matching the merged request whose
//     type has a kernel for every member (soft placement and the default
//     device as in PlacerOptions).
// Errors are INVALID_ARGUMENT and start with "Cannot assign a device for
// operation 'NAME': ", listing the available devices when none matches.
absl::StatusOr<Placement> PlaceGraph(const Graph& graph, const DeviceSet& devices,
                                     const PlacerOptions& options);

}  // namespace rill

#endif  // RILL_PLACEMENT_PLACER_H_
