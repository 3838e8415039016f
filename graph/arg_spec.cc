// Input and output arg specs of the op syntax, parsed into ArgDefs.
#include "graph/arg_spec.h"

#include <optional>
#include <string>

#include "absl/strings/str_format.h"
#include "graph/op_spec_text.h"
#include "graph/types.h"

namespace rill::op_spec {
namespace {

OpDef::AttrDef* FindAttr(OpDef* op_def, std::string_view name) {
  for (auto& attr : *op_def->mutable_attr()) {
    if (attr.name() == name) return &attr;
  }
  return nullptr;
}

}  // namespace

absl::Status ParseArgSpec(std::string_view spec, OpDef* op_def, OpDef::ArgDef* arg) {
  const size_t colon = spec.find(':');
  if (colon == std::string_view::npos) {
    return absl::InvalidArgumentError("expected 'name: type'");
  }
  const std::string_view name = Trim(spec.substr(0, colon));
  if (!IsArgName(name)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("invalid arg name '%s' (must match [a-z][a-z0-9_]*)", name));
  }
  arg->set_name(std::string(name));
  std::string_view type = Trim(spec.substr(colon + 1));
  if (type.starts_with("Ref(") && type.ends_with(")")) {
    arg->set_is_ref(true);
    type = Trim(type.substr(4, type.size() - 5));
  }
  const size_t star = type.find('*');
  if (star != std::string_view::npos) {
    const std::string_view number = Trim(type.substr(0, star));
    OpDef::AttrDef* n = FindAttr(op_def, number);
    if (n == nullptr)
      return absl::InvalidArgumentError(absl::StrFormat("unknown attr '%s'", number));
    if (n->type() != "int") {
      return absl::InvalidArgumentError(
          absl::StrFormat("attr '%s' has type '%s', expected 'int'", number, n->type()));
    }
    if (!n->has_minimum()) {
      n->set_has_minimum(true);
      n->set_minimum(1);
    } else if (n->minimum() < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("attr '%s' must have a minimum >= 0", number));
    }
    arg->set_number_attr(std::string(number));
    type = Trim(type.substr(star + 1));
  }
  if (const std::optional<DataType> fixed = FixedType(type)) {
    arg->set_type(*fixed);
    return absl::OkStatus();
  }
  const OpDef::AttrDef* attr = FindAttr(op_def, type);
  if (attr == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat("unknown type or attr '%s'", type));
  }
  if (attr->type() == "type") {
    arg->set_type_attr(std::string(type));
  } else if (attr->type() == "list(type)" && arg->number_attr().empty()) {
    arg->set_type_list_attr(std::string(type));
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("attr '%s' has type '%s', expected '%s'", type, attr->type(),
                        arg->number_attr().empty() ? "type' or 'list(type)" : "type"));
  }
  return absl::OkStatus();
}

}  // namespace rill::op_spec
