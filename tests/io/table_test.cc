#include "io/table.h"

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/crc32c.h"
#include "io/posix_file.h"
#include "tests/test_util.h"

namespace rill::io {
namespace {

using ::rill::testing::IsOk;
using ::rill::testing::IsOkAndHolds;
using ::rill::testing::MakeTempDir;
using ::rill::testing::ReadFileOrDie;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

constexpr char kMagic[] = "\x57\xfb\x80\x8b\x24\x75\x47\xdb";

std::string Varint(uint64_t v) {
  std::string out;
  for (; v >= 0x80; v >>= 7) out += static_cast<char>(v | 0x80);
  return out + static_cast<char>(v);
}

uint64_t GetVarint(const std::string& bytes, size_t* pos) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    const auto byte = static_cast<unsigned char>(bytes[(*pos)++]);
    v |= static_cast<uint64_t>(byte & 0x7f) << shift;
    if ((byte & 0x80) == 0) return v;
  }
}

std::string WriteBytes(const std::string& bytes) {
  const std::string path = MakeTempDir() + "/table";
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  return path;
}

TEST(Table, EntriesRoundTrip) {
  const std::string path = MakeTempDir() + "/table";
  {
    absl::StatusOr<std::unique_ptr<WritableFile>> file = WritableFile::Create(path);
    ASSERT_THAT(file, IsOk());
    TableWriter table(file->get());
    ASSERT_THAT(table.Add("a", "1"), IsOk());
    ASSERT_THAT(table.Add("b", std::string(300, 'x')), IsOk());
    ASSERT_THAT(table.Finish(), IsOk());
    ASSERT_THAT((*file)->Close(), IsOk());
  }
  absl::StatusOr<std::unique_ptr<TableReader>> reader = TableReader::Open(path);
  ASSERT_THAT(reader, IsOk());
  EXPECT_THAT((*reader)->Get("b"), IsOkAndHolds(std::string(300, 'x')));
  EXPECT_THAT((*reader)->Get("c"), IsOkAndHolds(std::nullopt));
}

// Found by the checkpoint fuzz target: a 230-byte .index whose footer gave
// its index block a size of 32 GiB, which LevelDB allocated before reading.
TEST(Table, AFooterHandlePastTheEndIsDataLossBeforeAnythingIsAllocated) {
  std::string footer = Varint(0) + Varint(0) + Varint(4) + Varint((uint64_t{1} << 35) - 1);
  footer.resize(40, '\0');
  const std::string path = WriteBytes(std::string(182, '\0') + footer + std::string(kMagic, 8));
  EXPECT_THAT(TableReader::Open(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("the index block [4, +34359738367) lies past its blocks' end "
                                 "at byte 182")));
}

// The same for a data block's handle in the index block (whose checksum
// is right): LevelDB would allocate it when the block is first read.
TEST(Table, ADataBlockHandlePastTheEndIsDataLoss) {
  const std::string path = MakeTempDir() + "/table";
  {
    absl::StatusOr<std::unique_ptr<WritableFile>> file = WritableFile::Create(path);
    ASSERT_THAT(file, IsOk());
    TableWriter table(file->get());
    // A data block over 127 bytes: its size is a two-byte varint.
    ASSERT_THAT(table.Add("k", std::string(200, 'v')), IsOk());
    ASSERT_THAT(table.Finish(), IsOk());
    ASSERT_THAT((*file)->Close(), IsOk());
  }
  std::string bytes = ReadFileOrDie(path);
  size_t pos = bytes.size() - 48;
  GetVarint(bytes, &pos);  // The metaindex block's handle.
  GetVarint(bytes, &pos);
  const uint64_t index_offset = GetVarint(bytes, &pos);
  const uint64_t index_size = GetVarint(bytes, &pos);
  // The index block's one entry: no shared key bytes, the key, then the
  // data block's handle as its value.
  pos = index_offset;
  ASSERT_EQ(GetVarint(bytes, &pos), 0u);
  const uint64_t key_size = GetVarint(bytes, &pos);
  GetVarint(bytes, &pos);  // The value's size.
  pos += key_size;
  ASSERT_EQ(GetVarint(bytes, &pos), 0u);  // The data block's offset.
  const size_t size_at = pos;
  ASSERT_GE(GetVarint(bytes, &pos), 200u);
  ASSERT_EQ(pos - size_at, 2u);
  bytes[size_at] = '\xff';
  bytes[size_at + 1] = '\x7f';  // 16383.
  // The block's checksum covers its bytes and its type byte (0).
  uint32_t crc = crc32c::Value(bytes.data() + index_offset, index_size + 1);
  crc = crc32c::Mask(crc);
  bytes.replace(index_offset + index_size + 1, 4, reinterpret_cast<const char*>(&crc), 4);
  EXPECT_THAT(TableReader::Open(WriteBytes(bytes)),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("a data block [0, +16383) lies past its blocks' end")));
}

}  // namespace
}  // namespace rill::io
