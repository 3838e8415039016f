#include "runtime/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <memory>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

struct IdxType {
  uint8_t code;
  DataType dtype;
  int size;
};

constexpr IdxType kIdxTypes[] = {
    {0x08, DT_UINT8, 1}, {0x09, DT_INT8, 1},  {0x0B, DT_INT16, 2},
    {0x0C, DT_INT32, 4}, {0x0D, DT_FLOAT, 4}, {0x0E, DT_DOUBLE, 8},
};

absl::Status Invalid(std::string_view source, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("%s: %s", source, what));
}

std::string DimsString(const std::vector<int64_t>& dims) {
  std::string out = "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i > 0) out += ',';
    out += std::to_string(dims[i]);
  }
  return out + "]";
}

// IDX data is big-endian; the machines we run on are little-endian.
void CopyBigEndian(const unsigned char* src, unsigned char* dst, int64_t count, int size) {
  if (size == 1) {
    std::memcpy(dst, src, static_cast<size_t>(count));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    std::reverse_copy(src + i * size, src + (i + 1) * size, dst + i * size);
  }
}

struct GzCloser {
  void operator()(gzFile_s* file) const { gzclose(file); }
};

absl::StatusOr<std::string> ReadMaybeGzipped(const std::string& path) {
  errno = 0;
  std::unique_ptr<gzFile_s, GzCloser> file(gzopen(path.c_str(), "rb"));
  if (file == nullptr) {
    return absl::NotFoundError(absl::StrFormat("%s: cannot open file (%s)", path,
                                               errno != 0 ? std::strerror(errno) : "no memory"));
  }
  gzbuffer(file.get(), 1 << 17);
  std::string bytes;
  constexpr size_t kChunk = 1 << 20;
  while (true) {
    const size_t old_size = bytes.size();
    bytes.resize(old_size + kChunk);
    const int n = gzread(file.get(), bytes.data() + old_size, kChunk);
    bytes.resize(old_size + std::max(n, 0));
    if (n <= 0) break;
  }
  int error = Z_OK;
  const char* message = gzerror(file.get(), &error);
  if (error != Z_OK && error != Z_STREAM_END) {
    return absl::DataLossError(absl::StrFormat(
        "%s: corrupt gzip data after %d decompressed bytes: %s", path, bytes.size(), message));
  }
  return bytes;
}

std::string FileIn(const std::string& dir, const std::string& name) {
  const std::string gz = dir + "/" + name + ".gz";
  return std::filesystem::exists(gz) ? gz : dir + "/" + name;
}

template <typename Label>
void WidenLabels(const Tensor& in, Tensor& out) {
  const uint8_t* src = in.data<uint8_t>();
  Label* dst = out.data<Label>();
  for (int64_t i = 0; i < in.NumElements(); ++i) dst[i] = src[i];
}

}  // namespace

