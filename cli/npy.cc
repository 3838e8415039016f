#include "cli/npy.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <limits>
#include <memory>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"

namespace rill {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
// numpy aligns the data to 64 bytes and leaves room in the header for the
// first dimension to grow to this many digits.
constexpr size_t kAlign = 64;
constexpr size_t kGrowthDigits = 21;
// Magic, version and the longest (4-byte) header length field.
constexpr size_t kMaxPreambleLen = kMagicLen + 2 + 4;
// numpy writes headers of a few hundred bytes for the dtypes read here;
// this bounds what a bad length field can make a reader allocate.
constexpr size_t kMaxHeaderLen = 64 * 1024;

struct NpyType {
  DataType dtype;
  char kind;  // numpy's kind character.
  int size;
};

constexpr NpyType kNpyTypes[] = {
    {DT_HALF, 'f', 2},      {DT_FLOAT, 'f', 4},       {DT_DOUBLE, 'f', 8}, {DT_INT8, 'i', 1},
    {DT_INT16, 'i', 2},     {DT_INT32, 'i', 4},       {DT_INT64, 'i', 8},  {DT_UINT8, 'u', 1},
    {DT_UINT16, 'u', 2},    {DT_UINT32, 'u', 4},      {DT_UINT64, 'u', 8}, {DT_BOOL, 'b', 1},
    {DT_COMPLEX64, 'c', 8}, {DT_COMPLEX128, 'c', 16},
};

std::optional<NpyType> NpyTypeFor(DataType dtype) {
  for (const NpyType& t : kNpyTypes) {
    if (t.dtype == dtype) return t;
  }
  return std::nullopt;
}

std::optional<NpyType> NpyTypeFor(char kind, int size) {
  for (const NpyType& t : kNpyTypes) {
    if (t.kind == kind && t.size == size) return t;
  }
  return std::nullopt;
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
};

// The header is a Python dict literal as numpy's repr writes it; this reads
// exactly that subset (strings, True/False, tuples of ints).
class HeaderParser {
 public:
  HeaderParser(std::string_view text, size_t base) : text_(text), base_(base) {}

  absl::StatusOr<Header> Parse() {
    Header header;
    bool has_descr = false, has_order = false, has_shape = false;
    RETURN_IF_ERROR(Expect('{'));
    while (true) {
      SkipSpace();
      if (Peek() == '}') break;
      ASSIGN_OR_RETURN(const std::string key, ParseString());
      RETURN_IF_ERROR(Expect(':'));
      SkipSpace();
      if (key == "descr" && !has_descr) {
        if (Peek() == '[') return Error("structured dtypes are not supported");
        ASSIGN_OR_RETURN(header.descr, ParseString());
        has_descr = true;
      } else if (key == "fortran_order" && !has_order) {
        ASSIGN_OR_RETURN(header.fortran_order, ParseBool());
        has_order = true;
      } else if (key == "shape" && !has_shape) {
        ASSIGN_OR_RETURN(header.shape, ParseTuple());
        has_shape = true;
      } else {
        return Error(absl::StrFormat("unexpected key '%s'", key));
      }
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != '}') {
        return Error("expected ',' or '}'");
      }
    }
    ++pos_;
    SkipSpace();
    if (pos_ != text_.size()) return Error("unexpected text after the header dict");
    if (!has_descr) return Error("missing key 'descr'");
    if (!has_order) return Error("missing key 'fortran_order'");
    if (!has_shape) return Error("missing key 'shape'");
    return header;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("bad npy header at byte offset %d: %s", base_ + pos_, what));
  }
  char Peek() const { return pos_ < text_.size() ? text_[pos_] : '\0'; }
  void SkipSpace() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\n' ||
                                   text_[pos_] == '\t' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }
  absl::Status Expect(char c) {
    SkipSpace();
    if (Peek() != c) return Error(absl::StrFormat("expected '%c'", c));
    ++pos_;
    return absl::OkStatus();
  }

  absl::StatusOr<std::string> ParseString() {
    const char quote = Peek();
    if (quote != '\'' && quote != '"') return Error("expected a quoted string");
    const size_t end = text_.find(quote, pos_ + 1);
    if (end == std::string_view::npos) return Error("unterminated string");
    std::string value(text_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return value;
  }

  absl::StatusOr<bool> ParseBool() {
    if (text_.substr(pos_).starts_with("True")) {
      pos_ += 4;
      return true;
    }
    if (text_.substr(pos_).starts_with("False")) {
      pos_ += 5;
      return false;
    }
    return Error("expected True or False");
  }

  absl::StatusOr<std::vector<int64_t>> ParseTuple() {
    if (Peek() != '(') return Error("expected a tuple for 'shape'");
    ++pos_;
    std::vector<int64_t> dims;
    while (true) {
      SkipSpace();
      if (Peek() == ')') break;
      const size_t start = pos_;
      int64_t value = 0;
      while (Peek() >= '0' && Peek() <= '9') {
        const int digit = Peek() - '0';
        if (value > (std::numeric_limits<int64_t>::max() - digit) / 10) {
          pos_ = start;
          return Error("dimension too large");
        }
        value = value * 10 + digit;
        ++pos_;
      }
      if (pos_ == start) return Error("expected a non-negative dimension");
      if (Peek() == 'L') ++pos_;  // Python 2 longs.
      dims.push_back(value);
      SkipSpace();
      if (Peek() == ',') {
        ++pos_;
      } else if (Peek() != ')') {
        return Error("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    return dims;
  }

  std::string_view text_;
  size_t base_;  // Offset of text_ in the file, for messages.
  size_t pos_ = 0;
};

absl::StatusOr<NpyType> TypeFromDescr(std::string_view descr) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(absl::StrFormat("npy dtype '%s': %s", descr, why));
  };
  if (descr.size() < 3) return bad("not a dtype numpy writes");
  const char order = descr[0];
  int size = 0;
  for (char c : descr.substr(2)) {
    if (c < '0' || c > '9' || size > 1000) return bad("not a dtype numpy writes");
    size = size * 10 + (c - '0');
  }
  const std::optional<NpyType> type = NpyTypeFor(descr[1], size);
  if (!type) return bad("unsupported element type");
  if (order == '>' && size > 1) return bad("big-endian data is not supported");
  if (order != '<' && order != '|' && order != '=' && order != '>') {
    return bad("unknown byte order");
  }
  return *type;
}

std::string ShapeRepr(absl::Span<const int64_t> dims) {
  std::string out = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ", ";
    out += std::to_string(dims[i]);
  }
  if (dims.size() == 1) out += ",";
  return out + ")";
}

