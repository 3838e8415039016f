// The op names of TensorFlow's control-flow primitives, asked by the graph,
// the executor and the partitioner (each primitive has a Ref twin).
#ifndef RILL_GRAPH_CONTROL_FLOW_NAMES_H_
#define RILL_GRAPH_CONTROL_FLOW_NAMES_H_

#include <string_view>

namespace rill {

inline bool IsSwitchOp(std::string_view op) { return op == "Switch" || op == "RefSwitch"; }
inline bool IsMergeOp(std::string_view op) { return op == "Merge" || op == "RefMerge"; }
inline bool IsEnterOp(std::string_view op) { return op == "Enter" || op == "RefEnter"; }
inline bool IsExitOp(std::string_view op) { return op == "Exit" || op == "RefExit"; }
inline bool IsNextIterationOp(std::string_view op) {
  return op == "NextIteration" || op == "RefNextIteration";
}
inline bool IsLoopCondOp(std::string_view op) { return op == "LoopCond"; }

// Whether a graph holding `op` needs the executor's frames and dead values.
inline bool IsControlFlowOp(std::string_view op) {
  return IsSwitchOp(op) || IsMergeOp(op) || IsEnterOp(op) || IsExitOp(op) ||
         IsNextIterationOp(op) || IsLoopCondOp(op) || op == "ControlTrigger";
}

}  // namespace rill

#endif  // RILL_GRAPH_CONTROL_FLOW_NAMES_H_
