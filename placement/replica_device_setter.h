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

// Sets each node's device request, as tf.train.replica_device_setter
// does. A colocation group (PlaceGraph's rule 1: reference and resource
// edges, `_class` attrs) goes whole to one device: one holding a ps op to
// the strategy's next ps device, unless its members ask for another job
// than the ps devices' (it then keeps that job, takes no ps task and counts
// for none); every other group to worker_device. Fields the members
// already request win over the setter's (as device scopes nested inside
// tf.train.replica_device_setter do), so a variable pinned to a ps task
// stays there and what is colocated with it follows. Greedy sizes a
// variable by its `shape` and `dtype` attrs (unknown dimensions count as
// 1). Errors: INVALID_ARGUMENT for malformed device strings (naming the
// option or node), colocated nodes asking for different devices (naming
// both), or a graph that does not import.
absl::Status ApplyReplicaDeviceSetter(const ReplicaDeviceSetterOptions& options, GraphDef* graph);

}  // namespace rill

#endif  // RILL_PLACEMENT_REPLICA_DEVICE_SETTER_H_
