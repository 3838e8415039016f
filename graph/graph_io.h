// Reading and writing GraphDefs as binary (.pb) or text (.pbtxt) protos,
// with errors that name the file and the place (line:column for text, byte
// offset for binary).
#ifndef RILL_GRAPH_GRAPH_IO_H_
#define RILL_GRAPH_GRAPH_IO_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/proto/graph.pb.h"

namespace rill {

enum class GraphFormat { kBinary, kText };

// Text when every byte is printable UTF-8 or whitespace (a binary GraphDef
// always holds tag bytes below 0x20 other than tab, CR, LF); else binary.
GraphFormat DetectGraphFormat(std::string_view bytes);

// Parses `bytes` (of any size protobuf can address; no 64 MiB cap) in the
// given format. `source` names the input in messages ("model.pb").
// INVALID_ARGUMENT for input that holds no graph: empty, or (in text) only
// whitespace, comments and empty fields.
absl::StatusOr<GraphDef> ParseGraphDef(std::string_view bytes, GraphFormat format,
                                       std::string_view source);

// Reads a file and parses it in the detected format. Errors: NOT_FOUND for a
// missing file, INVALID_ARGUMENT for an empty or malformed one.
absl::StatusOr<GraphDef> ReadGraphDef(const std::string& path);

// Text leaves out fields unknown to this build (binary keeps them): text
// names fields, and these have only a number.
std::string SerializeGraphDef(const GraphDef& graph, GraphFormat format);
absl::Status WriteGraphDef(const GraphDef& graph, const std::string& path, GraphFormat format);

// kText for ".pbtxt" and ".txt", else kBinary.
GraphFormat FormatForPath(std::string_view path);

}  // namespace rill

#endif  // RILL_GRAPH_GRAPH_IO_H_
