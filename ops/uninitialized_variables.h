// ReportUninitializedVariables: an op that lists the variables not yet
// initialized, as TensorFlow 1.x's tf.report_uninitialized_variables.
//
// A supervised session runs it to tell whether a model is ready: before
// the initializers it names every variable; once they ran, it is empty.
// For variables w (ref) and h (resource) the ops are, under the scope:
//   report_uninitialized_variables/IsVariableInitialized   on w's device
//   report_uninitialized_variables/VarIsInitializedOp      on h's device
//   report_uninitialized_variables/stack                   Pack of the above
//   report_uninitialized_variables/LogicalNot
//   report_uninitialized_variables/Const                   ["w", "h"]
//   report_uninitialized_variables/boolean_mask/...        Reshape, Reshape_1,
//                                                          Where, Squeeze,
//                                                          GatherV2
// As TensorFlow does, everything after the checks goes to the CPU of the
// scope's device (the names are strings; a /gpu:0 scope gives /cpu:0);
// without a device the placer completes it from the client's default
// device, which is where the result is fetched.
#ifndef RILL_OPS_UNINITIALIZED_VARIABLES_H_
#define RILL_OPS_UNINITIALIZED_VARIABLES_H_

#include <initializer_list>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/scope.h"
#include "ops/variable.h"

namespace rill {

// A 1-D string tensor of the names of the variables in `var_list` that are
// not initialized, in list order; empty when all are. Each entry is the ref
// output of a variable node (VariableV2, Variable: checked with
// IsVariableInitialized) or a resource handle (VarHandleOp: checked with
// VarIsInitializedOp); the name reported is its node's. An empty list gives
// an empty constant. INVALID_ARGUMENT names an entry that is null or
// neither a reference nor a handle (a Variable's read, for one: pass the
// Variable itself or its ref()); an earlier error of `scope` is returned
// as is.
absl::StatusOr<Output> ReportUninitializedVariables(const Scope& scope,
                                                    absl::Span<const Output> var_list);
// The same for Variables (their refs).
absl::StatusOr<Output> ReportUninitializedVariables(const Scope& scope,
                                                    absl::Span<const Variable> var_list);
// So that a braced list of Variables, {w, b}, picks the overload above
// rather than converting each Variable to its read.
absl::StatusOr<Output> ReportUninitializedVariables(const Scope& scope,
                                                    std::initializer_list<Variable> var_list);

// Every variable in `scope`'s graph, in node order: output 0 of each
// Variable, VariableV2 and VarHandleOp node. TensorFlow's default var_list
// is its global and local variables; a graph here keeps no collections, so
// this is every variable, slots and optimizer state included.
std::vector<Output> AllVariables(const Scope& scope);

}  // namespace rill

#endif  // RILL_OPS_UNINITIALIZED_VARIABLES_H_
