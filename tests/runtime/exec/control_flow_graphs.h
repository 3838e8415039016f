// GraphDefs with TensorFlow's control flow written node by node, as
// TensorFlow's tf.while_loop and tf.cond lay them out, for the executor's
// and the partitioner's tests.
#ifndef RILL_TESTS_RUNTIME_EXEC_CONTROL_FLOW_GRAPHS_H_
#define RILL_TESTS_RUNTIME_EXEC_CONTROL_FLOW_GRAPHS_H_

#include <map>
#include <string>
#include <vector>

#include "graph/attr_value_util.h"
#include "graph/proto/graph.pb.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"

namespace rill::testing {

class GraphDefBuilder {
 public:
  // Adds a node; returns its name.
  std::string Add(const std::string& name, const std::string& op,
                  const std::vector<std::string>& inputs,
                  const std::map<std::string, AttrValue>& attrs = {},
                  const std::string& device = "") {
    NodeDef* node = def_.add_node();
    node->set_name(name);
    node->set_op(op);
    node->set_device(device);
    for (const std::string& input : inputs) node->add_input(input);
    for (const auto& [key, value] : attrs) (*node->mutable_attr())[key] = value;
    return name;
  }
  template <typename T>
  std::string Const(const std::string& name, T value, const std::string& device = "") {
    const Tensor tensor = Tensor::Scalar<T>(value);
    return Add(name, "Const", {},
               {{"dtype", MakeAttr(tensor.dtype())}, {"value", MakeAttr(TensorToProto(tensor))}},
               device);
  }
  std::string Const(const std::string& name, const Tensor& tensor,
                    const std::string& device = "") {
    return Add(name, "Const", {},
               {{"dtype", MakeAttr(tensor.dtype())}, {"value", MakeAttr(TensorToProto(tensor))}},
               device);
  }
  std::string Enter(const std::string& name, const std::string& input, DataType type,
                    const std::string& frame, bool is_constant = false,
                    int parallel_iterations = 10, const std::string& device = "") {
    return Add(name, "Enter", {input},
               {{"T", MakeAttr(type)},
                {"frame_name", MakeAttr(frame)},
                {"is_constant", MakeAttr(is_constant)},
                {"parallel_iterations", MakeAttr(parallel_iterations)}},
               device);
  }
  // A one-input op with attr T.
  std::string Unary(const std::string& name, const std::string& op, const std::string& input,
                    DataType type, const std::string& device = "") {
    return Add(name, op, {input}, {{"T", MakeAttr(type)}}, device);
  }
  std::string Binary(const std::string& name, const std::string& op, const std::string& a,
                     const std::string& b, DataType type, const std::string& device = "") {
    return Add(name, op, {a, b}, {{"T", MakeAttr(type)}}, device);
  }
  std::string Merge(const std::string& name, const std::vector<std::string>& inputs,
                    DataType type, const std::string& device = "") {
    return Add(name, "Merge", inputs,
               {{"T", MakeAttr(type)}, {"N", MakeAttr(static_cast<int>(inputs.size()))}}, device);
  }

  // `frame`: a loop counting from `start` while counter < `limit`, adding
  // `step` each iteration; returns the Exit's name. Node names start with
  // `frame` + "/".
  std::string CountingLoop(const std::string& frame, const std::string& start,
                           const std::string& limit, const std::string& step,
                           int parallel_iterations = 10, const std::string& device = "") {
    const std::string p = frame + "/";
    Enter(p + "enter", start, DT_INT32, frame, false, parallel_iterations, device);
    Enter(p + "limit", limit, DT_INT32, frame, true, parallel_iterations, device);
    Enter(p + "step", step, DT_INT32, frame, true, parallel_iterations, device);
    Merge(p + "merge", {p + "enter", p + "next"}, DT_INT32, device);
    Binary(p + "less", "Less", p + "merge", p + "limit", DT_INT32, device);
    Add(p + "cond", "LoopCond", {p + "less"}, {}, device);
    Binary(p + "switch", "Switch", p + "merge", p + "cond", DT_INT32, device);
    Unary(p + "exit", "Exit", p + "switch:0", DT_INT32, device);
    Unary(p + "body", "Identity", p + "switch:1", DT_INT32, device);
    Binary(p + "add", "Add", p + "body", p + "step", DT_INT32, device);
    Unary(p + "next", "NextIteration", p + "add", DT_INT32, device);
    return p + "exit";
  }

  GraphDef& def() { return def_; }

 private:
  GraphDef def_;
};

}  // namespace rill::testing

#endif  // RILL_TESTS_RUNTIME_EXEC_CONTROL_FLOW_GRAPHS_H_
