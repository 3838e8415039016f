// AttrValue helpers: building values (MakeAttr), naming a value's kind as
// an OpDef spells it, and compact summaries of values for messages.
#ifndef RILL_GRAPH_ATTR_VALUE_UTIL_H_
#define RILL_GRAPH_ATTR_VALUE_UTIL_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "graph/proto/attr_value.pb.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace rill {

// Builders for AttrValue.
AttrValue MakeAttr(int64_t i);
AttrValue MakeAttr(int i);
AttrValue MakeAttr(float f);
AttrValue MakeAttr(bool b);
AttrValue MakeAttr(std::string_view s);
AttrValue MakeAttr(const char* s);
AttrValue MakeAttr(DataType type);
AttrValue MakeAttr(const PartialTensorShape& shape);
AttrValue MakeAttr(const TensorProto& tensor);
AttrValue MakeAttr(const NameAttrList& func);
AttrValue MakeAttr(const std::vector<int64_t>& list);
AttrValue MakeAttr(const std::vector<int>& list);
AttrValue MakeAttr(const std::vector<float>& list);
AttrValue MakeAttr(const std::vector<std::string>& list);
AttrValue MakeAttr(const DataTypeVector& list);
AttrValue MakeAttr(const std::vector<PartialTensorShape>& list);
AttrValue MakeAttr(const std::vector<NameAttrList>& list);

// The kind of value an AttrValue holds, in OpDef spelling: "int",
// "list(int)", ... An empty list is reported as "list(...)"; it matches any
// list kind.
std::string AttrValueKind(const AttrValue& value);
// A compact text form for messages: "DT_FLOAT", "[1, 2]", "'SAME'".
std::string SummarizeAttrValue(const AttrValue& value);

// How messages show one type and one string of an attr, as
// SummarizeAttrValue does: "DT_FLOAT" ("DT_<99>" for a value outside the
// enum) and "'SAME'" (C-escaped).
std::string TypeEnumName(int type);
std::string QuoteAttrString(const std::string& s);

}  // namespace rill

#endif  // RILL_GRAPH_ATTR_VALUE_UTIL_H_