// Fortran order stores the first index fastest; walking the row-major
// destination with an odometer keeps the source offset incremental.
void FortranToRowMajor(const char* src, char* dst, absl::Span<const int64_t> dims,
                       size_t element_size, int64_t count) {
  const size_t rank = dims.size();
  std::vector<int64_t> stride(rank), index(rank, 0);
  int64_t s = 1;
  for (size_t k = 0; k < rank; ++k) {
    stride[k] = s;
    s *= dims[k];
  }
  int64_t offset = 0;
  for (int64_t n = 0; n < count; ++n) {
    std::memcpy(dst + n * element_size, src + offset * element_size, element_size);
    for (size_t k = rank; k-- > 0;) {
      offset += stride[k];
      if (++index[k] < dims[k]) break;
      offset -= stride[k] * dims[k];
      index[k] = 0;
    }
  }
}

uint32_t ReadLittleEndian(const unsigned char* p, int bytes) {
  uint32_t value = 0;
  for (int i = bytes - 1; i >= 0; --i) value = (value << 8) | p[i];
  return value;
}

std::string WithPath(const std::string& path, std::string_view message) {
  return absl::StrFormat("%s: %s", path, message);
}

// Where the header dict lies, from the magic, version and length fields.
struct Preamble {
  size_t header_offset;
  size_t header_len;
};

// `prefix` holds at least the first kMaxPreambleLen bytes of an input of
// `input_size` bytes, or all of it when shorter.
absl::StatusOr<Preamble> ParsePreamble(std::string_view prefix, size_t input_size) {
  if (prefix.size() < kMagicLen + 2 || prefix.substr(0, kMagicLen) != std::string_view(kMagic)) {
    return absl::InvalidArgumentError("not an npy file: bad magic at byte offset 0");
  }
  const auto* raw = reinterpret_cast<const unsigned char*>(prefix.data());
  const int major = raw[kMagicLen], minor = raw[kMagicLen + 1];
  if ((major != 1 && major != 2 && major != 3) || minor != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "unsupported npy format version %d.%d at byte offset %d", major, minor, kMagicLen));
  }
  const int len_bytes = major == 1 ? 2 : 4;
  const size_t len_offset = kMagicLen + 2;
  if (prefix.size() < len_offset + len_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "truncated npy header: the header length at byte offset %d needs %d bytes, the input "
        "has %d",
        len_offset, len_bytes, prefix.size() - len_offset));
  }
  const Preamble preamble{len_offset + len_bytes, ReadLittleEndian(raw + len_offset, len_bytes)};
  if (preamble.header_len > kMaxHeaderLen) {
    return absl::InvalidArgumentError(
        absl::StrFormat("npy header length %d at byte offset %d is over the limit of %d bytes",
                        preamble.header_len, len_offset, kMaxHeaderLen));
  }
  if (input_size - preamble.header_offset < preamble.header_len) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "truncated npy header: %d bytes from byte offset %d, but the input ends at byte offset "
        "%d",
        preamble.header_len, preamble.header_offset, input_size));
  }
  return preamble;
}

