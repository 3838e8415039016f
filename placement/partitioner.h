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
// Map key: the device's full name.
absl::StatusOr<std::map<std::string, GraphDef>> PartitionGraph(const Graph& graph,
                                                               const Placement& placement,
                                                               const PartitionOptions& options);

}  // namespace rill

#endif  // RILL_PLACEMENT_PARTITIONER_H_
