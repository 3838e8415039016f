#include "graph/graph.h"

#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/control_flow_names.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"

namespace rill {
namespace {

// Every error leaving AddNode names the node and its op the same way.
std::string NodePrefix(const NodeDef& def) {
  return absl::StrFormat("node '%s' (%s): ", def.name(), def.op());
}

absl::Status WithNodeContext(const NodeDef& def, const absl::Status& status) {
  return absl::Status(status.code(), NodePrefix(def) + std::string(status.message()));
}

absl::Status NodeError(const NodeDef& def, std::string message) {
  return absl::InvalidArgumentError(NodePrefix(def) + message);
}

std::string Plural(int n, std::string_view word) {
  return absl::StrFormat("%d %s%s", n, word, n == 1 ? "" : "s");
}

// Data types flow from an output to an input when they are equal, or when
// a reference output feeds a value input of its base type (the reader gets
// the current value). A reference input needs a reference of its own type,
// because the op writes through it.
absl::Status CheckInputType(const NodeDef& def, int input, DataType expected, DataType actual,
                            const std::string& source) {
  if (expected == actual) return absl::OkStatus();
  if (!IsRefType(expected) && IsRefType(actual) && BaseType(actual) == expected) {
    return absl::OkStatus();
  }
  std::string message = absl::StrFormat("input %d expected type %s but got %s", input,
                                        DataTypeString(expected), DataTypeString(actual));
  if (IsRefType(expected) && !IsRefType(actual)) {
    absl::StrAppendFormat(&message, ": %s needs a reference input; is '%s' a Variable?", def.op(),
                          source);
  } else {
    absl::StrAppendFormat(&message, " from '%s'", source);
  }
  return NodeError(def, std::move(message));
}

// A Const's `value` decoded once, so that shape functions downstream can
// read known values (Reshape's shape, Fill's dims).
absl::StatusOr<std::shared_ptr<const Tensor>> DecodeConstValue(const NodeDef& def) {
  auto proto = GetTensorAttr(def, "value");
  if (!proto.ok()) return WithNodeContext(def, proto.status());
  auto tensor = TensorFromProto(**proto);
  if (absl::IsResourceExhausted(tensor.status())) {
    return WithNodeContext(def, tensor.status());
  }
  if (!tensor.ok()) {
    return NodeError(def, absl::StrFormat("invalid value: %s", tensor.status().message()));
  }
  auto dtype = GetTypeAttr(def, "dtype");
  if (dtype.ok() && *dtype != tensor->dtype()) {
    return NodeError(def, absl::StrFormat("value has type %s but the dtype attr is %s",
                                          DataTypeString(tensor->dtype()), DataTypeString(*dtype)));
  }
  return std::make_shared<const Tensor>(*std::move(tensor));
}

}  // namespace

Graph::Graph(const OpRegistry& registry) : registry_(registry) {}

Graph::~Graph() = default;

absl::StatusOr<Node*> Graph::AddNode(NodeDef def) {
  if (!IsValidNodeName(def.name())) {
    return NodeError(def, "invalid node name; names match [A-Za-z0-9.][A-Za-z0-9_./]*");
  }
  if (by_name_.contains(def.name())) return NodeError(def, "duplicate node name");

  auto op = registry_.LookUp(def.op());
  if (!op.ok()) return WithNodeContext(def, op.status());
  const OpRegistration& registration = **op;
  const OpDef& op_def = registration.op_def;

  AddDefaultsToNodeDef(op_def, &def);
  if (absl::Status s = ValidateNodeAttrs(def, op_def); !s.ok()) return WithNodeContext(def, s);
  auto signature = ComputeNodeSignature(def, op_def);
  if (!signature.ok()) return WithNodeContext(def, signature.status());

  struct Input {
    Node* src;  // Null: a back edge from a NextIteration not added yet.
    int index;
    std::string src_name;
  };
  std::vector<Input> data_inputs;
  std::vector<Node*> control_inputs;
  for (int i = 0; i < def.input_size(); ++i) {
    const std::string& input = def.input(i);
    auto id = ParseTensorName(input);
    if (!id.ok()) {
      return NodeError(def, absl::StrFormat("input %d: %s", i, id.status().message()));
    }
    if (!id->IsControl() && !control_inputs.empty()) {
      return NodeError(def, absl::StrFormat("data input '%s' follows a control input; control "
                                            "inputs must come last",
                                            input));
    }
    Node* src = FindNode(id->node);
    if (src == nullptr && IsMergeOp(def.op()) && !id->IsControl() && id->node != def.name()) {
      data_inputs.push_back({nullptr, id->index, std::string(id->node)});
      continue;
    }
    if (src == nullptr) {
      return NodeError(def, absl::StrFormat("input '%s' of node '%s' refers to unknown node '%s'",
                                            input, def.name(), id->node));
    }
    if (id->IsControl()) {
      control_inputs.push_back(src);
      continue;
    }
    if (id->index >= src->num_outputs()) {
      return NodeError(def, absl::StrFormat("input '%s' refers to output %d of node '%s' (%s), "
                                            "which has %s",
                                            input, id->index, src->name(), src->op(),
                                            Plural(src->num_outputs(), "output")));
    }
    data_inputs.push_back({src, id->index, {}});
  }

  const int expected_inputs = static_cast<int>(signature->input_types.size());
  if (static_cast<int>(data_inputs.size()) != expected_inputs) {
    return NodeError(def, absl::StrFormat("expects %s, got %d", Plural(expected_inputs, "input"),
                                          data_inputs.size()));
  }
  std::vector<PartialTensorShape> input_shapes;
  std::vector<const Tensor*> input_tensors;
  for (int i = 0; i < expected_inputs; ++i) {
    const Input& in = data_inputs[i];
    if (in.src == nullptr) {
      input_shapes.emplace_back();
      input_tensors.push_back(nullptr);
      continue;
    }
    RETURN_IF_ERROR(CheckInputType(def, i, signature->input_types[i], in.src->output_type(in.index),
                                   in.src->name()));
    input_shapes.push_back(in.src->output_shape(in.index));
    input_tensors.push_back(in.index == 0 ? in.src->constant_value() : nullptr);
  }

  std::shared_ptr<const Tensor> constant_value;
  if (def.op() == "Const") {
    ASSIGN_OR_RETURN(constant_value, DecodeConstValue(def));
  }

  const int num_outputs = static_cast<int>(signature->output_types.size());
  std::vector<PartialTensorShape> output_shapes;
  {
    InferenceContext context(def, op_def, *signature, std::move(input_shapes),
                             std::move(input_tensors));
    if (registration.shape_fn) {
      if (absl::Status s = registration.shape_fn(context); !s.ok()) {
        return WithNodeContext(def, s);
      }
    }
    output_shapes = context.TakeOutputs();
  }
  // A shape function owns only the slots the signature gives it.
  output_shapes.resize(num_outputs);

  auto node = std::unique_ptr<Node>(new Node);
  node->id_ = num_nodes();
  node->def_ = std::move(def);
  node->op_ = &registration;
  node->signature_ = *std::move(signature);
  node->output_shapes_ = std::move(output_shapes);
  node->constant_value_ = std::move(constant_value);
  Node* dst = node.get();
  auto add_edge = [&](Node* src, int src_output, int dst_input) {
    edges_.push_back(std::make_unique<Edge>(Edge{src, src_output, dst, dst_input}));
    const Edge* edge = edges_.back().get();
    dst->in_edges_.push_back(edge);
    src->out_edges_.push_back(edge);
  };
  for (int i = 0; i < expected_inputs; ++i) {
    if (data_inputs[i].src == nullptr) {
      dst->in_edges_.push_back(nullptr);
      pending_back_edges_[data_inputs[i].src_name].push_back({dst, i, data_inputs[i].index});
      continue;
    }
    add_edge(data_inputs[i].src, data_inputs[i].index, i);
  }
  for (Node* src : control_inputs) add_edge(src, kControlSlot, kControlSlot);

  by_name_.emplace(dst->name(), dst);
  node_ptrs_.push_back(dst);
  nodes_.push_back(std::move(node));
  if (!pending_back_edges_.empty()) {
    if (absl::Status s = ResolveBackEdges(dst); !s.ok()) {
      // The graph stays as it was: a failed AddNode adds nothing.
      by_name_.erase(dst->name());
      for (const Edge* edge : dst->in_edges_) {
        if (edge != nullptr) std::erase(edge->src->out_edges_, edge);
      }
      node_ptrs_.pop_back();
      nodes_.pop_back();
      return s;
    }
  }
  return dst;
}

absl::Status Graph::ResolveBackEdges(Node* src) {
  auto it = pending_back_edges_.find(src->name());
  if (it == pending_back_edges_.end()) return absl::OkStatus();
  for (const BackEdge& back : it->second) {
    const NodeDef& merge = back.merge->def();
    if (!IsNextIterationOp(src->op())) {
      return NodeError(merge, absl::StrFormat(
                                  "input %d comes from '%s' (%s), which is defined after it; "
                                  "only a NextIteration may feed a Merge from later (a loop)",
                                  back.input, src->name(), src->op()));
    }
    if (back.src_output >= src->num_outputs()) {
      return NodeError(merge, absl::StrFormat("input %d refers to output %d of node '%s' (%s), "
                                              "which has %s",
                                              back.input, back.src_output, src->name(),
                                              src->op(), Plural(src->num_outputs(), "output")));
    }
    RETURN_IF_ERROR(CheckInputType(merge, back.input, back.merge->input_type(back.input),
                                   src->output_type(back.src_output), src->name()));
  }
  for (const BackEdge& back : it->second) {
    edges_.push_back(
        std::make_unique<Edge>(Edge{src, back.src_output, back.merge, back.input}));
    back.merge->in_edges_[back.input] = edges_.back().get();
    src->out_edges_.push_back(edges_.back().get());
  }
  pending_back_edges_.erase(it);
  return absl::OkStatus();
}

absl::Status Graph::UpdateEdge(Node* src, int src_output, Node* dst, int dst_input) {
  const NodeDef& def = dst->def();
  if (dst_input < 0 || dst_input >= dst->num_inputs()) {
    return NodeError(def, absl::StrFormat("has no input %d", dst_input));
  }
  if (src_output < 0 || src_output >= src->num_outputs()) {
    return NodeError(def, absl::StrFormat("input from '%s': it has no output %d", src->name(),
                                          src_output));
  }
  if (src->id() >= dst->id() && !(IsNextIterationOp(src->op()) && IsMergeOp(dst->op()))) {
    return NodeError(def, absl::StrFormat("input from '%s', added after it: only a "
                                          "NextIteration may feed a Merge from later",
                                          src->name()));
  }
  RETURN_IF_ERROR(CheckInputType(def, dst_input, dst->input_type(dst_input),
                                 src->output_type(src_output), src->name()));
  if (const Edge* old = dst->in_edges_[dst_input]; old != nullptr) {
    std::erase(old->src->out_edges_, old);
  }
  edges_.push_back(std::make_unique<Edge>(Edge{src, src_output, dst, dst_input}));
  dst->in_edges_[dst_input] = edges_.back().get();
  src->out_edges_.push_back(edges_.back().get());
  dst->def_.set_input(dst_input, src_output == 0 ? src->name()
                                                 : absl::StrFormat("%s:%d", src->name(),
                                                                   src_output));
  return absl::OkStatus();
}

void Graph::AddControlEdge(Node* src, Node* dst) {
  for (const Edge* edge : dst->in_edges_) {
    if (edge != nullptr && edge->IsControl() && edge->src == src) return;
  }
  edges_.push_back(std::make_unique<Edge>(Edge{src, kControlSlot, dst, kControlSlot}));
  dst->in_edges_.push_back(edges_.back().get());
  src->out_edges_.push_back(edges_.back().get());
  dst->def_.add_input("^" + src->name());
}

absl::Status Graph::CheckBackEdgesResolved() const {
  if (pending_back_edges_.empty()) return absl::OkStatus();
  std::vector<std::string> missing;
  for (const auto& [name, backs] : pending_back_edges_) {
    for (const BackEdge& back : backs) {
      missing.push_back(absl::StrFormat("input %d of '%s' names '%s'", back.input,
                                        back.merge->name(), name));
    }
  }
  std::sort(missing.begin(), missing.end());
  return absl::InvalidArgumentError(
      absl::StrFormat("unknown nodes feeding a Merge: %s", absl::StrJoin(missing, "; ")));
}

Node* Graph::FindNode(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

GraphDef Graph::ToGraphDef() const {
  GraphDef graph;
  for (const Node* node : node_ptrs_) *graph.add_node() = node->def();
  // Empty messages stay absent, so that a graph without them round-trips.
  if (versions_.ByteSizeLong() > 0) *graph.mutable_versions() = versions_;
  if (library_.ByteSizeLong() > 0) *graph.mutable_library() = library_;
  return graph;
}

}  // namespace rill