// What the header says the data is, and where it lies.
struct Layout {
  Header header;
  NpyType type;
  TensorShape shape;
  size_t data_offset;
  size_t data_bytes;
};

absl::StatusOr<Layout> ParseLayout(std::string_view header_text, const Preamble& preamble) {
  ASSIGN_OR_RETURN(Header header, HeaderParser(header_text, preamble.header_offset).Parse());
  ASSIGN_OR_RETURN(const NpyType type, TypeFromDescr(header.descr));
  auto shape = TensorShape::Create(header.shape);
  if (!shape.ok() || header.shape.size() > static_cast<size_t>(kMaxTensorRank)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("npy shape %s is too large", ShapeRepr(header.shape)));
  }
  const int64_t count = shape->num_elements();
  if (count > std::numeric_limits<int64_t>::max() / type.size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("npy shape %s is too large", ShapeRepr(header.shape)));
  }
  const size_t data_offset = preamble.header_offset + preamble.header_len;
  const size_t data_bytes = static_cast<size_t>(count) * type.size;
  return Layout{std::move(header), type, *std::move(shape), data_offset, data_bytes};
}

// The data must fill the input to its end, no less and no more.
absl::Status CheckDataSize(const Layout& layout, size_t input_size) {
  const size_t available = input_size - layout.data_offset;
  if (available < layout.data_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "truncated npy data: shape %s of '%s' needs %d bytes from byte offset %d, but the input "
        "ends at byte offset %d",
        ShapeRepr(layout.header.shape), layout.header.descr, layout.data_bytes, layout.data_offset,
        input_size));
  }
  if (available > layout.data_bytes) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "npy data of shape %s of '%s' ends at byte offset %d, followed by %d unexpected bytes",
        ShapeRepr(layout.header.shape), layout.header.descr, layout.data_offset + layout.data_bytes,
        available - layout.data_bytes));
  }
  return absl::OkStatus();
}

bool NeedsReorder(const Layout& layout) {
  return layout.header.fortran_order && layout.header.shape.size() > 1;
}

// Checks `data` (layout.data_bytes bytes) and puts it into `tensor`, which
// holds layout's dtype and shape, in row-major order. `data` may be the
// tensor's own buffer when the layout needs no reordering.
absl::Status FillTensor(const Layout& layout, const char* data, Tensor& tensor) {
  if (layout.type.dtype == DT_BOOL) {
    for (size_t i = 0; i < layout.data_bytes; ++i) {
      if (data[i] != 0 && data[i] != 1) {
        return absl::InvalidArgumentError(
            absl::StrFormat("npy bool at byte offset %d is %d, not 0 or 1", layout.data_offset + i,
                            static_cast<unsigned char>(data[i])));
      }
    }
  }
  char* out = static_cast<char*>(tensor.raw_data());
  if (NeedsReorder(layout)) {
    FortranToRowMajor(data, out, layout.header.shape, layout.type.size,
                      layout.shape.num_elements());
  } else if (layout.data_bytes > 0 && out != data) {
    std::memcpy(out, data, layout.data_bytes);
  }
  return absl::OkStatus();
}

// Every read is bounded by the file's size when opened; a file that
// changes meanwhile is caught by reading one byte past the expected end.
absl::StatusOr<Tensor> ReadNpyFile(const io::RandomAccessFile& file, int64_t max_data_bytes) {
  const size_t size = file.size();
  std::string prefix(std::min(size, kMaxPreambleLen), '\0');
  RETURN_IF_ERROR(file.Read(0, prefix.size(), prefix.data()));
  ASSIGN_OR_RETURN(const Preamble preamble, ParsePreamble(prefix, size));
  std::string header(preamble.header_len, '\0');
  RETURN_IF_ERROR(file.Read(preamble.header_offset, header.size(), header.data()));
  ASSIGN_OR_RETURN(const Layout layout, ParseLayout(header, preamble));
  if (layout.data_bytes > static_cast<uint64_t>(max_data_bytes)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "npy shape %s of '%s' is %d bytes of data, over the limit of %d bytes",
        ShapeRepr(layout.header.shape), layout.header.descr, layout.data_bytes, max_data_bytes));
  }
  RETURN_IF_ERROR(CheckDataSize(layout, size));
  ASSIGN_OR_RETURN(Tensor tensor,
                   Tensor::Allocate(CpuAllocator(), layout.type.dtype, layout.shape));
  std::string staging(NeedsReorder(layout) ? layout.data_bytes : 0, '\0');
  char* data = NeedsReorder(layout) ? staging.data() : static_cast<char*>(tensor.raw_data());
  ASSIGN_OR_RETURN(const size_t got, file.ReadUpTo(layout.data_offset, layout.data_bytes, data));
  char extra;
  ASSIGN_OR_RETURN(const size_t more, file.ReadUpTo(layout.data_offset + got, 1, &extra));
  if (got != layout.data_bytes || more != 0) {
    return absl::DataLossError(absl::StrFormat(
        "the file changed while it was read: expected %d bytes of data from byte offset %d, "
        "got %s",
        layout.data_bytes, layout.data_offset, more != 0 ? "more" : std::to_string(got)));
  }
  RETURN_IF_ERROR(FillTensor(layout, data, tensor));
  return tensor;
}

}  // namespace

