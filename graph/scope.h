// Scope: the graph-building context of the C++ API. It carries the graph
// under construction, the name prefix, the device and control dependencies
// for new ops, and the first error, which ToGraphDef() reports.
#ifndef RILL_GRAPH_SCOPE_H_
#define RILL_GRAPH_SCOPE_H_

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/op_registry.h"
#include "graph/proto/graph.pb.h"

namespace rill {

// An op in the graph (null after a building error).
class Operation {
 public:
  Operation() = default;
  explicit Operation(Node* node) : node_(node) {}
  Node* node() const { return node_; }
  const std::string& name() const;  // "" when null.
  bool ok() const { return node_ != nullptr; }

 private:
  Node* node_ = nullptr;
};

// One output of an op (null after a building error).
class Output {
 public:
  Output() = default;
  Output(Node* node, int index) : op_(node), index_(index) {}
  Output(const Operation& op, int index) : op_(op), index_(index) {}
  Node* node() const { return op_.node(); }
  const Operation& op() const { return op_; }
  int index() const { return index_; }
  bool ok() const { return op_.ok(); }
  DataType type() const;                       // DT_INVALID when null.
  const PartialTensorShape& shape() const;     // Unknown when null.
  std::string name() const;                    // "node", "node:1".

 private:
  Operation op_;
  int index_ = 0;
};

using OutputList = std::vector<Output>;

// Whether `output` names an output its node has (a builder callback may
// return a null one, or one with an index out of range).
bool IsValidOutput(const Output& output);

// Scopes are cheap values; children share the graph and the error state of
// their root. Thread safety: not synchronized; build a graph from one
// thread.
class Scope {
 public:
  static Scope NewRootScope(const OpRegistry& registry);

  // Ops created in the child are named "parent/child/Op"; a child name that
  // is already taken gets a suffix ("dense_1"), as in TensorFlow.
  Scope NewSubScope(std::string_view child_scope_name) const;
  // The next op gets exactly this name (under the scope's prefix), made
  // unique with a suffix when taken.
  Scope WithOpName(std::string_view name) const;
  // Nested device scopes merge like tf.device: fields set here win, the
  // rest are inherited. A malformed name is recorded as the scope's error.
  Scope WithDevice(std::string_view device) const;
  // Ops created in the result run after `deps` (added to the outer ones).
  Scope WithControlDependencies(absl::Span<const Operation> deps) const;
  Scope WithControlDependencies(const Output& dep) const;
  Scope WithNoControlDependencies() const;
  // Ops created in the result are placed with `op`, as tf.colocate_with
  // places them: a `_class` attr names op's colocation groups (its own
  // "loc:@" entries, else "loc:@NAME"; nested calls add up), and the device
  // scopes around give way: the new op takes op's device (the innermost
  // target's that has one), and without one only a WithDevice inside
  // applies. An accumulator goes beside its variable, wherever the placer
  // or a device setter puts that.
  Scope ColocateWith(const Operation& op) const;
  // As ColocateWith, but the groups of the scopes around are dropped (as
  // tf.colocate_with(op, ignore_existing=True)): an update goes with its
  // variable even when built beside another op.
  Scope ColocateOnlyWith(const Operation& op) const;

  // What a control-flow builder does with the inputs that ops built inside
  // it take from outside: a loop's body reads them through an Enter into
  // its frame, a cond's branch through a Switch on its predicate. The
  // mapper returns what the op reads instead; a mapper added inside
  // another runs first, and the outer one then maps its result.
  using InputMapper = std::function<Output(const Output&)>;
  Scope WithInputMapper(InputMapper mapper) const;
  // The scope without any mapper (to build outside the builders again).
  Scope WithoutInputMapper() const;
  // `input` as ops built in this scope read it (itself without a mapper).
  Output MapInput(const Output& input) const;

  // A fresh name for an op whose default name is `default_name` ("MatMul",
  // "MatMul_1", ...), or the WithOpName name.
  std::string GetUniqueNameForOp(std::string_view default_name) const;

  Graph* graph() const;
  const OpRegistry& registry() const;
  const std::string& device() const;     // Canonical merged device, may be "".
  const std::vector<Operation>& control_deps() const;
  const std::string& name_prefix() const;  // "dense/" or "" at the root.
  // The colocation groups new ops join ("loc:@w"), from ColocateWith.
  const std::vector<std::string>& colocation_groups() const { return colocation_groups_; }
  // The device new ops take: their colocation target's, else device().
  const std::string& op_device() const {
    return colocation_device_.empty() ? device_ : colocation_device_;
  }

  bool ok() const;
  absl::Status status() const;
  // Keeps the first error.
  void UpdateStatus(absl::Status status) const;

  // The graph built so far, or the first building error.
  absl::StatusOr<GraphDef> ToGraphDef() const;

  // Called by the Variable helper so that GlobalVariablesInitializer finds
  // every initializer created in any scope of the root.
  void RegisterInitializer(const Operation& initializer) const;
  std::vector<Operation> Initializers() const;

 private:
  struct Shared;
  explicit Scope(std::shared_ptr<Shared> shared);

  std::shared_ptr<Shared> shared_;
  std::string name_prefix_;
  std::string op_name_;  // From WithOpName, else empty.
  std::string device_;
  std::vector<std::string> colocation_groups_;
  std::string colocation_device_;
  std::vector<Operation> control_deps_;
  std::shared_ptr<const InputMapper> input_mapper_;
};

}  // namespace rill

#endif  // RILL_GRAPH_SCOPE_H_
