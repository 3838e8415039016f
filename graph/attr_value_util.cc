// Building, naming and summarizing AttrValues.
#include "graph/attr_value_util.h"

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"

namespace rill {
namespace {

std::string ShapeSummary(const TensorShapeProto& shape) {
  if (shape.unknown_rank()) return "<unknown>";
  std::vector<std::string> dims;
  for (const auto& dim : shape.dim()) {
    dims.push_back(dim.size() < 0 ? "?" : absl::StrFormat("%d", dim.size()));
  }
  return absl::StrFormat("[%s]", absl::StrJoin(dims, ","));
}

std::string TensorSummary(const TensorProto& tensor) {
  return absl::StrFormat("<tensor %s %s>", DataTypeString(tensor.dtype()),
                         ShapeSummary(tensor.tensor_shape()));
}

template <typename Container, typename Fn>
std::string JoinList(const Container& items, Fn&& fn) {
  std::vector<std::string> parts;
  for (const auto& item : items) parts.push_back(fn(item));
  return absl::StrFormat("[%s]", absl::StrJoin(parts, ", "));
}

}  // namespace

std::string TypeEnumName(int type) {
  if (!DataType_IsValid(type)) return absl::StrFormat("DT_<%d>", type);
  return DataType_Name(static_cast<DataType>(type));
}

std::string QuoteAttrString(const std::string& s) {
  return absl::StrFormat("'%s'", absl::CEscape(s));
}

AttrValue MakeAttr(int64_t i) {
  AttrValue v;
  v.set_i(i);
  return v;
}

AttrValue MakeAttr(int i) { return MakeAttr(static_cast<int64_t>(i)); }

AttrValue MakeAttr(float f) {
  AttrValue v;
  v.set_f(f);
  return v;
}

AttrValue MakeAttr(bool b) {
  AttrValue v;
  v.set_b(b);
  return v;
}

AttrValue MakeAttr(std::string_view s) {
  AttrValue v;
  v.set_s(std::string(s));
  return v;
}

AttrValue MakeAttr(const char* s) { return MakeAttr(std::string_view(s)); }

AttrValue MakeAttr(DataType type) {
  AttrValue v;
  v.set_type(type);
  return v;
}

AttrValue MakeAttr(const PartialTensorShape& shape) {
  AttrValue v;
  shape.AsProto(v.mutable_shape());
  return v;
}

AttrValue MakeAttr(const TensorProto& tensor) {
  AttrValue v;
  *v.mutable_tensor() = tensor;
  return v;
}

AttrValue MakeAttr(const NameAttrList& func) {
  AttrValue v;
  *v.mutable_func() = func;
  return v;
}

AttrValue MakeAttr(const std::vector<int64_t>& list) {
  AttrValue v;
  auto* out = v.mutable_list();
  for (int64_t i : list) out->add_i(i);
  return v;
}

AttrValue MakeAttr(const std::vector<int>& list) {
  return MakeAttr(std::vector<int64_t>(list.begin(), list.end()));
}

AttrValue MakeAttr(const std::vector<float>& list) {
  AttrValue v;
  auto* out = v.mutable_list();
  for (float f : list) out->add_f(f);
  return v;
}

AttrValue MakeAttr(const std::vector<std::string>& list) {
  AttrValue v;
  auto* out = v.mutable_list();
  for (const std::string& s : list) out->add_s(s);
  return v;
}

AttrValue MakeAttr(const DataTypeVector& list) {
  AttrValue v;
  auto* out = v.mutable_list();
  for (DataType t : list) out->add_type(t);
  return v;
}

AttrValue MakeAttr(const std::vector<PartialTensorShape>& list) {
  AttrValue v;
  auto* out = v.mutable_list();
  for (const PartialTensorShape& shape : list) shape.AsProto(out->add_shape());
  return v;
}

AttrValue MakeAttr(const std::vector<NameAttrList>& list) {
  AttrValue v;
  auto* out = v.mutable_list();
  for (const NameAttrList& func : list) *out->add_func() = func;
  return v;
}

std::string AttrValueKind(const AttrValue& value) {
  switch (value.value_case()) {
    case AttrValue::kS:
      return "string";
    case AttrValue::kI:
      return "int";
    case AttrValue::kF:
      return "float";
    case AttrValue::kB:
      return "bool";
    case AttrValue::kType:
      return "type";
    case AttrValue::kShape:
      return "shape";
    case AttrValue::kTensor:
      return "tensor";
    case AttrValue::kFunc:
      return "func";
    case AttrValue::kPlaceholder:
      return "placeholder";
    case AttrValue::kList:
      break;
    case AttrValue::VALUE_NOT_SET:
      return "unset";
  }
  const AttrValue::ListValue& list = value.list();
  if (list.s_size() > 0) return "list(string)";
  if (list.i_size() > 0) return "list(int)";
  if (list.f_size() > 0) return "list(float)";
  if (list.b_size() > 0) return "list(bool)";
  if (list.type_size() > 0) return "list(type)";
  if (list.shape_size() > 0) return "list(shape)";
  if (list.tensor_size() > 0) return "list(tensor)";
  if (list.func_size() > 0) return "list(func)";
  return "list(...)";
}

std::string SummarizeAttrValue(const AttrValue& value) {
  switch (value.value_case()) {
    case AttrValue::kS:
      return QuoteAttrString(value.s());
    case AttrValue::kI:
      return absl::StrFormat("%d", value.i());
    case AttrValue::kF:
      return absl::StrFormat("%g", value.f());
    case AttrValue::kB:
      return value.b() ? "true" : "false";
    case AttrValue::kType:
      return TypeEnumName(value.type());
    case AttrValue::kShape:
      return ShapeSummary(value.shape());
    case AttrValue::kTensor:
      return TensorSummary(value.tensor());
    case AttrValue::kFunc:
      return value.func().name();
    case AttrValue::kPlaceholder:
      return absl::StrFormat("$%s", value.placeholder());
    case AttrValue::kList:
      break;
    case AttrValue::VALUE_NOT_SET:
      return "<unset>";
  }
  const AttrValue::ListValue& list = value.list();
  if (list.s_size() > 0) return JoinList(list.s(), QuoteAttrString);
  if (list.i_size() > 0)
    return JoinList(list.i(), [](int64_t i) { return absl::StrFormat("%d", i); });
  if (list.f_size() > 0)
    return JoinList(list.f(), [](float f) { return absl::StrFormat("%g", f); });
  if (list.b_size() > 0) return JoinList(list.b(), [](bool b) { return b ? "true" : "false"; });
  if (list.type_size() > 0) return JoinList(list.type(), TypeEnumName);
  if (list.shape_size() > 0) return JoinList(list.shape(), ShapeSummary);
  if (list.tensor_size() > 0) return JoinList(list.tensor(), TensorSummary);
  return JoinList(list.func(), [](const NameAttrList& f) { return f.name(); });
}

}  // namespace rill
