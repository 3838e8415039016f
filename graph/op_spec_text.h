// The lexical pieces of TensorFlow's op spec syntax that OpDefBuilder
// parses: names, fixed types, quoted strings, bracketed lists and braced
// proto text.
#ifndef RILL_GRAPH_OP_SPEC_TEXT_H_
#define RILL_GRAPH_OP_SPEC_TEXT_H_

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "graph/types.h"

namespace rill::op_spec {

std::string_view Trim(std::string_view s);

// Arg names: [a-z][a-z0-9_]*.
bool IsArgName(std::string_view s);
// Attr names: [A-Za-z][A-Za-z0-9_]*.
bool IsAttrName(std::string_view s);
// Op names: [A-Z][A-Za-z0-9_]*, with a leading '_' for internal ops.
bool IsOpName(std::string_view s);

// A fixed type in TensorFlow's short spelling ("float", "int32"); nullopt
// for anything else, so that attr names like "T" are never taken as types.
std::optional<DataType> FixedType(std::string_view name);

// Splits on commas outside quotes and brackets: "'a,b', [1, 2]" has two
// elements. An all-blank input has none.
std::vector<std::string_view> SplitTopLevel(std::string_view s);

// The length of the bracketed prefix of `s` (which starts with a bracket);
// npos when unbalanced.
size_t BracketedLength(std::string_view s);

// 'text' or "text"; ParseQuoted unescapes the inside (C escapes).
bool IsQuoted(std::string_view s);
absl::StatusOr<std::string> ParseQuoted(std::string_view s);

// Parses "{ field: value ... }" as the text form of `message`.
absl::Status ParseBracedText(std::string_view s, google::protobuf::Message* message);

}  // namespace rill::op_spec

#endif  // RILL_GRAPH_OP_SPEC_TEXT_H_
