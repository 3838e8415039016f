// Small graphs with loops and conds whose nodes name cpu:0 or cpu:1, for
// partitioning tests and for running them split and on one device.
#ifndef RILL_TESTS_PLACEMENT_CONTROL_FLOW_GRAPHS_H_
#define RILL_TESTS_PLACEMENT_CONTROL_FLOW_GRAPHS_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/attr_value_util.h"
#include "graph/proto/graph.pb.h"

namespace rill::control_flow_graphs {

inline constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
inline constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";

using Attrs = std::map<std::string, AttrValue>;

// A node whose device is cpu:0 or cpu:1 (`device` 0 or 1) in the tests'
// placement, which takes each node's requested device.
inline NodeDef N(const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs, int device, Attrs attrs = {}) {
  NodeDef node;
  node.set_name(name);
  node.set_op(op);
  for (const std::string& input : inputs) node.add_input(input);
  node.set_device(device == 0 ? kCpu0 : kCpu1);
  for (auto& [key, value] : attrs) (*node.mutable_attr())[key] = value;
  return node;
}

inline Attrs T(DataType type = DT_INT32) { return {{"T", MakeAttr(type)}}; }

inline NodeDef IntConst(const std::string& name, int value, int device,
                        const std::vector<std::string>& inputs = {}) {
  TensorProto proto;
  proto.set_dtype(DT_INT32);
  proto.add_int_val(value);
  return N(name, "Const", inputs, device,
           {{"dtype", MakeAttr(DT_INT32)}, {"value", MakeAttr(proto)}});
}

inline NodeDef Enter(const std::string& name, const std::string& input, const std::string& frame,
                     int device, bool constant = false, DataType type = DT_INT32) {
  return N(name, "Enter", {input}, device,
           {{"T", MakeAttr(type)},
            {"frame_name", MakeAttr(frame)},
            {"is_constant", MakeAttr(constant)},
            {"parallel_iterations", MakeAttr(static_cast<int64_t>(10))}});
}

inline NodeDef Merge(const std::string& name, const std::vector<std::string>& inputs, int device,
                     DataType type = DT_INT32) {
  return N(name, "Merge", inputs, device,
           {{"T", MakeAttr(type)}, {"N", MakeAttr(static_cast<int64_t>(inputs.size()))}});
}

// i = 3; while i < 10: i = i + 2 ("out" is 11), with the loop's state (Enter, Merge, Switch,
// NextIteration, Exit, LoopCond) on cpu:0 and its body on cpu:1.
inline std::vector<NodeDef> SplitLoop() {
  return {IntConst("init", 3, 0),
          IntConst("limit", 10, 0),
          Enter("while/Enter", "init", "while", 0),
          Merge("while/Merge", {"while/Enter", "while/NextIteration"}, 0),
          Enter("while/limit", "limit", "while", 0, /*constant=*/true),
          N("while/Less", "Less", {"while/Merge", "while/limit"}, 0, T()),
          N("while/LoopCond", "LoopCond", {"while/Less"}, 0),
          N("while/Switch", "Switch", {"while/Merge", "while/LoopCond"}, 0, T()),
          N("while/Identity", "Identity", {"while/Switch:1"}, 1, T()),
          IntConst("while/two", 2, 1, {"^while/Identity"}),
          N("while/add", "Add", {"while/Identity", "while/two"}, 1, T()),
          N("while/NextIteration", "NextIteration", {"while/add"}, 0, T()),
          N("while/Exit", "Exit", {"while/Switch"}, 0, T()),
          N("out", "Identity", {"while/Exit"}, 0, T())};
}

// An outer loop over i < 3 holding an inner loop over j < 4 whose body
// (acc += j + i, i entered as a loop invariant) is on cpu:1, the rest on
// cpu:0. "result" is 30.
inline std::vector<NodeDef> NestedLoop() {
  return {IntConst("zero", 0, 0), IntConst("three", 3, 0), IntConst("four", 4, 0),
          IntConst("one", 1, 0), Enter("outer/i", "zero", "outer", 0),
          Enter("outer/acc", "zero", "outer", 0), Enter("outer/limit", "three", "outer", 0, true),
          Enter("outer/inner_limit", "four", "outer", 0, true),
          Enter("outer/one", "one", "outer", 0, true),
          Merge("outer/i_merge", {"outer/i", "outer/i_next"}, 0),
          Merge("outer/acc_merge", {"outer/acc", "outer/acc_next"}, 0),
          N("outer/less", "Less", {"outer/i_merge", "outer/limit"}, 0, T()),
          N("outer/cond", "LoopCond", {"outer/less"}, 0),
          N("outer/i_switch", "Switch", {"outer/i_merge", "outer/cond"}, 0, T()),
          N("outer/acc_switch", "Switch", {"outer/acc_merge", "outer/cond"}, 0, T()),
          N("outer/i_body", "Identity", {"outer/i_switch:1"}, 0, T()),
          N("outer/acc_body", "Identity", {"outer/acc_switch:1"}, 0, T()),
          // The inner loop.
          IntConst("outer/j0", 0, 0, {"^outer/i_body"}), Enter("inner/j", "outer/j0", "inner", 0),
          Enter("inner/acc", "outer/acc_body", "inner", 0),
          Enter("inner/i", "outer/i_body", "inner", 1, true),
          Enter("inner/limit", "outer/inner_limit", "inner", 0, true),
          Enter("inner/one", "outer/one", "inner", 0, true),
          Merge("inner/j_merge", {"inner/j", "inner/j_next"}, 0),
          Merge("inner/acc_merge", {"inner/acc", "inner/acc_next"}, 0),
          N("inner/less", "Less", {"inner/j_merge", "inner/limit"}, 0, T()),
          N("inner/cond", "LoopCond", {"inner/less"}, 0),
          N("inner/j_switch", "Switch", {"inner/j_merge", "inner/cond"}, 0, T()),
          N("inner/acc_switch", "Switch", {"inner/acc_merge", "inner/cond"}, 0, T()),
          N("inner/j_body", "Identity", {"inner/j_switch:1"}, 0, T()),
          N("inner/acc_body", "Identity", {"inner/acc_switch:1"}, 1, T()),
          N("inner/add_j", "Add", {"inner/acc_body", "inner/j_body"}, 1, T()),
          N("inner/add_i", "Add", {"inner/add_j", "inner/i"}, 1, T()),
          N("inner/j_plus", "Add", {"inner/j_body", "inner/one"}, 0, T()),
          N("inner/j_next", "NextIteration", {"inner/j_plus"}, 0, T()),
          N("inner/acc_next", "NextIteration", {"inner/add_i"}, 0, T()),
          N("inner/j_exit", "Exit", {"inner/j_switch"}, 0, T()),
          N("inner/acc_exit", "Exit", {"inner/acc_switch"}, 0, T()),
          // Back in the outer loop.
          N("outer/i_plus", "Add", {"outer/i_body", "outer/one"}, 0, T()),
          N("outer/i_next", "NextIteration", {"outer/i_plus"}, 0, T()),
          N("outer/acc_next", "NextIteration", {"inner/acc_exit"}, 0, T()),
          N("outer/i_exit", "Exit", {"outer/i_switch"}, 0, T()),
          N("outer/acc_exit", "Exit", {"outer/acc_switch"}, 0, T()),
          N("result", "Identity", {"outer/acc_exit"}, 0, T())};
}

// x < y ? x * 2 : -x ("merge"), the true branch on cpu:1.
inline std::vector<NodeDef> SplitCond(int x = 5, int y = 7) {
  return {IntConst("x", x, 0),
          IntConst("y", y, 0),
          N("less", "Less", {"x", "y"}, 0, T()),
          N("switch", "Switch", {"x", "less"}, 1, T()),
          N("pivot", "Identity", {"switch:1"}, 1, T()),
          IntConst("two", 2, 1, {"^pivot"}),
          N("double", "Mul", {"pivot", "two"}, 1, T()),
          N("negate", "Neg", {"switch"}, 0, T()),
          Merge("merge", {"negate", "double"}, 0)};
}

}  // namespace rill::control_flow_graphs

#endif  // RILL_TESTS_PLACEMENT_CONTROL_FLOW_GRAPHS_H_
