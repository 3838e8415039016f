#include "graph/graph_io.h"

#include <cerrno>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/coded_stream.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/unknown_field_set.h"
#include "graph/status_macros.h"
#include "graph/text_proto.h"

namespace rill {
namespace {

namespace pb = google::protobuf;

// As protobuf's default recursion limit, so that the walker agrees with the
// parser about what is too deep.
constexpr int kMaxNesting = 100;

const char* WireTypeName(int wire_type) {
  switch (wire_type) {
    case 0: return "varint";
    case 1: return "fixed64";
    case 2: return "length-delimited";
    case 3: return "start-group";
    case 4: return "end-group";
    case 5: return "fixed32";
    default: return "invalid";
  }
}

int ExpectedWireType(const pb::FieldDescriptor& field) {
  switch (field.type()) {
    case pb::FieldDescriptor::TYPE_FIXED64:
    case pb::FieldDescriptor::TYPE_SFIXED64:
    case pb::FieldDescriptor::TYPE_DOUBLE: return 1;
    case pb::FieldDescriptor::TYPE_FIXED32:
    case pb::FieldDescriptor::TYPE_SFIXED32:
    case pb::FieldDescriptor::TYPE_FLOAT: return 5;
    case pb::FieldDescriptor::TYPE_STRING:
    case pb::FieldDescriptor::TYPE_BYTES:
    case pb::FieldDescriptor::TYPE_MESSAGE: return 2;
    case pb::FieldDescriptor::TYPE_GROUP: return 3;
    default: return 0;
  }
}

// Walks the protobuf wire format of a GraphDef with the message schema in
// hand, to say where a parse failed: protobuf itself only says that it did.
// Nodes (top-level field 1) are counted so that the message can name the
// one holding the problem.
class WireWalker {
 public:
  explicit WireWalker(std::string_view bytes) : bytes_(bytes) {}

  // False at the first malformation; error() then describes it.
  bool Walk() {
    size_t pos = 0;
    return Message(pos, bytes_.size(), GraphDef::descriptor(), 0, 0);
  }
  // "at byte offset 12 (inside node #3 'x'): truncated varint".
  const std::string& error() const { return error_; }

  // The first top-level field GraphDef does not know, or knows with another
  // wire type ("field 1 ('node') with wire type varint, expected ...").
  const std::optional<std::pair<size_t, std::string>>& first_unknown_top_level() const {
    return first_unknown_;
  }

 private:
  bool Fail(size_t offset, const std::string& what) {
    std::string context;
    if (node_index_ >= 0) {
      context = absl::StrFormat(" (inside node #%d", node_index_);
      if (!node_name_.empty()) {
        absl::StrAppendFormat(&context, " '%s'", absl::CHexEscape(node_name_.substr(0, 64)));
      }
      context += ")";
    }
    error_ = absl::StrFormat("at byte offset %d%s: %s", offset, context, what);
    return false;
  }

  bool Varint(size_t& pos, size_t end, uint64_t* value) {
    const size_t start = pos;
    uint64_t result = 0;
    for (int i = 0; i < 10; ++i) {
      if (pos >= end) return Fail(start, "truncated varint");
      const auto byte = static_cast<unsigned char>(bytes_[pos++]);
      result |= static_cast<uint64_t>(byte & 0x7F) << (7 * i);
      if ((byte & 0x80) == 0) {
        *value = result;
        return true;
      }
    }
    return Fail(start, "varint longer than 10 bytes");
  }

