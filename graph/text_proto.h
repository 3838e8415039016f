// Parses protobuf text format with the first error as "line:col: what",
// instead of protobuf's own logging to stderr.
#ifndef RILL_GRAPH_TEXT_PROTO_H_
#define RILL_GRAPH_TEXT_PROTO_H_

#include <string_view>

#include "absl/status/status.h"
#include "google/protobuf/message.h"

namespace rill {

// INVALID_ARGUMENT "<source>:<line>:<col>: <what>" when `text` is not a
// `message` in text format. Nesting is limited as in binary parsing, and
// proto3 string fields must hold valid UTF-8 as there ("<source>: string
// field 'node[3].device' is not valid UTF-8"), so that what parses here
// also parses in its binary form.
absl::Status ParseTextProto(std::string_view text, google::protobuf::Message* message,
                            std::string_view source);

// Strict UTF-8 as proto3 requires of string fields: no overlong forms, no
// surrogates, nothing above U+10FFFF.
bool IsValidUtf8(std::string_view s);

}  // namespace rill

#endif  // RILL_GRAPH_TEXT_PROTO_H_
