#include "io/bundle_reader.h"

#include <algorithm>
#include <bit>

#include "absl/strings/str_format.h"
#include "graph/allocator.h"
#include "graph/status_macros.h"
#include "io/bundle_format.h"
#include "io/crc32c.h"

namespace rill::io {
namespace {

std::string Printable(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c >= 0x20 && c < 0x7f) {
      out.push_back(c);
    } else {
      out += absl::StrFormat("\\x%02x", static_cast<unsigned char>(c));
    }
  }
  return out;
}

}  // namespace

BundleReader::BundleReader(std::string prefix, Env* env, std::unique_ptr<TableReader> index,
                           BundleHeaderProto header)
    : prefix_(std::move(prefix)), env_(env), index_(std::move(index)), header_(std::move(header)) {}

absl::StatusOr<std::unique_ptr<BundleReader>> BundleReader::Open(std::string prefix, Env* env) {
  const std::string path = IndexFilename(prefix);
  if (!env->FileExists(path)) {
    return absl::NotFoundError(
        absl::StrFormat("no checkpoint at '%s': '%s' does not exist", prefix, path));
  }
  ASSIGN_OR_RETURN(std::unique_ptr<TableReader> index, TableReader::Open(path, env));
  ASSIGN_OR_RETURN(std::optional<std::string> header_bytes, index->Get(kHeaderKey));
  BundleHeaderProto header;
  if (!header_bytes.has_value() || !header.ParseFromString(*header_bytes)) {
    return absl::DataLossError(absl::StrFormat("'%s': no valid checkpoint header", path));
  }
  RETURN_IF_ERROR(CheckBundleHeader(header, path));
  return std::unique_ptr<BundleReader>(
      new BundleReader(std::move(prefix), env, std::move(index), std::move(header)));
}

absl::StatusOr<BundleEntryProto> BundleReader::Entry(std::string_view key) const {
  if (key.empty()) return absl::InvalidArgumentError("empty tensor name");
  ASSIGN_OR_RETURN(std::optional<std::string> bytes, index_->Get(key));
  if (!bytes.has_value()) {
    return absl::NotFoundError(
        absl::StrFormat("tensor '%s' not found in checkpoint '%s'", Printable(key), prefix_));
  }
  BundleEntryProto entry;
  if (!entry.ParseFromString(*bytes)) {
    return absl::DataLossError(
        absl::StrFormat("'%s': entry of '%s' does not parse", index_->path(), Printable(key)));
  }
  return entry;
}

absl::StatusOr<const RandomAccessFile*> BundleReader::DataFile(int shard_id,
                                                               std::string_view key) const {
  if (shard_id < 0 || shard_id >= header_.num_shards()) {
    return absl::DataLossError(absl::StrFormat("'%s': tensor '%s' is in shard %d of %d",
                                               index_->path(), Printable(key), shard_id,
                                               header_.num_shards()));
  }
  absl::MutexLock lock(&mu_);
  std::unique_ptr<RandomAccessFile>& file = data_files_[shard_id];
  if (file == nullptr) {
    ASSIGN_OR_RETURN(
        file, env_->NewRandomAccessFile(DataFilename(prefix_, shard_id, header_.num_shards())));
  }
  return file.get();
}

absl::StatusOr<TensorShape> BundleReader::ShapeOf(std::string_view key,
                                                  const BundleEntryProto& entry) const {
  absl::StatusOr<TensorShape> shape = TensorShape::FromProto(entry.shape());
  if (!shape.ok()) {
    return absl::DataLossError(absl::StrFormat("'%s': tensor '%s' has a bad shape: %s",
                                               index_->path(), Printable(key),
                                               shape.status().message()));
  }
  if (!DataTypeCanBeStored(entry.dtype()) || entry.dtype() == DT_RESOURCE) {
    return absl::UnimplementedError(
        absl::StrFormat("'%s': tensor '%s' has dtype %s, which cannot be restored", index_->path(),
                        Printable(key), DataTypeString(entry.dtype())));
  }
  return shape;
}

