// Expands an op's args into a node's flat input and output types.
#include "graph/node_signature.h"

#include <cstdint>

#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// N of an "N * T" arg comes from the graph, so it is bounded before it
// sizes a vector.
constexpr int64_t kMaxArgListLength = 1'000'000;

// Appends the flat types of one arg to `types` and returns its slot range.
absl::StatusOr<std::pair<int, int>> ExpandArg(const NodeDef& node, const OpDef::ArgDef& arg,
                                              DataTypeVector* types) {
  const int begin = static_cast<int>(types->size());
  const auto single_type = [&]() -> absl::StatusOr<DataType> {
    if (!arg.type_attr().empty()) return GetTypeAttr(node, arg.type_attr());
    if (arg.type() == DT_INVALID) {
      return absl::InvalidArgumentError(
          absl::StrFormat("arg '%s' of op '%s' has no type", arg.name(), node.op()));
    }
    return arg.type();
  };
  if (!arg.number_attr().empty()) {
    ASSIGN_OR_RETURN(const int64_t n, GetIntAttr(node, arg.number_attr()));
    if (n < 0 || n > kMaxArgListLength) {
      return absl::InvalidArgumentError(
          absl::StrFormat("attr '%s' value %d must be in [0, %d] for arg '%s'", arg.number_attr(),
                          n, kMaxArgListLength, arg.name()));
    }
    ASSIGN_OR_RETURN(const DataType type, single_type());
    types->insert(types->end(), n, type);
  } else if (!arg.type_list_attr().empty()) {
    ASSIGN_OR_RETURN(const DataTypeVector list, GetTypeListAttr(node, arg.type_list_attr()));
    types->insert(types->end(), list.begin(), list.end());
  } else {
    ASSIGN_OR_RETURN(const DataType type, single_type());
    types->push_back(type);
  }
  for (size_t i = begin; i < types->size(); ++i) {
    if (IsRefType((*types)[i]) && !arg.is_ref()) {
      return absl::InvalidArgumentError(absl::StrFormat("arg '%s' has reference type %s",
                                                        arg.name(), DataTypeString((*types)[i])));
    }
    if (arg.is_ref()) (*types)[i] = MakeRefType((*types)[i]);
  }
  return std::pair<int, int>(begin, static_cast<int>(types->size()));
}

}  // namespace

absl::StatusOr<NodeSignature> ComputeNodeSignature(const NodeDef& node, const OpDef& op_def) {
  NodeSignature signature;
  for (const OpDef::ArgDef& arg : op_def.input_arg()) {
    ASSIGN_OR_RETURN(auto range, ExpandArg(node, arg, &signature.input_types));
    signature.input_arg_ranges.push_back(range);
  }
  for (const OpDef::ArgDef& arg : op_def.output_arg()) {
    ASSIGN_OR_RETURN(auto range, ExpandArg(node, arg, &signature.output_types));
    signature.output_arg_ranges.push_back(range);
  }
  return signature;
}

}  // namespace rill
