// Typed access to a node's attrs, defaults, and validation against its OpDef.
#include "graph/node_attrs.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/attr_value_util.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

absl::StatusOr<const AttrValue*> FindAttrOfKind(const NodeDef& node, std::string_view name,
                                                std::string_view kind) {
  const auto it = node.attr().find(std::string(name));
  if (it == node.attr().end()) {
    return absl::NotFoundError(absl::StrFormat("attr '%s' not found", name));
  }
  const std::string have = AttrValueKind(it->second);
  if (have != kind && !(have == "list(...)" && kind.starts_with("list("))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("attr '%s' has kind '%s', expected '%s'", name, have, kind));
  }
  return &it->second;
}

int64_t ListLength(const AttrValue::ListValue& list) {
  return list.s_size() + list.i_size() + list.f_size() + list.b_size() + list.type_size() +
         list.shape_size() + list.tensor_size() + list.func_size();
}

absl::Status CheckTypeValue(std::string_view name, int type) {
  if (!DataType_IsValid(type) || type == DT_INVALID) {
    return absl::InvalidArgumentError(
        absl::StrFormat("attr '%s' holds an invalid type %s", name, TypeEnumName(type)));
  }
  if (IsRefType(static_cast<DataType>(type))) {
    return absl::InvalidArgumentError(
        absl::StrFormat("attr '%s' value %s is a reference type; type attrs hold base types", name,
                        TypeEnumName(type)));
  }
  return absl::OkStatus();
}

absl::Status CheckAllowedValues(const OpDef::AttrDef& attr_def, const AttrValue& value) {
  const AttrValue::ListValue& allowed = attr_def.allowed_values().list();
  for (int type : value.has_type()
                      ? std::vector<int>{value.type()}
                      : std::vector<int>(value.list().type().begin(), value.list().type().end())) {
    bool ok = false;
    for (int a : allowed.type()) ok = ok || a == type;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "attr '%s' value %s is not in the list of allowed values: %s", attr_def.name(),
          TypeEnumName(type), absl::StrJoin(allowed.type(), ", ", [](std::string* out, int t) {
            out->append(DataTypeString(static_cast<DataType>(t)));
          })));
    }
  }
  for (const std::string& s :
       value.has_s() ? std::vector<std::string>{value.s()}
                     : std::vector<std::string>(value.list().s().begin(), value.list().s().end())) {
    bool ok = false;
    for (const std::string& a : allowed.s()) ok = ok || a == s;
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "attr '%s' value %s is not in the list of allowed values: %s", attr_def.name(),
          QuoteAttrString(s),
          absl::StrJoin(allowed.s(), ", ", [](std::string* out, const std::string& a) {
            out->append(QuoteAttrString(a));
          })));
    }
  }
  return absl::OkStatus();
}

absl::Status ValidateAttr(const OpDef::AttrDef& attr_def, const AttrValue& value) {
  const std::string& name = attr_def.name();
  const std::string kind = AttrValueKind(value);
  const bool is_list = attr_def.type().starts_with("list(");
  if (kind != attr_def.type() && !(kind == "list(...)" && is_list)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("attr '%s' has kind '%s', expected '%s'", name, kind, attr_def.type()));
  }
  if (value.has_type()) RETURN_IF_ERROR(CheckTypeValue(name, value.type()));
  for (int type : value.list().type()) RETURN_IF_ERROR(CheckTypeValue(name, type));
  if (attr_def.has_allowed_values()) RETURN_IF_ERROR(CheckAllowedValues(attr_def, value));
  if (attr_def.has_minimum()) {
    if (is_list && ListLength(value.list()) < attr_def.minimum()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("attr '%s' has %d values, fewer than the minimum %d", name,
                          ListLength(value.list()), attr_def.minimum()));
    }
    if (!is_list && value.i() < attr_def.minimum()) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "attr '%s' value %d is less than the minimum %d", name, value.i(), attr_def.minimum()));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<int64_t> GetIntAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "int"));
  return v->i();
}

absl::StatusOr<float> GetFloatAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "float"));
  return v->f();
}

absl::StatusOr<bool> GetBoolAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "bool"));
  return v->b();
}

absl::StatusOr<std::string> GetStringAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "string"));
  return v->s();
}

absl::StatusOr<DataType> GetTypeAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "type"));
  return v->type();
}

absl::StatusOr<PartialTensorShape> GetShapeAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "shape"));
  absl::StatusOr<PartialTensorShape> shape = PartialTensorShape::FromProto(v->shape());
  if (!shape.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("attr '%s': %s", name, shape.status().message()));
  }
  return shape;
}

absl::StatusOr<const TensorProto*> GetTensorAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "tensor"));
  return &v->tensor();
}

absl::StatusOr<std::vector<int64_t>> GetIntListAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "list(int)"));
  return std::vector<int64_t>(v->list().i().begin(), v->list().i().end());
}

absl::StatusOr<std::vector<std::string>> GetStringListAttr(const NodeDef& node,
                                                           std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "list(string)"));
  return std::vector<std::string>(v->list().s().begin(), v->list().s().end());
}

absl::StatusOr<DataTypeVector> GetTypeListAttr(const NodeDef& node, std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "list(type)"));
  DataTypeVector types;
  for (int t : v->list().type()) types.push_back(static_cast<DataType>(t));
  return types;
}

absl::StatusOr<std::vector<PartialTensorShape>> GetShapeListAttr(const NodeDef& node,
                                                                 std::string_view name) {
  ASSIGN_OR_RETURN(const AttrValue* v, FindAttrOfKind(node, name, "list(shape)"));
  std::vector<PartialTensorShape> shapes;
  for (const TensorShapeProto& proto : v->list().shape()) {
    absl::StatusOr<PartialTensorShape> shape = PartialTensorShape::FromProto(proto);
    if (!shape.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("attr '%s': %s", name, shape.status().message()));
    }
    shapes.push_back(*std::move(shape));
  }
  return shapes;
}

void AddDefaultsToNodeDef(const OpDef& op_def, NodeDef* node) {
  auto& attrs = *node->mutable_attr();
  for (const OpDef::AttrDef& attr : op_def.attr()) {
    if (attr.has_default_value() && !attrs.contains(attr.name())) {
      attrs[attr.name()] = attr.default_value();
    }
  }
}

absl::Status ValidateNodeAttrs(const NodeDef& node, const OpDef& op_def) {
  for (const OpDef::AttrDef& attr_def : op_def.attr()) {
    const auto it = node.attr().find(attr_def.name());
    if (it == node.attr().end()) {
      return absl::InvalidArgumentError(absl::StrFormat("missing attr '%s'", attr_def.name()));
    }
    RETURN_IF_ERROR(ValidateAttr(attr_def, it->second));
  }
  for (const auto& [name, value] : node.attr()) {
    if (name.starts_with("_")) continue;
    bool declared = false;
    for (const OpDef::AttrDef& attr_def : op_def.attr())
      declared = declared || attr_def.name() == name;
    if (!declared) {
      return absl::InvalidArgumentError(
          absl::StrFormat("unknown attr '%s' for op '%s'", name, op_def.name()));
    }
  }
  return absl::OkStatus();
}

}  // namespace rill