absl::StatusOr<Tensor> ParseIdx(std::string_view bytes, std::string_view source) {
  const auto* raw = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() < 4) {
    return Invalid(source, absl::StrFormat("truncated header: %d bytes, an IDX header needs at "
                                           "least 4",
                                           bytes.size()));
  }
  if (raw[0] != 0 || raw[1] != 0) {
    return Invalid(source, absl::StrFormat("bad magic at byte offset 0: expected 00 00, got "
                                           "%02x %02x (not an IDX file, or still compressed?)",
                                           raw[0], raw[1]));
  }
  const IdxType* type = nullptr;
  for (const IdxType& t : kIdxTypes) {
    if (t.code == raw[2]) type = &t;
  }
  if (type == nullptr) {
    return Invalid(source, absl::StrFormat("unknown data type 0x%02x at byte offset 2", raw[2]));
  }
  const int rank = raw[3];
  if (rank > kMaxTensorRank) {
    return Invalid(source,
                   absl::StrFormat("rank %d at byte offset 3 exceeds %d", rank, kMaxTensorRank));
  }
  const size_t header_end = 4 + 4 * static_cast<size_t>(rank);
  if (bytes.size() < header_end) {
    return Invalid(source, absl::StrFormat("truncated header: %d dimensions end at byte offset "
                                           "%d, but the input ends at byte offset %d",
                                           rank, header_end, bytes.size()));
  }
  std::vector<int64_t> dims(rank);
  int64_t count = 1;
  for (int i = 0; i < rank; ++i) {
    const unsigned char* p = raw + 4 + 4 * i;
    dims[i] = (int64_t{p[0]} << 24) | (int64_t{p[1]} << 16) | (int64_t{p[2]} << 8) | p[3];
    if (__builtin_mul_overflow(count, dims[i], &count) ||
        count > std::numeric_limits<int64_t>::max() / type->size) {
      return Invalid(source, absl::StrFormat("dimension %d at byte offset %d makes the element "
                                             "count overflow",
                                             i, 4 + 4 * i));
    }
  }
  const size_t data_bytes = static_cast<size_t>(count) * type->size;
  const size_t available = bytes.size() - header_end;
  if (available < data_bytes) {
    return Invalid(source, absl::StrFormat("truncated data: shape %s of %s needs %d bytes from "
                                           "byte offset %d, but the input ends at byte offset %d",
                                           DimsString(dims), DataTypeString(type->dtype),
                                           data_bytes, header_end, bytes.size()));
  }
  if (available > data_bytes) {
    return Invalid(source, absl::StrFormat("%d unexpected bytes after the data, which ends at "
                                           "byte offset %d",
                                           available - data_bytes, header_end + data_bytes));
  }
  ASSIGN_OR_RETURN(const TensorShape shape, TensorShape::Create(dims));
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(CpuAllocator(), type->dtype, shape));
  if (count > 0) {
    CopyBigEndian(raw + header_end, static_cast<unsigned char*>(tensor.raw_data()), count,
                  type->size);
  }
  return tensor;
}

absl::StatusOr<Tensor> ReadIdx(const std::string& path) {
  ASSIGN_OR_RETURN(const std::string bytes, ReadMaybeGzipped(path));
  return ParseIdx(bytes, path);
}

absl::StatusOr<MnistData> LoadMnist(const std::string& dir, MnistSplit split,
                                    DataType label_dtype) {
  if (label_dtype != DT_INT32 && label_dtype != DT_INT64) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MNIST labels can be int32 or int64, not %s", DataTypeString(label_dtype)));
  }
  const std::string prefix = split == MnistSplit::kTrain ? "train" : "t10k";
  const std::string images_path = FileIn(dir, prefix + "-images-idx3-ubyte");
  const std::string labels_path = FileIn(dir, prefix + "-labels-idx1-ubyte");
  ASSIGN_OR_RETURN(const Tensor images, ReadIdx(images_path));
  ASSIGN_OR_RETURN(const Tensor labels, ReadIdx(labels_path));
  if (images.dtype() != DT_UINT8 || images.dims() != 3) {
    return Invalid(images_path,
                   absl::StrFormat("expected uint8 images [N,rows,cols], got %s %s",
                                   DataTypeString(images.dtype()), images.shape().DebugString()));
  }
  if (labels.dtype() != DT_UINT8 || labels.dims() != 1 ||
      labels.dim_size(0) != images.dim_size(0)) {
    return Invalid(labels_path, absl::StrFormat("expected uint8 labels [%d] for the images, got "
                                                "%s %s",
                                                images.dim_size(0), DataTypeString(labels.dtype()),
                                                labels.shape().DebugString()));
  }
  const int64_t n = images.dim_size(0);
  const int64_t pixels = images.dim_size(1) * images.dim_size(2);
  MnistData data;
  data.images = Tensor(DT_FLOAT, TensorShape({n, pixels}));
  const uint8_t* src = images.data<uint8_t>();
  float* dst = data.images.data<float>();
  for (int64_t i = 0; i < n * pixels; ++i) dst[i] = static_cast<float>(src[i]) / 255.0f;
  data.labels = Tensor(label_dtype, TensorShape({n}));
  if (label_dtype == DT_INT32) {
    WidenLabels<int32_t>(labels, data.labels);
  } else {
    WidenLabels<int64_t>(labels, data.labels);
  }
  return data;
}

}  // namespace rill
