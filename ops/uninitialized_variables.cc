#include "ops/uninitialized_variables.h"

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_builder.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/standard_ops.h"

namespace rill {
namespace {

bool IsVariableOp(const Node& node) {
  return node.op() == "VariableV2" || node.op() == "Variable" || node.op() == "VarHandleOp";
}

absl::Status CheckVariable(const Output& variable, size_t index) {
  if (!variable.ok()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "report_uninitialized_variables: var_list[%d] is a null output (an earlier op failed)",
        index));
  }
  const DataType type = variable.type();
  if (IsRefType(type) || type == DT_RESOURCE) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "report_uninitialized_variables: var_list[%d] '%s' (%s) is %s, neither a variable's "
      "reference nor a resource handle; pass the Variable, its ref() or a VarHandleOp",
      index, variable.name(), variable.node()->op(), DataTypeString(type)));
}

// Whether `variable` is initialized, on its device. A reference input also
// asks to be colocated with the variable, as TensorFlow's graphs do.
Output IsInitialized(const Scope& scope, const Output& variable) {
  const Node& node = *variable.node();
  const Scope on_device = scope.WithDevice(node.requested_device());
  if (variable.type() == DT_RESOURCE) return ops::VarIsInitializedOp(on_device, variable);
  const Operation check =
      NodeBuilder(on_device, "IsVariableInitialized")
          .Input(variable)
          .Attr("_class", MakeAttr(std::vector<std::string>{"loc:@" + node.name()}))
          .Finalize();
  return check.ok() ? Output(check, 0) : Output();
}

// TensorFlow's boolean_mask(tensor, mask) for a 1-D tensor and mask. Its
// reshapes only flatten here (both are vectors already); they are kept so
// that the nodes have TensorFlow's names.
Output BooleanMask(const Scope& outer, const Output& tensor, const Output& mask, int64_t size) {
  const Scope scope = outer.NewSubScope("boolean_mask");
  const ops::Const tensor_shape(scope.WithOpName("Reshape/shape"),
                                Tensor::FromVector<int32_t>({static_cast<int32_t>(size)}, {1}),
                                DT_INT32);
  const ops::Reshape flat_tensor(scope.WithOpName("Reshape"), tensor, tensor_shape);
  const ops::Const mask_shape(scope.WithOpName("Reshape_1/shape"),
                              Tensor::FromVector<int32_t>({-1}, {1}), DT_INT32);
  const ops::Reshape flat_mask(scope.WithOpName("Reshape_1"), mask, mask_shape);
  const ops::Where where(scope.WithOpName("Where"), flat_mask);
  const ops::Squeeze indices(scope.WithOpName("Squeeze"), where, ops::Squeeze::SqueezeDims({1}));
  const ops::Const axis(scope.WithOpName("GatherV2/axis"), Tensor::Scalar<int32_t>(0), DT_INT32);
  const ops::GatherV2 gather(scope.WithOpName("GatherV2"), flat_tensor, indices, axis);
  return gather;
}

}  // namespace

absl::StatusOr<Output> ReportUninitializedVariables(const Scope& outer,
                                                    absl::Span<const Output> var_list) {
  RETURN_IF_ERROR(outer.status());
  for (size_t i = 0; i < var_list.size(); ++i) RETURN_IF_ERROR(CheckVariable(var_list[i], i));
  const Scope scope = outer.NewSubScope("report_uninitialized_variables");
  const int64_t n = static_cast<int64_t>(var_list.size());
  Tensor names(DT_STRING, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) names.data<std::string>()[i] = var_list[i].node()->name();
  // Nothing to check (Pack needs an input): the empty list as a constant.
  if (n == 0) {
    const ops::Const empty(scope.WithOpName("Const"), names, DT_STRING);
    RETURN_IF_ERROR(scope.status());
    return empty.output;
  }

  std::vector<Output> initialized;
  for (const Output& variable : var_list) initialized.push_back(IsInitialized(scope, variable));
  // As TensorFlow: the names are strings, which only a CPU gathers.
  const Scope on_cpu = scope.WithDevice("/device:CPU:0");
  const ops::Pack stack(on_cpu.WithOpName("stack"), initialized);
  const ops::LogicalNot uninitialized(on_cpu.WithOpName("LogicalNot"), stack);
  const ops::Const names_const(on_cpu.WithOpName("Const"), names, DT_STRING);
  const Output result = BooleanMask(on_cpu, names_const, uninitialized, n);
  RETURN_IF_ERROR(scope.status());
  return result;
}

absl::StatusOr<Output> ReportUninitializedVariables(const Scope& scope,
                                                    absl::Span<const Variable> var_list) {
  std::vector<Output> refs;
  refs.reserve(var_list.size());
  for (const Variable& variable : var_list) refs.push_back(variable.ref());
  return ReportUninitializedVariables(scope, refs);
}

absl::StatusOr<Output> ReportUninitializedVariables(const Scope& scope,
                                                    std::initializer_list<Variable> var_list) {
  return ReportUninitializedVariables(scope,
                                      absl::MakeConstSpan(var_list.begin(), var_list.size()));
}

std::vector<Output> AllVariables(const Scope& scope) {
  std::vector<Output> variables;
  for (Node* node : scope.graph()->nodes()) {
    if (IsVariableOp(*node)) variables.emplace_back(node, 0);
  }
  return variables;
}

}  // namespace rill
