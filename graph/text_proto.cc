#include "graph/text_proto.h"

#include <climits>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/io/tokenizer.h"
#include "google/protobuf/io/zero_copy_stream_impl_lite.h"
#include "google/protobuf/text_format.h"

namespace rill {
namespace {

namespace pb = google::protobuf;

// As protobuf's binary recursion limit: the text parser recurses per
// nesting level and has no limit of its own.
constexpr int kMaxNesting = 100;

// Our protos mirror TensorFlow's in package "rill"; errors name them as
// TensorFlow's users know them ("tensorflow.NodeDef.AttrEntry").
std::string TensorFlowTypeNames(std::string text) {
  return absl::StrReplaceAll(text, {{"\"rill.", "\"tensorflow."}});
}

std::string TensorFlowTypeName(const pb::Message& message) {
  std::string name = message.GetTypeName();
  if (name.starts_with("rill.")) name.replace(0, 4, "tensorflow");
  return name;
}

// Keeps the first error; protobuf counts lines and columns from 0.
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!error_.empty()) return;
    error_ = absl::StrFormat("%d:%d: %s", line + 1, column + 1, TensorFlowTypeNames(message));
  }
  const std::string& error() const { return error_; }

 private:
  std::string error_;
};

// The path of the first proto3 string field in `message` that is not
// valid UTF-8 ("node[3].device"); empty when there is none.
std::string FirstInvalidUtf8Field(const pb::Message& message) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    const int n = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < n; ++i) {
      const std::string name =
          field->is_repeated() ? absl::StrFormat("%s[%d]", field->name(), i) : field->name();
      if (field->type() == pb::FieldDescriptor::TYPE_STRING &&
          field->file()->syntax() == pb::FileDescriptor::SYNTAX_PROTO3) {
        std::string scratch;
        const std::string& value =
            field->is_repeated()
                ? reflection->GetRepeatedStringReference(message, field, i, &scratch)
                : reflection->GetStringReference(message, field, &scratch);
        if (!IsValidUtf8(value)) return name;
      } else if (field->cpp_type() == pb::FieldDescriptor::CPPTYPE_MESSAGE) {
        const pb::Message& inner = field->is_repeated()
                                       ? reflection->GetRepeatedMessage(message, field, i)
                                       : reflection->GetMessage(message, field);
        if (std::string path = FirstInvalidUtf8Field(inner); !path.empty()) {
          return name + "." + path;
        }
      }
    }
  }
  return "";
}

}  // namespace

bool IsValidUtf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    int extra;
    uint32_t code;
    if (c < 0x80) {
      ++i;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      extra = 1, code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
      extra = 2, code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
      extra = 3, code = c & 0x07;
    } else {
      return false;
    }
    if (s.size() - i <= static_cast<size_t>(extra)) return false;
    for (int k = 1; k <= extra; ++k) {
      const auto cc = static_cast<unsigned char>(s[i + k]);
      if ((cc & 0xC0) != 0x80) return false;
      code = (code << 6) | (cc & 0x3F);
    }
    static constexpr uint32_t kMinCode[] = {0, 0x80, 0x800, 0x10000};
    if (code < kMinCode[extra] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) {
      return false;
    }
    i += extra + 1;
  }
  return true;
}

absl::Status ParseTextProto(std::string_view text, pb::Message* message,
                            std::string_view source) {
  if (text.size() > static_cast<size_t>(INT_MAX)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: text %s of %d bytes exceeds the protobuf limit of %d bytes",
                        std::string(source), TensorFlowTypeName(*message), text.size(), INT_MAX));
  }
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  parser.SetRecursionLimit(kMaxNesting);
  pb::io::ArrayInputStream stream(text.data(), static_cast<int>(text.size()));
  if (!parser.Parse(&stream, message)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s:%s", std::string(source),
        errors.error().empty() ? " malformed text " + TensorFlowTypeName(*message) : errors.error()));
  }
  // The text parser takes any bytes in a string ("\\377" too); the binary
  // parser refuses what is not UTF-8 in proto3.
  if (const std::string field = FirstInvalidUtf8Field(*message); !field.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: string field '%s' is not valid UTF-8", std::string(source), field));
  }
  return absl::OkStatus();
}

}  // namespace rill
