// ReplicaDeviceSetter: tf.train.replica_device_setter for GraphDefs:
// variables to parameter-server tasks, everything else to the worker.
#ifndef RILL_PLACEMENT_REPLICA_DEVICE_SETTER_H_
#define RILL_PLACEMENT_REPLICA_DEVICE_SETTER_H_

#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/proto/graph.pb.h"

namespace rill {

enum class PsStrategy {
  kRoundRobin,  // Variables take the ps devices in turn, in graph order.
  kGreedy,      // Each variable goes to the ps device with the fewest bytes so far.
};

// "round_robin" or "greedy"; INVALID_ARGUMENT naming the value otherwise.
absl::StatusOr<PsStrategy> ParsePsStrategy(std::string_view name);

struct ReplicaDeviceSetterOptions {
  // One per parameter-server task: {"/job:ps/task:0", "/job:ps/task:1"}, or
  // local devices ({"/device:CPU:1"}). Empty: every node goes to the worker.
  std::vector<std::string> ps_devices;
  std::string worker_device = "/job:worker";
  PsStrategy strategy = PsStrategy::kRoundRobin;
  // Ops that hold variables.
  std::set<std::string> ps_ops = {"Variable", "VariableV2", "VarHandleOp", "AutoReloadVariable"};
};

// Sets each node's device request. A colocation group (PlaceGraph's rule 1:
// reference and resource edges, `_class` attrs) that holds a ps op goes as
// a whole to one ps device; every other node goes to worker_device. Fields
// a node already requests win over the setter's (as device scopes nested
// inside tf.train.replica_device_setter do). Greedy sizes a variable by its
// `shape` and `dtype` attrs (unknown dimensions count as 1). Errors:
// INVALID_ARGUMENT for malformed device strings (naming the option) or a
// graph that does not import.
absl::Status ApplyReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options, GraphDef* graph);

}  // namespace rill

#endif  // RILL_PLACEMENT_REPLICA_DEVICE_SETTER_H_