absl::StatusOr<Tensor> BundleReader::ReadStored(std::string_view key,
                                                const BundleEntryProto& entry) const {
  ASSIGN_OR_RETURN(const TensorShape shape, ShapeOf(key, entry));
  ASSIGN_OR_RETURN(const RandomAccessFile* file, DataFile(entry.shard_id(), key));
  const std::string where = absl::StrFormat("'%s' (listed in '%s'), tensor '%s'", file->path(),
                                            index_->path(), Printable(key));
  // Summed unsigned: two offsets under 2^63 may add up past it.
  const uint64_t end = static_cast<uint64_t>(entry.offset()) + static_cast<uint64_t>(entry.size());
  if (entry.offset() < 0 || entry.size() < 0 || end > file->size()) {
    return absl::DataLossError(
        absl::StrFormat("%s: bytes [%d, %d) lie past the end of the file (%d bytes): short read",
                        where, entry.offset(), end, file->size()));
  }
  // The shape is checked against the entry's size before it is allocated:
  // an index entry of a few bytes may claim any shape.
  const uint64_t elements = static_cast<uint64_t>(shape.num_elements());
  const uint64_t want = static_cast<uint64_t>(entry.size());
  if (entry.dtype() == DT_STRING) {
    // Every string takes at least its length's varint byte.
    if (elements > want) {
      return absl::DataLossError(
          absl::StrFormat("%s: %d strings need at least %d bytes, the entry has %d", where,
                          elements, elements, entry.size()));
    }
  } else {
    uint64_t needed = 0;
    const bool overflows = __builtin_mul_overflow(
        elements, static_cast<uint64_t>(DataTypeSize(entry.dtype())), &needed);
    if (overflows || needed != want) {
      return absl::DataLossError(absl::StrFormat(
          "%s: %s %s needs %s bytes, the entry has %d", where, DataTypeString(entry.dtype()),
          shape.DebugString(), overflows ? "over 2^64" : std::to_string(needed), entry.size()));
    }
  }
  ASSIGN_OR_RETURN(Tensor tensor, Tensor::Allocate(CpuAllocator(), entry.dtype(), shape));
  uint32_t crc = 0;
  if (entry.dtype() == DT_STRING) {
    std::string bytes(entry.size(), '\0');
    RETURN_IF_ERROR(file->Read(entry.offset(), bytes.size(), bytes.data()));
    RETURN_IF_ERROR(DecodeStringTensor(bytes, tensor, &crc, where));
  } else {
    auto* dst = static_cast<char*>(tensor.raw_data());
    for (uint64_t done = 0; done < want;) {
      const size_t n = static_cast<size_t>(std::min<uint64_t>(want - done, kChecksumChunkBytes));
      RETURN_IF_ERROR(file->Read(static_cast<uint64_t>(entry.offset()) + done, n, dst + done));
      crc = crc32c::Extend(crc, dst + done, n);
      done += n;
    }
  }
  if (crc32c::Mask(crc) != entry.crc32c()) {
    return absl::DataLossError(absl::StrFormat(
        "%s: checksum mismatch (stored %#x, computed %#x): the data file is corrupt", where,
        crc32c::Unmask(entry.crc32c()), crc));
  }
  const bool file_is_little = header_.endianness() == BundleHeaderProto::LITTLE;
  if (file_is_little != (std::endian::native == std::endian::little) &&
      entry.dtype() != DT_STRING) {
    ByteSwapTensor(tensor);
  }
  return tensor;
}

absl::StatusOr<Tensor> BundleReader::Read(std::string_view key) const {
  ASSIGN_OR_RETURN(const BundleEntryProto entry, Entry(key));
  if (entry.slices_size() == 0) return ReadStored(key, entry);
  ASSIGN_OR_RETURN(const TensorShape shape, ShapeOf(key, entry));
  return ReadSlice(key, shape, TensorSlice::Full(shape.dims()));
}

absl::StatusOr<Tensor> BundleReader::ReadSlice(std::string_view key, const TensorShape& full_shape,
                                               const TensorSlice& slice) const {
  ASSIGN_OR_RETURN(const BundleEntryProto entry, Entry(key));
  ASSIGN_OR_RETURN(const TensorShape stored_shape, ShapeOf(key, entry));
  if (!(stored_shape == full_shape)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "tensor '%s' in checkpoint '%s' has shape %s, the restore asks for %s", Printable(key),
        prefix_, stored_shape.DebugString(), full_shape.DebugString()));
  }
  RETURN_IF_ERROR(slice.CheckFits(full_shape));
  if (entry.slices_size() == 0) {
    ASSIGN_OR_RETURN(Tensor whole, ReadStored(key, entry));
    if (slice.IsFull()) return whole;
    ASSIGN_OR_RETURN(Tensor part,
                     Tensor::Allocate(CpuAllocator(), entry.dtype(), slice.SliceShape(full_shape)));
    CopySliceData(whole, TensorSlice::Full(full_shape.dims()), part, slice, full_shape);
    return part;
  }
  ASSIGN_OR_RETURN(Tensor result,
                   Tensor::Allocate(CpuAllocator(), entry.dtype(), slice.SliceShape(full_shape)));
  int64_t covered = 0;
  for (const TensorSliceProto& piece_proto : entry.slices()) {
    absl::StatusOr<TensorSlice> piece = TensorSlice::FromProto(piece_proto);
    if (!piece.ok() || !piece->CheckFits(full_shape).ok()) {
      return absl::DataLossError(
          absl::StrFormat("'%s': tensor '%s' lists a bad slice", index_->path(), Printable(key)));
    }
    const std::optional<TensorSlice> common = piece->Intersect(slice, full_shape);
    if (!common.has_value()) continue;
    const std::string piece_key = SliceKey(key, *piece);
    ASSIGN_OR_RETURN(const BundleEntryProto piece_entry, Entry(piece_key));
    ASSIGN_OR_RETURN(Tensor piece_tensor, ReadStored(piece_key, piece_entry));
    if (piece_tensor.dtype() != entry.dtype() ||
        !(piece_tensor.shape() == piece->SliceShape(full_shape))) {
      return absl::DataLossError(
          absl::StrFormat("'%s': slice '%s' of tensor '%s' has the wrong dtype or shape",
                          index_->path(), piece->DebugString(), Printable(key)));
    }
    CopySliceData(piece_tensor, *piece, result, slice, full_shape);
    covered += common->SliceShape(full_shape).num_elements();
  }
  // Saved pieces do not overlap, so a complete restore covers every element.
  if (covered != result.NumElements()) {
    return absl::NotFoundError(
        absl::StrFormat("checkpoint '%s' does not hold all of slice '%s' of tensor '%s'", prefix_,
                        slice.DebugString(), Printable(key)));
  }
  return result;
}

absl::Status BundleReader::ForEachEntry(
    const std::function<absl::Status(std::string_view key, const BundleEntryProto& entry)>& visit)
    const {
  return index_->ForEach([&](std::string_view key, std::string_view value) -> absl::Status {
    if (key.empty()) return absl::OkStatus();
    BundleEntryProto entry;
    if (!entry.ParseFromArray(value.data(), static_cast<int>(value.size()))) {
      return absl::DataLossError(
          absl::StrFormat("'%s': entry of '%s' does not parse", index_->path(), Printable(key)));
    }
    return visit(key, entry);
  });
}

}  // namespace rill::io
