#include "io/bundle_format.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "io/crc32c.h"

namespace rill::io {
namespace {

void PutVarint64(std::string* dst, uint64_t v) {
  while (v >= 0x80) {
    dst->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  dst->push_back(static_cast<char>(v));
}

bool GetVarint64(std::string_view* in, uint64_t* v) {
  uint64_t result = 0;
  for (int shift = 0; shift <= 63 && !in->empty(); shift += 7) {
    const auto byte = static_cast<uint8_t>(in->front());
    in->remove_prefix(1);
    result |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) {
      *v = result;
      return true;
    }
  }
  return false;
}

// The lengths enter the checksum as uint32 LE, or uint64 LE when they do
// not fit (TensorFlow's rule; not the varint bytes).
uint32_t ExtendWithLength(uint32_t crc, uint64_t length) {
  if (length <= 0xffffffffu) {
    const uint32_t small = static_cast<uint32_t>(length);
    return crc32c::Extend(crc, &small, sizeof(small));
  }
  return crc32c::Extend(crc, &length, sizeof(length));
}

void AppendFixed32(std::string* dst, uint32_t v) {
  char bytes[4];
  std::memcpy(bytes, &v, 4);
  dst->append(bytes, 4);
}

// OrderedCode (TensorFlow's strings/ordered_code): encodings whose
// byte-wise order is the order of the values.
void WriteNumIncreasing(std::string* dst, uint64_t v) {
  unsigned char buf[9];
  int len = 0;
  while (v > 0) {
    buf[8 - len++] = static_cast<unsigned char>(v & 0xff);
    v >>= 8;
  }
  dst->push_back(static_cast<char>(len));
  dst->append(reinterpret_cast<const char*>(buf + 9 - len), len);
}

void WriteOrderedString(std::string* dst, std::string_view s) {
  for (char c : s) {
    if (c == '\x00') {
      dst->append("\x00\xff", 2);
    } else if (c == '\xff') {
      dst->append("\xff\x00", 2);
    } else {
      dst->push_back(c);
    }
  }
  dst->append("\x00\x01", 2);
}

void WriteSignedNumIncreasing(std::string* dst, int64_t v) {
  static constexpr unsigned char kHeaderBits[11][2] = {
      {0, 0},    {0x80, 0}, {0xc0, 0}, {0xe0, 0},    {0xf0, 0},   {0xf8, 0},
      {0xfc, 0}, {0xfe, 0}, {0xff, 0}, {0xff, 0x80}, {0xff, 0xc0}};
  const uint64_t x = v < 0 ? ~static_cast<uint64_t>(v) : static_cast<uint64_t>(v);
  if (x < 64) {
    dst->push_back(static_cast<char>(kHeaderBits[1][0] ^ static_cast<uint8_t>(v)));
    return;
  }
  const int bits = 64 - std::countl_zero(x);  // significant bits of x
  const int len = bits / 7 + 1;
  unsigned char buf[10];
  const unsigned char sign = v < 0 ? 0xff : 0x00;
  buf[0] = buf[1] = sign;
  const auto u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) buf[2 + i] = static_cast<unsigned char>(u >> (56 - 8 * i));
  unsigned char* begin = buf + sizeof(buf) - len;
  begin[0] ^= kHeaderBits[len][0];
  begin[1] ^= kHeaderBits[len][1];
  dst->append(reinterpret_cast<const char*>(begin), len);
}

// Row-major strides (in elements) of `shape`.
std::vector<int64_t> Strides(const TensorShape& shape) {
  std::vector<int64_t> strides(shape.dims(), 1);
  for (int d = shape.dims() - 2; d >= 0; --d) strides[d] = strides[d + 1] * shape.dim_size(d + 1);
  return strides;
}

}  // namespace

std::string IndexFilename(std::string_view prefix) {
  return absl::StrFormat("%s.index", std::string(prefix));
}

std::string DataFilename(std::string_view prefix, int shard, int num_shards) {
  return absl::StrFormat("%s.data-%05d-of-%05d", std::string(prefix), shard, num_shards);
}

