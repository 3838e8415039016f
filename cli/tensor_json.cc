#include "cli/tensor_json.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

struct DtypeName {
  DataType dtype;
  const char* name;
};

constexpr DtypeName kDtypeNames[] = {
    {DT_FLOAT, "float32"},     {DT_DOUBLE, "float64"},      {DT_HALF, "float16"},
    {DT_BFLOAT16, "bfloat16"}, {DT_INT8, "int8"},           {DT_INT16, "int16"},
    {DT_INT32, "int32"},       {DT_INT64, "int64"},         {DT_UINT8, "uint8"},
    {DT_UINT16, "uint16"},     {DT_UINT32, "uint32"},       {DT_UINT64, "uint64"},
    {DT_BOOL, "bool"},         {DT_COMPLEX64, "complex64"}, {DT_COMPLEX128, "complex128"},
    {DT_STRING, "string"},
};

// One parsed JSON value; `number` keeps the text so that integers are
// converted without passing through a double.
struct JsonValue {
  enum class Kind { kNumber, kBool, kString, kList };
  Kind kind = Kind::kNumber;
  size_t offset = 0;
  std::string_view number;
  bool boolean = false;
  std::string text;
  std::vector<JsonValue> items;
};

absl::Status ErrorAt(size_t offset, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("at byte offset %d: %s", offset, what));
}

class JsonParser {
 public:
  explicit JsonParser(std::string_view text) : text_(text) {}

  absl::StatusOr<JsonValue> ParseDocument() {
    ASSIGN_OR_RETURN(JsonValue value, ParseValue(0));
    SkipSpace();
    if (pos_ != text_.size()) return ErrorAt(pos_, "unexpected text after the value");
    return value;
  }

 private:
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  bool IsDigit() const { return Peek() >= '0' && Peek() <= '9'; }
  void SkipSpace() {
    while (Peek() == ' ' || Peek() == '\t' || Peek() == '\n' || Peek() == '\r') ++pos_;
  }
  bool Consume(std::string_view word) {
    if (!text_.substr(pos_).starts_with(word)) return false;
    pos_ += word.size();
    return true;
  }

  absl::StatusOr<JsonValue> ParseValue(int depth) {
    SkipSpace();
    JsonValue value;
    value.offset = pos_;
    if (pos_ == text_.size()) return ErrorAt(pos_, "expected a value, found the end");
    if (Peek() == '[') {
      // A tensor cannot have more dimensions than this; the limit also
      // bounds the recursion.
      if (depth >= kMaxTensorRank) return ErrorAt(pos_, "lists nested too deeply");
      value.kind = JsonValue::Kind::kList;
      ++pos_;
      SkipSpace();
      if (Peek() == ']') {
        ++pos_;
        return value;
      }
      while (true) {
        ASSIGN_OR_RETURN(JsonValue item, ParseValue(depth + 1));
        value.items.push_back(std::move(item));
        SkipSpace();
        if (Peek() == ']') break;
        if (Peek() != ',') return ErrorAt(pos_, "expected ',' or ']'");
        ++pos_;
      }
      ++pos_;
      return value;
    }
    if (Peek() == '"') {
      value.kind = JsonValue::Kind::kString;
      ASSIGN_OR_RETURN(value.text, ParseString());
      return value;
    }
    if (Consume("true") || Consume("false")) {
      value.kind = JsonValue::Kind::kBool;
      value.boolean = text_[value.offset] == 't';
      return value;
    }
    if (Consume("null")) return ErrorAt(value.offset, "null is not a tensor element");
    RETURN_IF_ERROR(ScanNumber());
    value.number = text_.substr(value.offset, pos_ - value.offset);
    return value;
  }

