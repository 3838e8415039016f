// A pull reader of JSON that takes its input a chunk at a time and keeps
// only the stack of open containers: bounded memory and linear work on any input.
#ifndef RILL_CLI_JSON_PULL_READER_H_
#define RILL_CLI_JSON_PULL_READER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill::cli {

enum class JsonToken {
  kBeginObject,
  kEndObject,
  kBeginArray,
  kEndArray,
  kKey,  // An object's key; its value comes next.
  kString,
  kNumber,
  kTrue,
  kFalse,
  kNull,
  kEnd,  // The input is over and held exactly one JSON value.
};

struct JsonReaderLimits {
  // Containers open at once. Deeper input is RESOURCE_EXHAUSTED rather
  // than read: nothing a trace needs nests deeply.
  size_t max_depth = 64;
  // What text() keeps of a string or key; the rest is read and dropped.
  size_t max_string_bytes = 256;
};

// Reads tokens one at a time and checks the grammar as it goes: every
// error (INVALID_ARGUMENT) names the byte offset where the input went
// wrong. Nothing is kept of a value once the next token is read.
// Thread safety: none.
class JsonPullReader {
 public:
  // Fills `dst` with up to `n` bytes and returns how many; 0 at the end.
  using Source = std::function<absl::StatusOr<size_t>(char* dst, size_t n)>;

  JsonPullReader(Source source, JsonReaderLimits limits);
  // Over `json`, which must outlive the reader.
  JsonPullReader(std::string_view json, JsonReaderLimits limits);

  absl::StatusOr<JsonToken> Next();

  // Having just read kBeginObject or kBeginArray: reads on past its end.
  // Any other token has nothing to skip.
  absl::Status SkipContainer();

  // Of the last kKey or kString: the text, unescaped, at most
  // max_string_bytes of it (truncated() tells); of kNumber: as written.
  const std::string& text() const { return text_; }
  bool truncated() const { return truncated_; }
  // Of the last kNumber; infinite when it overflows a double.
  double number() const { return number_; }

  // Containers open now.
  size_t depth() const { return stack_.size(); }
  // Bytes read so far.
  uint64_t offset() const { return consumed_ + pos_; }

 private:
  enum class Expect { kValue, kValueOrEnd, kKey, kKeyOrEnd, kColon, kCommaOrEnd, kAfterRoot };

  // The next byte without taking it; -1 at the end of the input (or on a
  // read error, left in error_).
  int Peek() {
    if (pos_ < len_) return static_cast<unsigned char>(data_[pos_]);
    return Fill() ? static_cast<unsigned char>(data_[pos_]) : -1;
  }
  bool Fill();
  absl::Status SkipWhitespace();
  absl::Status Error(std::string_view what) const;
  absl::Status ReadString();
  absl::Status ReadNumber();
  absl::Status ReadLiteral(std::string_view literal);
  absl::StatusOr<JsonToken> ReadValue(int c);
  // After a complete value: what may follow it.
  void ValueDone();
  void AppendText(char c);
  absl::Status AppendCodePoint();

  Source source_;
  const JsonReaderLimits limits_;
  std::string buffer_;          // Chunks from source_.
  const char* data_ = nullptr;  // buffer_'s bytes, or the whole input.
  size_t pos_ = 0, len_ = 0;
  uint64_t consumed_ = 0;  // Bytes before data_.
  bool at_end_ = false;
  absl::Status error_;  // Of the source.

  std::vector<char> stack_;  // '{' or '[' per open container.
  Expect expect_ = Expect::kValue;
  std::string text_;
  bool truncated_ = false;
  double number_ = 0;
};

}  // namespace rill::cli

#endif  // RILL_CLI_JSON_PULL_READER_H_
