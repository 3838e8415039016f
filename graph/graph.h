// Graph: the validated in-memory form of a GraphDef. Every node has its op,
// its attrs with defaults filled, typed input and output slots, inferred
// output shapes, and data and control edges.
#ifndef RILL_GRAPH_GRAPH_H_
#define RILL_GRAPH_GRAPH_H_

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/node_def_util.h"
#include "graph/op_registry.h"
#include "graph/proto/graph.pb.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace rill {

class Node;
class Tensor;

struct Edge {
  Node* src;
  int src_output;  // kControlSlot for a control edge.
  Node* dst;
  int dst_input;   // kControlSlot for a control edge.
  bool IsControl() const { return src_output == kControlSlot; }
};

class Node {
 public:
  int id() const { return id_; }
  const std::string& name() const { return def_.name(); }
  const std::string& op() const { return def_.op(); }
  const std::string& requested_device() const { return def_.device(); }
  // The NodeDef with defaults filled and inputs as given.
  const NodeDef& def() const { return def_; }
  const OpRegistration& op_registration() const { return *op_; }
  const OpDef& op_def() const { return op_->op_def; }

  int num_inputs() const { return static_cast<int>(signature_.input_types.size()); }
  int num_outputs() const { return static_cast<int>(signature_.output_types.size()); }
  DataType input_type(int i) const { return signature_.input_types[i]; }
  DataType output_type(int i) const { return signature_.output_types[i]; }
  const DataTypeVector& input_types() const { return signature_.input_types; }
  const DataTypeVector& output_types() const { return signature_.output_types; }
  const NodeSignature& signature() const { return signature_; }
  const PartialTensorShape& output_shape(int i) const { return output_shapes_[i]; }
  // The value of output 0 when known while building (Const nodes), else
  // nullptr.
  const Tensor* constant_value() const { return constant_value_.get(); }

  // Data edges indexed by input slot, then control edges. A Merge's input
  // from a NextIteration added after it (a loop's back edge) is null until
  // that node is added.
  const std::vector<const Edge*>& in_edges() const { return in_edges_; }
  const std::vector<const Edge*>& out_edges() const { return out_edges_; }
  // The edge feeding data input `i`. REQUIRES: 0 <= i < num_inputs().
  const Edge* input_edge(int i) const { return in_edges_[i]; }

 private:
  friend class Graph;
  Node() = default;

  int id_ = -1;
  NodeDef def_;
  const OpRegistration* op_ = nullptr;
  NodeSignature signature_;
  std::vector<PartialTensorShape> output_shapes_;
  std::shared_ptr<const Tensor> constant_value_;
  std::vector<const Edge*> in_edges_;
  std::vector<const Edge*> out_edges_;
};

// Thread safety: not synchronized; a finished Graph is safe to read from
// several threads.
class Graph {
 public:
  explicit Graph(const OpRegistry& registry);
  ~Graph();
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  const OpRegistry& registry() const { return registry_; }

  // Adds a node whose inputs (data and control) name nodes already in the
  // graph. Validates the name (syntax, uniqueness), the op, the attrs
  // (defaults are filled first), the number and types of inputs (a ref
  // input needs a ref output; a ref output may feed a value input), and
  // infers output shapes. Errors are INVALID_ARGUMENT (NOT_FOUND for an
  // unknown op) and start with "node 'NAME' (OP): ".
  // A loop's back edge is the one exception to "inputs already in the
  // graph": a Merge may name a node not added yet, which must then be a
  // NextIteration (checked when it is added). Until then the Merge's shape
  // ignores that input.
  absl::StatusOr<Node*> AddNode(NodeDef def);
  // INVALID_ARGUMENT naming every Merge input that still waits for its
  // NextIteration.
  absl::Status CheckBackEdgesResolved() const;
  // Makes data input `dst_input` of `dst` read `src`:`src_output` instead
  // (the NodeDef follows), as a loop builder closes its loop: the types
  // must be equal, and `src` must come before `dst` unless it is a
  // NextIteration feeding a Merge.
  absl::Status UpdateEdge(Node* src, int src_output, Node* dst, int dst_input);
  // Makes `dst` run after `src` (the NodeDef follows), even when `src` was
  // added later, as a loop's gradient orders what it saves per iteration.
  // The caller keeps the graph free of cycles other than loops.
  void AddControlEdge(Node* src, Node* dst);

  Node* FindNode(std::string_view name) const;
  int num_nodes() const { return static_cast<int>(nodes_.size()); }
  // In id order, which is a topological order once back edges (from a
  // NextIteration to a Merge) are left out.
  const std::vector<Node*>& nodes() const { return node_ptrs_; }

  VersionDef& versions() { return versions_; }
  const VersionDef& versions() const { return versions_; }
  FunctionDefLibrary& library() { return library_; }
  const FunctionDefLibrary& library() const { return library_; }

  // Nodes in id order; versions and library carried over.
  GraphDef ToGraphDef() const;

 private:
  const OpRegistry& registry_;
  std::vector<std::unique_ptr<Node>> nodes_;
  std::vector<Node*> node_ptrs_;
  std::vector<std::unique_ptr<Edge>> edges_;
  absl::flat_hash_map<std::string, Node*> by_name_;
  // Merge inputs naming a node not added yet, by that node's name.
  struct BackEdge {
    Node* merge;
    int input;
    int src_output;
  };
  absl::flat_hash_map<std::string, std::vector<BackEdge>> pending_back_edges_;
  absl::Status ResolveBackEdges(Node* src);
  VersionDef versions_;
  FunctionDefLibrary library_;
};

// Builds a Graph from `def`, validating every rule of Graph::AddNode plus:
// duplicate names, dangling inputs, control inputs before data inputs, and
// cycles other than loops (a cycle must pass from a NextIteration to a
// Merge; the message names the nodes on any other). Nodes may appear in
// any order in `def`. Never crashes on any input.
absl::StatusOr<std::unique_ptr<Graph>> ImportGraphDef(const GraphDef& def,
                                                      const OpRegistry& registry);

}  // namespace rill

#endif  // RILL_GRAPH_GRAPH_H_