  // JSON's grammar: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
  absl::Status ScanNumber() {
    const size_t start = pos_;
    if (Peek() == '-') ++pos_;
    if (Peek() == '0') {
      ++pos_;
    } else if (IsDigit()) {
      while (IsDigit()) ++pos_;
    } else {
      return ErrorAt(start, "expected a number, list, string, true or false");
    }
    if (Peek() == '.') {
      ++pos_;
      if (!IsDigit()) return ErrorAt(pos_, "expected a digit after '.'");
      while (IsDigit()) ++pos_;
    }
    if (Peek() == 'e' || Peek() == 'E') {
      ++pos_;
      if (Peek() == '+' || Peek() == '-') ++pos_;
      if (!IsDigit()) return ErrorAt(pos_, "expected a digit in the exponent");
      while (IsDigit()) ++pos_;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<uint32_t> ParseHex4() {
    uint32_t code = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = Peek();
      int digit;
      if (c >= '0' && c <= '9') {
        digit = c - '0';
      } else if (c >= 'a' && c <= 'f') {
        digit = c - 'a' + 10;
      } else if (c >= 'A' && c <= 'F') {
        digit = c - 'A' + 10;
      } else {
        return ErrorAt(pos_, "expected 4 hex digits after \\u");
      }
      code = code * 16 + digit;
      ++pos_;
    }
    return code;
  }

  static void AppendUtf8(uint32_t code, std::string* out) {
    if (code < 0x80) {
      *out += static_cast<char>(code);
    } else if (code < 0x800) {
      *out += static_cast<char>(0xC0 | (code >> 6));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      *out += static_cast<char>(0xE0 | (code >> 12));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    } else {
      *out += static_cast<char>(0xF0 | (code >> 18));
      *out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
      *out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
      *out += static_cast<char>(0x80 | (code & 0x3F));
    }
  }

  absl::StatusOr<std::string> ParseString() {
    const size_t start = pos_++;
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) return ErrorAt(start, "unterminated string");
      const char c = text_[pos_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) {
        return ErrorAt(pos_ - 1, "control character in a string");
      }
      if (c != '\\') {
        out += c;
        continue;
      }
      const char e = Peek();
      ++pos_;
      constexpr std::string_view kEscaped = "\"\\/bfnrt";
      constexpr std::string_view kMeaning = "\"\\/\b\f\n\r\t";
      if (const size_t k = kEscaped.find(e); e != '\0' && k != std::string_view::npos) {
        out += kMeaning[k];
        continue;
      }
      if (e != 'u') return ErrorAt(pos_ - 2, "bad escape in a string");
      ASSIGN_OR_RETURN(uint32_t code, ParseHex4());
      if (code >= 0xD800 && code < 0xDC00 && Consume("\\u")) {
        ASSIGN_OR_RETURN(const uint32_t low, ParseHex4());
        if (low < 0xDC00 || low >= 0xE000) return ErrorAt(pos_ - 6, "unpaired surrogate");
        code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
      } else if (code >= 0xD800 && code < 0xE000) {
        return ErrorAt(pos_ - 6, "unpaired surrogate");
      }
      AppendUtf8(code, &out);
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

std::string Path(const std::vector<int64_t>& index) {
  std::string out;
  for (int64_t i : index) out += absl::StrFormat("[%d]", i);
  return out.empty() ? "the top-level value" : "element " + out;
}

// Checks that `value` is a rectangular nest of `dims` and collects its
// elements in row-major order.
absl::Status CollectElements(const JsonValue& value, const std::vector<int64_t>& dims,
                             std::vector<int64_t>* index, std::vector<const JsonValue*>* out) {
  const size_t depth = index->size();
  const bool is_list = value.kind == JsonValue::Kind::kList;
  if (depth == dims.size()) {
    if (is_list) {
      return ErrorAt(value.offset,
                     absl::StrFormat("ragged nested list: %s is a list, but the elements at "
                                     "this depth are values",
                                     Path(*index)));
    }
    out->push_back(&value);
    return absl::OkStatus();
  }
  if (!is_list || static_cast<int64_t>(value.items.size()) != dims[depth]) {
    return ErrorAt(value.offset,
                   absl::StrFormat("ragged nested list: %s is %s, but a list of %d is expected "
                                   "there",
                                   Path(*index),
                                   is_list ? absl::StrFormat("a list of %d", value.items.size())
                                           : std::string("a value"),
                                   dims[depth]));
  }
  for (size_t i = 0; i < value.items.size(); ++i) {
    index->push_back(static_cast<int64_t>(i));
    RETURN_IF_ERROR(CollectElements(value.items[i], dims, index, out));
    index->pop_back();
  }
  return absl::OkStatus();
}

template <typename T>
constexpr bool kIsFloating =
    std::is_floating_point_v<T> || std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;
template <typename T>
constexpr bool kIsComplex = std::is_same_v<T, complex64> || std::is_same_v<T, complex128>;

// The type of one real component: T itself, or a complex type's parts.
template <typename T>
struct RealPart {
  using type = T;
};
template <typename T>
struct RealPart<std::complex<T>> {
  using type = T;
};

absl::Status WrongKind(const JsonValue& v, DataType dtype) {
  const char* kind = v.kind == JsonValue::Kind::kBool     ? "a boolean"
                     : v.kind == JsonValue::Kind::kString ? "a string"
                                                          : "a number";
  return ErrorAt(v.offset,
                 absl::StrFormat("%s cannot be a %s element", kind, NumpyDtypeName(dtype)));
}

absl::Status OutOfRange(const JsonValue& v, DataType dtype) {
  return ErrorAt(v.offset,
                 absl::StrFormat("%s is out of range for %s", v.number, NumpyDtypeName(dtype)));
}

absl::StatusOr<double> ParseFloating(const JsonValue& v, DataType dtype) {
  if (v.kind == JsonValue::Kind::kString) {
    std::string lower;
    for (char c : v.text) lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == "nan") return std::numeric_limits<double>::quiet_NaN();
    if (lower == "inf" || lower == "infinity") return std::numeric_limits<double>::infinity();
    if (lower == "-inf" || lower == "-infinity") return -std::numeric_limits<double>::infinity();
    return ErrorAt(v.offset, absl::StrFormat("\"%s\" is not a number (NaN, Infinity and "
                                             "-Infinity are the strings accepted)",
                                             v.text));
  }
  if (v.kind != JsonValue::Kind::kNumber) return WrongKind(v, dtype);
  double d = 0;
  const auto [end, ec] = std::from_chars(v.number.data(), v.number.data() + v.number.size(), d);
  if (ec == std::errc::result_out_of_range) {
    // from_chars leaves `d` alone here; strtod tells overflow (HUGE_VAL)
    // from underflow, which is a rounding to zero, not an error.
    d = std::strtod(std::string(v.number).c_str(), nullptr);
    if (std::isinf(d)) return OutOfRange(v, dtype);
  }
  return d;
}

template <typename T>
absl::StatusOr<T> ParseInteger(const JsonValue& v, DataType dtype) {
  if (v.kind != JsonValue::Kind::kNumber) return WrongKind(v, dtype);
  const std::string_view s = v.number;
  using Wide = std::conditional_t<std::is_signed_v<T>, int64_t, uint64_t>;
  if (s.find_first_of(".eE") == std::string_view::npos) {
    if (std::is_unsigned_v<T> && s.starts_with('-')) {
      if (s == "-0") return T(0);
      return OutOfRange(v, dtype);
    }
    Wide wide = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), wide);
    if (ec != std::errc() || wide < std::numeric_limits<T>::min() ||
        wide > std::numeric_limits<T>::max()) {
      return OutOfRange(v, dtype);
    }
    return static_cast<T>(wide);
  }
  ASSIGN_OR_RETURN(const double d, ParseFloating(v, dtype));
  if (d != std::trunc(d)) {
    return ErrorAt(v.offset,
                   absl::StrFormat("%s is not an integer, as %s needs", s, NumpyDtypeName(dtype)));
  }
  // max + 1.0 is a power of two and exact; max itself may not be.
  if (!(d >= static_cast<double>(std::numeric_limits<T>::min()) &&
        d < static_cast<double>(std::numeric_limits<T>::max()) + 1.0)) {
    return OutOfRange(v, dtype);
  }
  return static_cast<T>(d);
}