absl::StatusOr<Tensor> ParseNpy(std::string_view bytes) {
  ASSIGN_OR_RETURN(const Preamble preamble, ParsePreamble(bytes, bytes.size()));
  ASSIGN_OR_RETURN(
      const Layout layout,
      ParseLayout(bytes.substr(preamble.header_offset, preamble.header_len), preamble));
  RETURN_IF_ERROR(CheckDataSize(layout, bytes.size()));
  ASSIGN_OR_RETURN(Tensor tensor,
                   Tensor::Allocate(CpuAllocator(), layout.type.dtype, layout.shape));
  RETURN_IF_ERROR(FillTensor(layout, bytes.data() + layout.data_offset, tensor));
  return tensor;
}

absl::StatusOr<Tensor> ReadNpy(const std::string& path, int64_t max_data_bytes) {
  absl::StatusOr<std::unique_ptr<io::RandomAccessFile>> file = io::RandomAccessFile::Open(path);
  if (absl::IsInvalidArgument(file.status())) return file.status();  // Not a regular file.
  if (!file.ok()) return absl::NotFoundError(WithPath(path, "cannot open file"));
  auto tensor = ReadNpyFile(**file, max_data_bytes);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(),
                        WithPath(path, std::string(tensor.status().message())));
  }
  return tensor;
}

absl::StatusOr<std::string> SerializeNpy(const Tensor& tensor) {
  const std::optional<NpyType> type = NpyTypeFor(BaseType(tensor.dtype()));
  if (!type) {
    return absl::UnimplementedError(
        absl::StrFormat("%s tensors have no npy form", DataTypeString(tensor.dtype())));
  }
  const absl::Span<const int64_t> dims = tensor.shape().dim_sizes();
  std::string dict =
      absl::StrFormat("{'descr': '%c%c%d', 'fortran_order': False, 'shape': %s, }",
                      type->size == 1 ? '|' : '<', type->kind, type->size, ShapeRepr(dims));
  if (!dims.empty()) dict.append(kGrowthDigits - std::to_string(dims[0]).size(), ' ');
  // Padded with spaces and a final newline so that the data starts aligned;
  // a header already aligned still gets a full block, as numpy writes it.
  std::string header;
  for (const size_t len_bytes : {size_t{2}, size_t{4}}) {
    const size_t unpadded = kMagicLen + 2 + len_bytes + dict.size() + 1;
    const size_t padded_len = dict.size() + 1 + (kAlign - unpadded % kAlign);
    if (len_bytes == 2 && padded_len > 0xFFFF) continue;
    header.assign(kMagic, kMagicLen);
    header += static_cast<char>(len_bytes == 2 ? 1 : 2);
    header += '\0';
    for (size_t i = 0; i < len_bytes; ++i)
      header += static_cast<char>((padded_len >> (8 * i)) & 0xFF);
    header += dict;
    header.append(padded_len - dict.size() - 1, ' ');
    header += '\n';
    break;
  }
  if (tensor.TotalBytes() > 0) {
    header.append(static_cast<const char*>(tensor.raw_data()), tensor.TotalBytes());
  }
  return header;
}

absl::Status WriteNpy(const std::string& path, const Tensor& tensor) {
  auto bytes = SerializeNpy(tensor);
  if (!bytes.ok()) {
    return absl::Status(bytes.status().code(),
                        WithPath(path, std::string(bytes.status().message())));
  }
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::PermissionDeniedError(WithPath(path, "cannot create file"));
  out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
  out.close();
  if (!out) return absl::DataLossError(WithPath(path, "write failed"));
  return absl::OkStatus();
}

}  // namespace rill