  // Reads fields from `pos` up to `end`, or up to the end-group tag of
  // `group` when it is not 0. `type` is null for unknown (skipped) data.
  bool Message(size_t& pos, size_t end, const pb::Descriptor* type, int depth, int group) {
    while (pos < end) {
      const size_t tag_offset = pos;
      uint64_t tag = 0;
      if (!Varint(pos, end, &tag)) return false;
      if (tag > UINT32_MAX) return Fail(tag_offset, "tag does not fit in 32 bits");
      const int number = static_cast<int>(tag >> 3);
      const int wire_type = static_cast<int>(tag & 7);
      if (number == 0) return Fail(tag_offset, "invalid field number 0");
      const pb::FieldDescriptor* field = type ? type->FindFieldByNumber(number) : nullptr;
      if (depth == 0) NoteTopLevelField(tag_offset, number, wire_type, field);
      switch (wire_type) {
        case 0: {
          uint64_t ignored = 0;
          if (!Varint(pos, end, &ignored)) return false;
          break;
        }
        case 1:
        case 5: {
          const size_t size = wire_type == 1 ? 8 : 4;
          if (end - pos < size) {
            return Fail(tag_offset,
                        absl::StrFormat("%s field %d needs %d bytes but %d remain",
                                        WireTypeName(wire_type), number, size, end - pos));
          }
          pos += size;
          break;
        }
        case 2: {
          const bool is_node = depth == 0 && number == GraphDef::kNodeFieldNumber;
          if (is_node) {
            node_index_ = nodes_seen_++;
            node_name_.clear();
          }
          uint64_t length = 0;
          if (!Varint(pos, end, &length)) return false;
          if (length > end - pos) {
            return Fail(tag_offset,
                        absl::StrFormat("length-delimited field %d needs %d bytes but %d remain",
                                        number, length, end - pos));
          }
          const size_t payload_end = pos + length;
          if (field != nullptr && ExpectedWireType(*field) == 2) {
            if (!Payload(*field, tag_offset, pos, payload_end, depth)) return false;
            if (type == NodeDef::descriptor() && number == NodeDef::kNameFieldNumber) {
              node_name_ = std::string(bytes_.substr(pos, length));
            }
          } else if (field != nullptr && field->is_packable()) {
            if (!Packed(*field, tag_offset, pos, payload_end)) return false;
          }
          if (is_node) node_index_ = -1;
          pos = payload_end;
          break;
        }
        case 3: {
          if (depth >= kMaxNesting) {
            return Fail(tag_offset, absl::StrFormat("nesting deeper than %d levels", kMaxNesting));
          }
          if (!Message(pos, end, nullptr, depth + 1, number)) return false;
          break;
        }
        case 4:
          if (number == group) return true;
          return Fail(tag_offset, absl::StrFormat("unexpected end-group tag of field %d", number));
        default:
          return Fail(tag_offset,
                      absl::StrFormat("invalid wire type %d (field %d)", wire_type, number));
      }
    }
    if (group != 0) return Fail(pos, absl::StrFormat("group of field %d is not closed", group));
    return true;
  }

  bool Payload(const pb::FieldDescriptor& field, size_t tag_offset, size_t begin, size_t end,
               int depth) {
    if (field.type() == pb::FieldDescriptor::TYPE_MESSAGE) {
      if (depth >= kMaxNesting) {
        return Fail(tag_offset, absl::StrFormat("nesting deeper than %d levels", kMaxNesting));
      }
      size_t pos = begin;
      return Message(pos, end, field.message_type(), depth + 1, 0);
    }
    if (field.type() == pb::FieldDescriptor::TYPE_STRING &&
        !IsValidUtf8(bytes_.substr(begin, end - begin))) {
      return Fail(tag_offset, absl::StrFormat("string field %d ('%s') is not valid UTF-8",
                                              field.number(), field.name()));
    }
    return true;
  }

  bool Packed(const pb::FieldDescriptor& field, size_t tag_offset, size_t begin, size_t end) {
    const int wire_type = ExpectedWireType(field);
    if (wire_type == 0) {
      size_t pos = begin;
      uint64_t ignored = 0;
      while (pos < end) {
        if (!Varint(pos, end, &ignored)) return false;
      }
      return true;
    }
    const size_t size = wire_type == 1 ? 8 : 4;
    if ((end - begin) % size != 0) {
      return Fail(tag_offset,
                  absl::StrFormat("packed field %d holds %d bytes, not a multiple of %d",
                                  field.number(), end - begin, size));
    }
    return true;
  }

  void NoteTopLevelField(size_t offset, int number, int wire_type,
                         const pb::FieldDescriptor* field) {
    if (first_unknown_.has_value()) return;
    if (field == nullptr) {
      // TensorFlow's GraphDef.debug_info, which rill does not keep.
      if (number == 5 && wire_type == 2) return;
      first_unknown_.emplace(offset, absl::StrFormat("unknown field number %d", number));
    } else if (ExpectedWireType(*field) != wire_type && !(field->is_packable() && wire_type == 2)) {
      first_unknown_.emplace(
          offset,
          absl::StrFormat("field %d ('%s') with wire type %s, expected %s", number, field->name(),
                          WireTypeName(wire_type), WireTypeName(ExpectedWireType(*field))));
    }
  }