template <typename T>
absl::StatusOr<T> ConvertElement(const JsonValue& v, DataType dtype) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (v.kind != JsonValue::Kind::kString) return WrongKind(v, dtype);
    return v.text;
  } else if constexpr (std::is_same_v<T, bool>) {
    if (v.kind == JsonValue::Kind::kBool) return v.boolean;
    if (v.kind == JsonValue::Kind::kNumber && (v.number == "0" || v.number == "1")) {
      return v.number == "1";
    }
    return ErrorAt(v.offset, "a bool element must be true, false, 0 or 1");
  } else if constexpr (kIsFloating<T> || kIsComplex<T>) {
    ASSIGN_OR_RETURN(const double d, ParseFloating(v, dtype));
    using Real = typename RealPart<T>::type;
    Real real;
    if constexpr (std::is_same_v<Real, double>) {
      real = d;
    } else if constexpr (std::is_same_v<Real, float>) {
      real = static_cast<float>(d);
    } else {
      real = static_cast<Real>(static_cast<float>(d));
    }
    if (std::isfinite(d) && !std::isfinite(static_cast<double>(static_cast<float>(real)))) {
      return OutOfRange(v, dtype);
    }
    return T(real);
  } else {
    static_assert(std::is_integral_v<T>);
    return ParseInteger<T>(v, dtype);
  }
}

