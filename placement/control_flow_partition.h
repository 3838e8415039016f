// How the partitioner splits loops across devices, as TensorFlow's
// graph_partition.cc does: control loops that pace each device's iterations.
#ifndef RILL_PLACEMENT_CONTROL_FLOW_PARTITION_H_
#define RILL_PLACEMENT_CONTROL_FLOW_PARTITION_H_

#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/control_flow.h"
#include "graph/graph.h"
#include "graph/proto/graph.pb.h"
#include "placement/placer.h"

namespace rill {

// What the control-flow part needs from the partitioner that drives it.
class PartitionBuilder {
 public:
  virtual ~PartitionBuilder() = default;
  virtual GraphDef& PartitionFor(const std::string& device) = 0;
  // `name` itself when neither the graph nor the partitions use it yet,
  // else a fresh "<name>/_<n>".
  virtual std::string UniqueName(const std::string& name) = 0;
  // The _Recv on `dst_device` of src:slot, adding the pair on first use.
  virtual absl::StatusOr<std::string> RecvFor(const Node& src, int slot,
                                              const std::string& dst_device) = 0;
};

// The control-flow side of partitioning a graph that holds Switch, Merge,
// Enter, Exit, NextIteration or LoopCond nodes. Three things, in
// TensorFlow's way:
//  1. Devices: a Switch goes where its data input is, an Exit where its
//     input is, a (non-Ref) Enter and a NextIteration where their first data
//     consumer is, when that device is of the type the placer chose (so
//     has the kernel). So a loop's back edge does not cross devices, and a
//     value entering a loop crosses (once, in the frame around it) to where
//     it is used.
//  2. Control loops: a frame whose edges cross devices gets, on each
//     device that receives inside it, Enter -> Merge -> Switch(pred) ->
//     NextIteration -> back to the Merge, the pred received from the
//     frame's LoopCond (nested frames: the Enter reads the enclosing
//     frame's control loop Merge, else a dummy Const). A device that sends
//     a per-iteration value inside the frame gets one too unless it holds
//     the LoopCond, so that it has as many iterations as the receivers.
//  3. Each _Recv inside a frame gets a control input from its device's
//     control loop: the Merge (once per iteration, the last included), or
//     the Enter when what it receives exists only in a frame's first
//     iteration (downstream of a non-constant Enter), so that the _Recv
//     runs exactly as often as its _Send, in the same frame and iteration.
//     (Not an Identity of the Switch's true output: that is dead in the
//     last iteration, when the senders still send their dead values.)
// A cond (Switch/Merge outside loops) needs nothing more: dead values cross
// a _Send/_Recv pair like live ones.
// Control-loop nodes are named "<frame>/_cloop_<device>/<role>".
class ControlFlowPartition {
 public:
  // Null when `graph` holds no control-flow op: nothing changes then.
  // Errors (INVALID_ARGUMENT, naming the nodes and the frame): those of
  // BuildControlFlowInfo; a NextIteration feeding Merges on two devices.
  static absl::StatusOr<std::unique_ptr<ControlFlowPartition>> Create(const Graph& graph,
                                                                      const Placement& placement);

  // The device whose partition holds `node` (1. above).
  const std::string& device(const Node& node) const { return devices_[node.id()]; }

  // Called once for each new _Send/_Recv pair of src:slot from
  // `src_device` to `recv`'s device, after the pair is recorded: marks both
  // with `_control_flow` (the executor of a partition holding no
  // control-flow op then still expects dead values from them), adds the
  // control loops the pair needs and `recv`'s control input (2. and 3.).
  // INVALID_ARGUMENT naming `src` and the frame when the frame has no
  // LoopCond to pace a control loop.
  absl::Status OnTransfer(const Node& src, const std::string& src_device, NodeDef* send,
                          NodeDef* recv, PartitionBuilder& builder);

 private:
  struct ControlLoop {
    std::string enter;
    std::string merge;
  };

  ControlFlowPartition(const Graph& graph, ControlFlowInfo info);
  absl::Status PlaceControlFlowNodes(const Placement& placement);
  void ClassifyFirstIterationOnly();
  // The control loop of `frame` on `device`, added with those of the
  // enclosing frames on first use.
  absl::StatusOr<ControlLoop> LoopFor(int frame, const std::string& device, const Node& src,
                                      PartitionBuilder& builder);
  std::string LoopPrefix(int frame, const std::string& device, PartitionBuilder& builder);

  const Graph& graph_;
  const ControlFlowInfo info_;
  std::vector<std::string> devices_;        // By node id.
  std::vector<const Node*> loop_cond_;      // By frame; null when it has none.
  std::vector<bool> first_iteration_only_;  // By node id: its outputs exist only in
                                            // its output frame's first iteration.
  std::map<std::pair<int, std::string>, ControlLoop> loops_;  // By (frame, device).
};

}  // namespace rill

#endif  // RILL_PLACEMENT_CONTROL_FLOW_PARTITION_H_