  std::string_view bytes_;
  int nodes_seen_ = 0;
  int node_index_ = -1;  // While inside a top-level node entry.
  std::string node_name_;
  std::string error_;
  std::optional<std::pair<size_t, std::string>> first_unknown_;
};

absl::StatusOr<GraphDef> ParseBinary(std::string_view bytes, std::string_view source) {
  if (bytes.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: binary GraphDef of %d bytes exceeds the protobuf limit of %d bytes",
                        source, bytes.size(), INT_MAX));
  }
  GraphDef graph;
  pb::io::ArrayInputStream stream(bytes.data(), static_cast<int>(bytes.size()));
  pb::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  const bool parsed = graph.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  WireWalker walker(bytes);
  if (!parsed) {
    if (!walker.Walk()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: malformed binary GraphDef %s", source, walker.error()));
    }
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: malformed binary GraphDef (the wire format is intact, but protobuf "
                        "rejected a value in it)",
                        source));
  }
  // Random bytes often parse into nothing but unknown fields; a real
  // GraphDef has none at its top level.
  if (graph.GetReflection()->GetUnknownFields(graph).field_count() > 0) {
    walker.Walk();
    if (const auto& unknown = walker.first_unknown_top_level(); unknown.has_value()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: not a GraphDef: %s at top level (byte offset %d)", source,
                          unknown->second, unknown->first));
    }
  }
  return graph;
}

absl::StatusOr<GraphDef> ParseText(std::string_view bytes, std::string_view source) {
  GraphDef graph;
  RETURN_IF_ERROR(ParseTextProto(bytes, &graph, source));
  return graph;
}

bool HasKnownFields(const pb::Message& message) {
  std::vector<const pb::FieldDescriptor*> fields;
  message.GetReflection()->ListFields(message, &fields);
  return !fields.empty();
}

}  // namespace

GraphFormat DetectGraphFormat(std::string_view bytes) {
  for (const char ch : bytes) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x08 || c == 0x0B || c == 0x0C || (c >= 0x0E && c <= 0x1F) || c == 0x7F) {
      return GraphFormat::kBinary;
    }
  }
  return GraphFormat::kText;
}

absl::StatusOr<GraphDef> ParseGraphDef(std::string_view bytes, GraphFormat format,
                                       std::string_view source) {
  if (bytes.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: file is empty", source));
  }
  ASSIGN_OR_RETURN(GraphDef graph, format == GraphFormat::kBinary ? ParseBinary(bytes, source)
                                                                  : ParseText(bytes, source));
  // Text of only whitespace and comments (or empty fields) holds nothing
  // either: written out in binary it would be an empty file. Unknown
  // fields do not count: the text form leaves them out.
  if (graph.node_size() == 0 && !HasKnownFields(graph.versions()) &&
      !HasKnownFields(graph.library())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: holds no graph (no nodes, versions or library)", source));
  }
  return graph;
}

absl::StatusOr<GraphDef> ReadGraphDef(const std::string& path) {
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "rb"),
                                                       &std::fclose);
  if (file == nullptr) {
    const int error = errno;
    const std::string message = absl::StrFormat("cannot open '%s': %s", path, std::strerror(error));
    if (error == ENOENT) return absl::NotFoundError(message);
    if (error == EACCES) return absl::PermissionDeniedError(message);
    return absl::InvalidArgumentError(message);
  }
  std::string bytes;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), file.get())) > 0) bytes.append(buffer, n);
  if (std::ferror(file.get())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot read '%s': %s", path, std::strerror(errno)));
  }
  file.reset();
  return ParseGraphDef(bytes, DetectGraphFormat(bytes), path);
}

std::string SerializeGraphDef(const GraphDef& graph, GraphFormat format) {
  std::string out;
  if (format == GraphFormat::kText) {
    pb::TextFormat::Printer printer;
    // Fields this build does not know (from a newer TensorFlow, or noise)
    // would print by number, which no text parser reads back.
    printer.SetHideUnknownFields(true);
    printer.PrintToString(graph, &out);
    return out;
  }
  {
    pb::io::StringOutputStream stream(&out);
    pb::io::CodedOutputStream coded(&stream);
    // Map entries (attrs) in key order, so equal graphs give equal bytes.
    coded.SetSerializationDeterministic(true);
    graph.SerializeToCodedStream(&coded);
  }
  return out;
}

absl::Status WriteGraphDef(const GraphDef& graph, const std::string& path, GraphFormat format) {
  const std::string bytes = SerializeGraphDef(graph, format);
  std::unique_ptr<std::FILE, int (*)(std::FILE*)> file(std::fopen(path.c_str(), "wb"),
                                                       &std::fclose);
  if (file == nullptr) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot open '%s' for writing: %s", path, std::strerror(errno)));
  }
  if (std::fwrite(bytes.data(), 1, bytes.size(), file.get()) != bytes.size() ||
      std::fclose(file.release()) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot write '%s': %s", path, std::strerror(errno)));
  }
  return absl::OkStatus();
}

GraphFormat FormatForPath(std::string_view path) {
  return path.ends_with(".pbtxt") || path.ends_with(".txt") ? GraphFormat::kText
                                                            : GraphFormat::kBinary;
}

}  // namespace rill
