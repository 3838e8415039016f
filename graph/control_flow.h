// Which frame every node of a graph runs in: the root frame, or a loop's
// frame opened by its Enter nodes, with the checks that make a loop sound.
#ifndef RILL_GRAPH_CONTROL_FLOW_H_
#define RILL_GRAPH_CONTROL_FLOW_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"

namespace rill {

// A loop's frame, as its Enter nodes name it. Frame 0 is the root.
struct FrameInfo {
  std::string name;  // Empty for the root.
  int parent = -1;   // The enclosing frame; -1 for the root.
  int depth = 0;     // 0 for the root, 1 for a top-level loop, ...
  int parallel_iterations = 1;
  std::vector<const Node*> enters;  // The Enters that open it.
  std::vector<const Node*> exits;
};

struct ControlFlowInfo {
  std::vector<FrameInfo> frames;
  // Per node id: the frame it runs in. An Enter runs in the frame around
  // its loop (its outputs are in the loop's frame), an Exit runs in the
  // loop's frame (its outputs are in the frame around).
  std::vector<int> frame_of;
  // Per node id: the frame its outputs are in (an Enter's loop, the frame
  // around an Exit's loop, else its own).
  std::vector<int> output_frame_of;

  // Whether `edge` is a loop's back edge (NextIteration to Merge).
  static bool IsBackEdge(const Edge& edge);
  // "'frame' (in 'outer')", or "the root frame", for messages.
  std::string Describe(int frame) const;
};

// INVALID_ARGUMENT naming the nodes for: an Enter without a frame_name or
// with parallel_iterations < 1; an Exit or a NextIteration outside any
// loop; a node whose inputs come from different frames; a frame name
// opened from two different frames; a NextIteration that feeds no Merge of
// its frame; a Merge fed by a NextIteration of another frame; a LoopCond
// outside a loop. Graph nodes never form other cycles (ImportGraphDef).
absl::StatusOr<ControlFlowInfo> BuildControlFlowInfo(const Graph& graph);

}  // namespace rill

#endif  // RILL_GRAPH_CONTROL_FLOW_H_
