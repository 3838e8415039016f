#include "cli/json_pull_reader.h"

#include <cmath>
#include <limits>
#include <utility>

#include "absl/strings/numbers.h"
#include "fmt/core.h"

namespace rill::cli {
namespace {

constexpr size_t kChunk = 1 << 16;
// A number's text past this is kept no longer: it cannot be a double
// anyone wrote on purpose.
constexpr size_t kMaxNumberText = 64;

std::string Printable(int c) {
  if (c < 0) return "the end of the input";
  if (c >= 0x20 && c < 0x7f) return fmt::format("'{}'", static_cast<char>(c));
  return fmt::format("byte 0x{:02x}", c);
}

int HexDigit(int c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool IsDigit(int c) { return c >= '0' && c <= '9'; }

}  // namespace

JsonPullReader::JsonPullReader(Source source, JsonReaderLimits limits)
    : source_(std::move(source)), limits_(limits), buffer_(kChunk, '\0') {
  data_ = buffer_.data();
}

JsonPullReader::JsonPullReader(std::string_view json, JsonReaderLimits limits)
    : limits_(limits), data_(json.data()), len_(json.size()), at_end_(true) {}

bool JsonPullReader::Fill() {
  if (at_end_ || !source_) return false;
  consumed_ += len_;
  pos_ = len_ = 0;
  absl::StatusOr<size_t> got = source_(buffer_.data(), buffer_.size());
  if (!got.ok()) {
    error_ = got.status();
    at_end_ = true;
    return false;
  }
  len_ = *got;
  if (len_ == 0) at_end_ = true;
  return len_ > 0;
}

absl::Status JsonPullReader::Error(std::string_view what) const {
  if (!error_.ok()) return error_;
  return absl::InvalidArgumentError(fmt::format("{} at byte {}", what, offset()));
}

absl::Status JsonPullReader::SkipWhitespace() {
  while (true) {
    const int c = Peek();
    if (c != ' ' && c != '\n' && c != '\r' && c != '\t') break;
    ++pos_;
  }
  return error_;
}

void JsonPullReader::AppendText(char c) {
  if (text_.size() < limits_.max_string_bytes) {
    text_.push_back(c);
  } else {
    truncated_ = true;
  }
}

// After "\u": four hex digits, and for a high surrogate the "\uXXXX" of
// its low half; written out as UTF-8.
absl::Status JsonPullReader::AppendCodePoint() {
  const auto hex4 = [this]() -> absl::StatusOr<uint32_t> {
    uint32_t value = 0;
    for (int i = 0; i < 4; ++i) {
      const int digit = HexDigit(Peek());
      if (digit < 0) return Error("expected 4 hex digits after \\u");
      ++pos_;
      value = value * 16 + static_cast<uint32_t>(digit);
    }
    return value;
  };
  absl::StatusOr<uint32_t> unit = hex4();
  if (!unit.ok()) return unit.status();
  uint32_t code = *unit;
  if (code >= 0xD800 && code <= 0xDBFF) {
    if (Peek() != '\\') return Error("a lone high surrogate in \\u escapes");
    ++pos_;
    if (Peek() != 'u') return Error("a lone high surrogate in \\u escapes");
    ++pos_;
    absl::StatusOr<uint32_t> low = hex4();
    if (!low.ok()) return low.status();
    if (*low < 0xDC00 || *low > 0xDFFF) return Error("a lone high surrogate in \\u escapes");
    code = 0x10000 + ((code - 0xD800) << 10) + (*low - 0xDC00);
  } else if (code >= 0xDC00 && code <= 0xDFFF) {
    return Error("a lone low surrogate in \\u escapes");
  }
  if (code < 0x80) {
    AppendText(static_cast<char>(code));
  } else if (code < 0x800) {
    AppendText(static_cast<char>(0xC0 | (code >> 6)));
    AppendText(static_cast<char>(0x80 | (code & 0x3F)));
  } else if (code < 0x10000) {
    AppendText(static_cast<char>(0xE0 | (code >> 12)));
    AppendText(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    AppendText(static_cast<char>(0x80 | (code & 0x3F)));
  } else {
    AppendText(static_cast<char>(0xF0 | (code >> 18)));
    AppendText(static_cast<char>(0x80 | ((code >> 12) & 0x3F)));
    AppendText(static_cast<char>(0x80 | ((code >> 6) & 0x3F)));
    AppendText(static_cast<char>(0x80 | (code & 0x3F)));
  }
  return absl::OkStatus();
}

// After the opening quote, to past the closing one.
absl::Status JsonPullReader::ReadString() {
  text_.clear();
  truncated_ = false;
  while (true) {
    const int c = Peek();
    if (c < 0) return Error("a string that does not end");
    ++pos_;
    if (c == '"') return absl::OkStatus();
    if (c < 0x20) return Error("a control character in a string");
    if (c != '\\') {
      AppendText(static_cast<char>(c));
      continue;
    }
    const int e = Peek();
    ++pos_;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        AppendText(static_cast<char>(e));
        break;
      case 'b':
        AppendText('\b');
        break;
      case 'f':
        AppendText('\f');
        break;
      case 'n':
        AppendText('\n');
        break;
      case 'r':
        AppendText('\r');
        break;
      case 't':
        AppendText('\t');
        break;
      case 'u':
        if (absl::Status bad = AppendCodePoint(); !bad.ok()) return bad;
        break;
      default:
        --pos_;
        return Error(fmt::format("an unknown escape \\{} in a string", Printable(e)));
    }
  }
}

absl::Status JsonPullReader::ReadNumber() {
  text_.clear();
  truncated_ = false;
  bool long_text = false;
  const auto take = [&] {
    if (text_.size() < kMaxNumberText) {
      text_.push_back(static_cast<char>(data_[pos_]));
    } else {
      long_text = true;
    }
    ++pos_;
  };
  if (Peek() == '-') take();
  if (!IsDigit(Peek())) return Error("expected a digit");
  if (Peek() == '0') {
    take();
  } else {
    while (IsDigit(Peek())) take();
  }
  if (Peek() == '.') {
    take();
    if (!IsDigit(Peek())) return Error("expected a digit after '.'");
    while (IsDigit(Peek())) take();
  }
  if (Peek() == 'e' || Peek() == 'E') {
    take();
    if (Peek() == '+' || Peek() == '-') take();
    if (!IsDigit(Peek())) return Error("expected a digit in an exponent");
    while (IsDigit(Peek())) take();
  }
  if (!error_.ok()) return error_;
  truncated_ = long_text;
  if (long_text || !absl::SimpleAtod(text_, &number_)) {
    number_ = std::numeric_limits<double>::infinity();
  }
  return absl::OkStatus();
}

absl::Status JsonPullReader::ReadLiteral(std::string_view literal) {
  for (const char c : literal) {
    if (Peek() != c) return Error(fmt::format("expected '{}'", literal));
    ++pos_;
  }
  return absl::OkStatus();
}

void JsonPullReader::ValueDone() {
  expect_ = stack_.empty() ? Expect::kAfterRoot : Expect::kCommaOrEnd;
}

absl::StatusOr<JsonToken> JsonPullReader::ReadValue(int c) {
  switch (c) {
    case '{':
    case '[':
      if (stack_.size() >= limits_.max_depth) {
        return absl::ResourceExhaustedError(fmt::format(
            "JSON nested deeper than {} levels at byte {}", limits_.max_depth, offset()));
      }
      ++pos_;
      stack_.push_back(static_cast<char>(c));
      expect_ = c == '{' ? Expect::kKeyOrEnd : Expect::kValueOrEnd;
      return c == '{' ? JsonToken::kBeginObject : JsonToken::kBeginArray;
    case '"':
      ++pos_;
      if (absl::Status bad = ReadString(); !bad.ok()) return bad;
      ValueDone();
      return JsonToken::kString;
    case 't':
      if (absl::Status bad = ReadLiteral("true"); !bad.ok()) return bad;
      ValueDone();
      return JsonToken::kTrue;
    case 'f':
      if (absl::Status bad = ReadLiteral("false"); !bad.ok()) return bad;
      ValueDone();
      return JsonToken::kFalse;
    case 'n':
      if (absl::Status bad = ReadLiteral("null"); !bad.ok()) return bad;
      ValueDone();
      return JsonToken::kNull;
    default:
      if (c == '-' || IsDigit(c)) {
        if (absl::Status bad = ReadNumber(); !bad.ok()) return bad;
        ValueDone();
        return JsonToken::kNumber;
      }
      return Error(fmt::format("expected a value, got {}", Printable(c)));
  }
}

absl::StatusOr<JsonToken> JsonPullReader::Next() {
  // At most twice round: a ':' or ',' comes before a token.
  while (true) {
    if (absl::Status bad = SkipWhitespace(); !bad.ok()) return bad;
    const int c = Peek();
    if (!error_.ok()) return error_;
    if (expect_ == Expect::kAfterRoot) {
      if (c < 0) return JsonToken::kEnd;
      return Error(fmt::format("{} after the JSON value", Printable(c)));
    }
    if (c < 0) return Error("the input ends early");
    switch (expect_) {
      case Expect::kColon:
        if (c != ':') return Error(fmt::format("expected ':', got {}", Printable(c)));
        ++pos_;
        expect_ = Expect::kValue;
        continue;
      case Expect::kCommaOrEnd: {
        const char open = stack_.back();
        if (c == ',') {
          ++pos_;
          expect_ = open == '{' ? Expect::kKey : Expect::kValue;
          continue;
        }
        if (c == (open == '{' ? '}' : ']')) {
          ++pos_;
          stack_.pop_back();
          ValueDone();
          return open == '{' ? JsonToken::kEndObject : JsonToken::kEndArray;
        }
        return Error(
            fmt::format("expected ',' or '{}', got {}", open == '{' ? '}' : ']', Printable(c)));
      }
      case Expect::kKeyOrEnd:
        if (c == '}') {
          ++pos_;
          stack_.pop_back();
          ValueDone();
          return JsonToken::kEndObject;
        }
        [[fallthrough]];
      case Expect::kKey:
        if (c != '"') return Error(fmt::format("expected a key, got {}", Printable(c)));
        ++pos_;
        if (absl::Status bad = ReadString(); !bad.ok()) return bad;
        expect_ = Expect::kColon;
        return JsonToken::kKey;
      case Expect::kValueOrEnd:
        if (c == ']') {
          ++pos_;
          stack_.pop_back();
          ValueDone();
          return JsonToken::kEndArray;
        }
        [[fallthrough]];
      case Expect::kValue:
        return ReadValue(c);
      case Expect::kAfterRoot:
        break;
    }
    return Error("unexpected state");
  }
}

absl::Status JsonPullReader::SkipContainer() {
  if (expect_ != Expect::kKeyOrEnd && expect_ != Expect::kValueOrEnd) return absl::OkStatus();
  const size_t outside = stack_.size() - 1;
  while (stack_.size() > outside) {
    absl::StatusOr<JsonToken> token = Next();
    if (!token.ok()) return token.status();
  }
  return absl::OkStatus();
}

}  // namespace rill::cli
