// Variable: a trainable value in the graph, as tf.Variable in TensorFlow
// 1.x: a VariableV2 node "w", its initializer "w/Assign" (the initial value
// assigned to it) and its read "w/read" (an Identity that the rest of the
// graph consumes); plus GlobalVariablesInitializer, the "init" op, and the
// slice of a larger variable that a part of a partitioned one holds.
#ifndef RILL_OPS_VARIABLE_H_
#define RILL_OPS_VARIABLE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/scope.h"
#include "ops/input.h"

namespace rill {

// Where a variable lies inside a larger one that checkpoints hold whole, as
// TensorFlow's Variable.SaveSliceInfo: a part of a partitioned variable, or
// an optimizer's slot for such a part.
struct SaveSliceInfo {
  std::string full_name;  // The checkpoint key: "hidden/weights".
  std::vector<int64_t> full_shape;
  std::vector<int64_t> var_offset;
  std::vector<int64_t> var_shape;

  // SaveV2's shape_and_slices entry, "784 128 0,392:0,128" (TensorFlow's
  // SaveSliceInfo.spec).
  std::string Spec() const;

  friend bool operator==(const SaveSliceInfo&, const SaveSliceInfo&) = default;
};

// The VariableV2 attr that records a SaveSliceInfo in the graph, so that a
// saver built from the graph's variables keys each part by its full name.
inline constexpr char kSaveSliceInfoAttr[] = "_save_slice_info";

// The SaveSliceInfo recorded on a variable node; nullopt for a whole
// variable. INVALID_ARGUMENT naming the node for a malformed attr.
absl::StatusOr<std::optional<SaveSliceInfo>> SaveSliceInfoOf(const Node& variable);

class Variable {
 public:
  // The dtype and shape come from `initial_value`, whose shape must be
  // fully known while building (a constant becomes the Const node
  // "w/initial_value"). The ops get the scope's device and none of its
  // control dependencies, so that the initializer can run first. The
  // initializer is registered with the scope. On error (recorded in the
  // scope) the Variable is null.
  //
  // With `save_slice_info`, the variable holds that slice of a larger one
  // (recorded in the VariableV2 node's kSaveSliceInfoAttr): INVALID_ARGUMENT
  // in the scope when the slice's shape is not the initial value's or
  // leaves the full shape.
  Variable(const Scope& scope, std::string_view name, const ops::Input& initial_value,
           std::optional<SaveSliceInfo> save_slice_info = std::nullopt);

  bool ok() const { return value_.ok(); }
  const std::string& name() const { return ref_.op().name(); }
  // The VariableV2 output, a reference (for Assign and the Apply* ops).
  const Output& ref() const { return ref_; }
  // The read, what computations take.
  const Output& value() const { return value_; }
  const Operation& initializer() const { return initializer_; }
  const std::optional<SaveSliceInfo>& save_slice_info() const { return save_slice_info_; }

  // A Variable stands for its value: ops::MatMul(scope, x, w).
  operator Output() const { return value_; }  // NOLINT

 private:
  Output ref_;
  Output value_;
  Operation initializer_;
  std::optional<SaveSliceInfo> save_slice_info_;
};

// A NoOp named "init" (under the scope's prefix) that runs after every
// initializer registered in `scope`'s root.
Operation GlobalVariablesInitializer(const Scope& scope);

}  // namespace rill

#endif  // RILL_OPS_VARIABLE_H_