BundleHeaderProto MakeBundleHeader(int num_shards) {
  BundleHeaderProto header;
  header.set_num_shards(num_shards);
  header.set_endianness(std::endian::native == std::endian::little ? BundleHeaderProto::LITTLE
                                                                   : BundleHeaderProto::BIG);
  header.mutable_version()->set_producer(kTensorBundleVersion);
  return header;
}

absl::Status CheckBundleHeader(const BundleHeaderProto& header, const std::string& path) {
  const VersionDef& version = header.version();
  if (version.producer() < kTensorBundleMinProducer ||
      version.min_consumer() > kTensorBundleVersion ||
      std::find(version.bad_consumers().begin(), version.bad_consumers().end(),
                kTensorBundleVersion) != version.bad_consumers().end()) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "'%s': checkpoint version (producer %d, min_consumer %d) cannot be read by version %d",
        path, version.producer(), version.min_consumer(), kTensorBundleVersion));
  }
  if (header.num_shards() <= 0) {
    return absl::DataLossError(
        absl::StrFormat("'%s': header has %d shards", path, header.num_shards()));
  }
  return absl::OkStatus();
}

std::string EncodeStringTensor(const Tensor& tensor, uint32_t* crc) {
  const std::string* strings = tensor.data<std::string>();
  const int64_t n = tensor.NumElements();
  std::string out;
  uint32_t lengths_crc = 0;
  for (int64_t i = 0; i < n; ++i) {
    PutVarint64(&out, strings[i].size());
    lengths_crc = ExtendWithLength(lengths_crc, strings[i].size());
  }
  const uint32_t masked = crc32c::Mask(lengths_crc);
  AppendFixed32(&out, masked);
  uint32_t entry_crc = crc32c::Extend(lengths_crc, &masked, sizeof(masked));
  for (int64_t i = 0; i < n; ++i) {
    out.append(strings[i]);
    entry_crc = crc32c::Extend(entry_crc, strings[i].data(), strings[i].size());
  }
  *crc = entry_crc;
  return out;
}

absl::Status DecodeStringTensor(std::string_view data, const Tensor& out, uint32_t* crc,
                                const std::string& where) {
  const int64_t n = out.NumElements();
  std::string* strings = out.data<std::string>();
  std::string_view in = data;
  std::vector<uint64_t> lengths(n);
  uint32_t lengths_crc = 0;
  uint64_t total = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (!GetVarint64(&in, &lengths[i])) {
      return absl::DataLossError(
          absl::StrFormat("%s: string tensor: length %d of %d is cut off", where, i, n));
    }
    lengths_crc = ExtendWithLength(lengths_crc, lengths[i]);
    // Checked as they add up: lengths near 2^64 would wrap the sum to the
    // size of the entry, and each string would then read past it.
    if (lengths[i] > data.size() || (total += lengths[i]) > data.size()) {
      return absl::DataLossError(absl::StrFormat(
          "%s: string tensor: the lengths up to %d of %d add up to more than the entry's %d bytes",
          where, i, n, data.size()));
    }
  }
  uint32_t stored;
  if (in.size() < sizeof(stored)) {
    return absl::DataLossError(
        absl::StrFormat("%s: string tensor: the lengths' checksum is cut off", where));
  }
  std::memcpy(&stored, in.data(), sizeof(stored));
  in.remove_prefix(sizeof(stored));
  if (crc32c::Unmask(stored) != lengths_crc) {
    return absl::DataLossError(absl::StrFormat(
        "%s: string tensor: checksum mismatch in the lengths (stored %#x, computed %#x)", where,
        crc32c::Unmask(stored), lengths_crc));
  }
  if (total != in.size()) {
    return absl::DataLossError(
        absl::StrFormat("%s: string tensor: the lengths add up to %d bytes, the entry holds %d",
                        where, total, in.size()));
  }
  // The entry's checksum covers the lengths as the lengths' checksum does,
  // then that checksum's stored bytes, then the strings.
  uint32_t entry_crc = crc32c::Extend(lengths_crc, &stored, sizeof(stored));
  for (int64_t i = 0; i < n; ++i) {
    strings[i].assign(in.data(), lengths[i]);
    entry_crc = crc32c::Extend(entry_crc, in.data(), lengths[i]);
    in.remove_prefix(lengths[i]);
  }
  *crc = entry_crc;
  return absl::OkStatus();
}

