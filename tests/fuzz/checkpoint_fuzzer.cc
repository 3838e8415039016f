// A V2 checkpoint (tensor bundle) as Restore reads it. Parts, split at
// kPartSeparator: the data file, then either the .index file itself (one
// part ending in the table format's magic number) or the index's entries,
// one part each (a key-length byte, the key, the value), which the target
// writes as a table. Entries let the fuzzer change the header and
// BundleEntryProtos without breaking the table's block checksums. Every
// tensor the index lists is read, whole and by a slice.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/tensor_slice.h"
#include "io/bundle_format.h"
#include "io/bundle_reader.h"
#include "io/posix_file.h"
#include "io/table.h"
#include "tests/fuzz/fuzz_util.h"

namespace rill::fuzz {
namespace {

// The last 8 bytes of a LevelDB table, little-endian.
constexpr std::string_view kTableMagic = "\x57\xfb\x80\x8b\x24\x75\x47\xdb";
// Data files written for the shards the header announces, at most.
constexpr int kMaxShardFiles = 4;

void WriteIndex(const std::vector<std::string_view>& parts, const std::string& path) {
  if (parts.size() == 2 && parts[1].ends_with(kTableMagic)) {
    WriteFile(path, parts[1]);
    return;
  }
  std::map<std::string, std::string> entries;  // Sorted, as a table needs.
  for (size_t i = 1; i < parts.size(); ++i) {
    std::string_view part = parts[i];
    if (part.empty()) continue;
    const size_t key_length =
        std::min<size_t>(static_cast<unsigned char>(part[0]), part.size() - 1);
    entries[std::string(part.substr(1, key_length))] = std::string(part.substr(1 + key_length));
  }
  absl::StatusOr<std::unique_ptr<io::WritableFile>> file = io::WritableFile::Create(path);
  Check(file.ok(), "cannot create the index file");
  io::TableWriter table(file->get());
  for (const auto& [key, value] : entries) Check(table.Add(key, value).ok(), "cannot add an entry");
  Check(table.Finish().ok() && (*file)->Close().ok(), "cannot write the index file");
}

// Data files for the shards the header names (the same bytes for each).
void WriteDataFiles(const std::string& prefix, std::string_view data) {
  absl::StatusOr<std::unique_ptr<io::TableReader>> index =
      io::TableReader::Open(io::IndexFilename(prefix));
  if (!index.ok()) return;
  absl::StatusOr<std::optional<std::string>> header_bytes = (*index)->Get(io::kHeaderKey);
  BundleHeaderProto header;
  if (!header_bytes.ok() || !header_bytes->has_value() || !header.ParseFromString(**header_bytes)) {
    return;
  }
  const int shards = header.num_shards();
  for (int shard = 0; shard < std::min(shards, kMaxShardFiles); ++shard) {
    WriteFile(io::DataFilename(prefix, shard, shards), data);
  }
}

// The first half (rounded up) of dimension 0.
void ReadHalf(const io::BundleReader& reader, std::string_view key, const TensorShape& shape) {
  if (shape.dims() == 0) return;
  TensorSlice slice = TensorSlice::Full(shape.dims());
  slice.Set(0, 0, (shape.dim_size(0) + 1) / 2);
  absl::StatusOr<Tensor> part = reader.ReadSlice(key, shape, slice);
  if (part.ok()) (void)TouchElements(*part);
}

}  // namespace
}  // namespace rill::fuzz

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rill::fuzz::Initialize(size_t{64} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  const std::vector<std::string_view> parts =
      fuzz::Split(fuzz::AsView(data, size), fuzz::kPartSeparator);
  if (parts.size() < 2) return 0;
  const std::string dir = fuzz::FreshScratchDir("checkpoint");
  const std::string prefix = dir + "/ckpt";
  fuzz::WriteIndex(parts, io::IndexFilename(prefix));
  fuzz::WriteDataFiles(prefix, parts[0]);

  absl::StatusOr<std::unique_ptr<io::BundleReader>> reader = io::BundleReader::Open(prefix);
  if (!reader.ok()) return 0;
  std::vector<std::pair<std::string, BundleEntryProto>> entries;
  (void)(*reader)->ForEachEntry([&](std::string_view key, const BundleEntryProto& entry) {
    entries.emplace_back(std::string(key), entry);
    return absl::OkStatus();
  });
  for (const auto& [key, entry] : entries) {
    absl::StatusOr<Tensor> tensor = (*reader)->Read(key);
    if (!tensor.ok()) continue;
    (void)fuzz::TouchElements(*tensor);
    fuzz::Check(tensor->dtype() == entry.dtype(), "a tensor read has another dtype than its entry");
    fuzz::ReadHalf(**reader, key, tensor->shape());
  }
  return 0;
}
