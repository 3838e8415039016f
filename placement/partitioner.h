// The partitioner: a pure function from a placed graph to one GraphDef per
// device, with a _Send/_Recv pair on every edge that crosses devices.
#ifndef RILL_PLACEMENT_PARTITIONER_H_
#define RILL_PLACEMENT_PARTITIONER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/proto/graph.pb.h"
#include "placement/placer.h"

namespace rill {

struct PartitionOptions {
  // The incarnation of a device, carried in rendezvous keys (a restarted
  // task gets a new one, so stale tensors never match). Null: 1 for all.
  std::function<uint64_t(const std::string& device)> incarnation;
};

// Splits `graph` by `placement` (every node placed). Each partition holds
// its device's nodes with NodeDef::device set to the full name, and keeps
// the graph's versions. For a data edge src:k -> dst across devices the
// source partition gets one `_Send` per (tensor, destination device) and
// the destination partition one `_Recv` shared by all consumers there;
// both carry attrs T/tensor_type, tensor_name ("edge_<id>_<src>"),
// send_device, send_device_incarnation, recv_device and
// client_terminated=false, so that both compute the same RendezvousKey. A
// reference edge sends the value. A control edge across devices becomes a
// small dummy tensor sent after src and a control edge from its _Recv to
// dst. New node names are "<src>/_<n>", unique in the graph.
// A graph with control flow (Switch, Merge, Enter, Exit, NextIteration,
// LoopCond) is split as TensorFlow splits it: some control-flow nodes
// follow their neighbours' device, each device a loop crosses to runs a
// control loop, and a _Recv inside a loop takes a control input from it,
// so that it runs once per iteration, and every _Send/_Recv is marked
// `_control_flow` (it may carry dead values); see control_flow_partition.h
// for what and why. Errors are INVALID_ARGUMENT naming the node and frame.
// A graph without control flow is split exactly as described above.
// Map key: the device's full name.
absl::StatusOr<std::map<std::string, GraphDef>> PartitionGraph(const Graph& graph,
                                                               const Placement& placement,
                                                               const PartitionOptions& options);

}  // namespace rill

#endif  // RILL_PLACEMENT_PARTITIONER_H_