template <typename Float>
void AppendFloat(Float value, std::string* out) {
  if (std::isnan(value)) {
    *out += "\"NaN\"";
  } else if (std::isinf(value)) {
    *out += value > 0 ? "\"Infinity\"" : "\"-Infinity\"";
  } else {
    char buffer[64];
    const auto result = std::to_chars(buffer, buffer + sizeof(buffer), value);
    out->append(buffer, result.ptr);
  }
}

void AppendJsonString(std::string_view s, std::string* out) {
  *out += '"';
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      *out += '\\';
      *out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      *out += absl::StrFormat("\\u%04x", static_cast<int>(c));
    } else {
      *out += c;
    }
  }
  *out += '"';
}

template <typename T>
void AppendElement(const T& value, std::string* out) {
  if constexpr (std::is_same_v<T, std::string>) {
    AppendJsonString(value, out);
  } else if constexpr (std::is_same_v<T, bool>) {
    *out += value ? "true" : "false";
  } else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>) {
    AppendFloat(static_cast<float>(value), out);
  } else if constexpr (std::is_floating_point_v<T>) {
    AppendFloat(value, out);
  } else if constexpr (kIsComplex<T>) {
    *out += '[';
    AppendFloat(value.real(), out);
    *out += ", ";
    AppendFloat(value.imag(), out);
    *out += ']';
  } else {
    *out += std::to_string(value);
  }
}

}  // namespace

std::string NumpyDtypeName(DataType dtype) {
  for (const DtypeName& entry : kDtypeNames) {
    if (entry.dtype == BaseType(dtype)) return entry.name;
  }
  return DataTypeString(dtype);
}

absl::StatusOr<DataType> DataTypeFromNumpyName(std::string_view name) {
  for (const DtypeName& entry : kDtypeNames) {
    if (name == entry.name) return entry.dtype;
  }
  return absl::InvalidArgumentError(absl::StrFormat("unknown dtype name '%s'", name));
}

absl::StatusOr<Tensor> ParseJsonTensor(std::string_view text, DataType dtype) {
  ASSIGN_OR_RETURN(const JsonValue root, JsonParser(text).ParseDocument());
  std::vector<int64_t> dims;
  for (const JsonValue* v = &root; v->kind == JsonValue::Kind::kList;) {
    dims.push_back(static_cast<int64_t>(v->items.size()));
    if (v->items.empty()) break;
    v = &v->items[0];
  }
  std::vector<int64_t> index;
  std::vector<const JsonValue*> elements;
  RETURN_IF_ERROR(CollectElements(root, dims, &index, &elements));
  ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Create(dims));
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(CpuAllocator(), BaseType(dtype), shape));
  return DispatchType(
      dtype,
      [&]<typename T>() -> absl::StatusOr<Tensor> {
        T* out = tensor.data<T>();
        for (size_t i = 0; i < elements.size(); ++i) {
          ASSIGN_OR_RETURN(out[i], ConvertElement<T>(*elements[i], dtype));
        }
        return tensor;
      },
      [&]() -> absl::StatusOr<Tensor> {
        return absl::UnimplementedError(
            absl::StrFormat("%s tensors cannot be given as JSON", NumpyDtypeName(dtype)));
      });
}

absl::StatusOr<std::string> JsonValues(const Tensor& tensor) {
  const auto unsupported = [&]() -> absl::StatusOr<std::string> {
    return absl::UnimplementedError(
        absl::StrFormat("%s tensors have no JSON form", NumpyDtypeName(tensor.dtype())));
  };
  if (!tensor.IsInitialized()) return absl::InvalidArgumentError("uninitialized tensor");
  return DispatchType(
      tensor.dtype(),
      [&]<typename T>() -> absl::StatusOr<std::string> {
        std::string out = "[";
        const T* values = tensor.data<T>();
        for (int64_t i = 0; i < tensor.NumElements(); ++i) {
          if (i > 0) out += ", ";
          AppendElement(values[i], &out);
        }
        return out + "]";
      },
      unsupported);
}

absl::StatusOr<std::string> TensorToJson(const Tensor& tensor) {
  ASSIGN_OR_RETURN(const std::string values, JsonValues(tensor));
  std::string shape = "[";
  for (int i = 0; i < tensor.dims(); ++i) {
    if (i > 0) shape += ", ";
    shape += std::to_string(tensor.dim_size(i));
  }
  shape += "]";
  return absl::StrFormat("{\"dtype\": \"%s\", \"shape\": %s, \"values\": %s}",
                         NumpyDtypeName(tensor.dtype()), shape, values);
}

}  // namespace rill