void ByteSwapTensor(const Tensor& tensor) {
  int width = DataTypeSize(tensor.dtype());
  int64_t count = tensor.NumElements();
  // A complex number is two floats, each swapped on its own.
  if (tensor.dtype() == DT_COMPLEX64 || tensor.dtype() == DT_COMPLEX128) {
    width /= 2;
    count *= 2;
  }
  if (width <= 1) return;
  auto* bytes = static_cast<unsigned char*>(tensor.raw_data());
  for (int64_t i = 0; i < count; ++i) std::reverse(bytes + i * width, bytes + (i + 1) * width);
}

std::string SliceKey(std::string_view name, const TensorSlice& slice) {
  std::string key;
  WriteNumIncreasing(&key, 0);
  WriteOrderedString(&key, name);
  WriteNumIncreasing(&key, static_cast<uint64_t>(slice.dims()));
  for (int d = 0; d < slice.dims(); ++d) {
    // A whole dimension is stored as start 0, length -1.
    WriteSignedNumIncreasing(&key, slice.start(d));
    WriteSignedNumIncreasing(&key, slice.raw_length(d));
  }
  return key;
}

void CopySliceData(const Tensor& src, const TensorSlice& src_slice, const Tensor& dst,
                   const TensorSlice& dst_slice, const TensorShape& full) {
  const std::optional<TensorSlice> common = src_slice.Intersect(dst_slice, full);
  if (!common.has_value()) return;
  const int rank = full.dims();
  const TensorShape src_shape = src_slice.SliceShape(full);
  const TensorShape dst_shape = dst_slice.SliceShape(full);
  const TensorShape region = common->SliceShape(full);
  if (region.num_elements() == 0) return;
  const std::vector<int64_t> src_strides = Strides(src_shape);
  const std::vector<int64_t> dst_strides = Strides(dst_shape);
  const auto copy_rows = [&]<typename T>(T* dst_data, const T* src_data) {
    // Walk every index of the region but the last dimension, copying rows.
    const int64_t row = rank == 0 ? 1 : region.dim_size(rank - 1);
    std::vector<int64_t> index(rank, 0);
    while (true) {
      int64_t s = 0, d = 0;
      for (int i = 0; i < rank; ++i) {
        const int64_t at = common->start(i) + index[i];
        s += (at - src_slice.start(i)) * src_strides[i];
        d += (at - dst_slice.start(i)) * dst_strides[i];
      }
      std::copy(src_data + s, src_data + s + row, dst_data + d);
      int i = rank - 2;
      for (; i >= 0; --i) {
        if (++index[i] < region.dim_size(i)) break;
        index[i] = 0;
      }
      if (i < 0) return;
    }
  };
  const auto copy_as = [&]<typename T>() {
    copy_rows(static_cast<T*>(dst.raw_data()), static_cast<const T*>(src.raw_data()));
  };
  // Numeric elements are copied as opaque units of their width.
  switch (src.dtype() == DT_STRING ? 0 : DataTypeSize(src.dtype())) {
    case 0:
      copy_as.operator()<std::string>();
      break;
    case 1:
      copy_as.operator()<uint8_t>();
      break;
    case 2:
      copy_as.operator()<uint16_t>();
      break;
    case 4:
      copy_as.operator()<uint32_t>();
      break;
    case 8:
      copy_as.operator()<uint64_t>();
      break;
    default:
      copy_as.operator()<std::array<uint64_t, 2>>();
      break;
  }
}

}  // namespace rill::io
