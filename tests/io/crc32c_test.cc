#include "io/crc32c.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace rill::crc32c {
namespace {

// TensorFlow's own test vectors (TF_TRAINING_FORMATS.md, section 0).
TEST(Crc32cTest, MatchesTheKnownVectors) {
  std::vector<uint8_t> buf(32, 0x00);
  EXPECT_EQ(Value(buf.data(), buf.size()), 0x8a9136aau);
  buf.assign(32, 0xff);
  EXPECT_EQ(Value(buf.data(), buf.size()), 0x62a8ab43u);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(i);
  EXPECT_EQ(Value(buf.data(), buf.size()), 0x46dd794eu);
  for (int i = 0; i < 32; ++i) buf[i] = static_cast<uint8_t>(31 - i);
  EXPECT_EQ(Value(buf.data(), buf.size()), 0x113fdb5cu);
}

TEST(Crc32cTest, ExtendContinuesARunningValue) {
  const std::string text = "hello, checkpoint world: some bytes past eight";
  for (size_t split = 0; split <= text.size(); ++split) {
    const uint32_t head = Value(text.data(), split);
    EXPECT_EQ(Extend(head, text.data() + split, text.size() - split), Value(text)) << split;
  }
}

// One bit at a time, straight from the definition.
uint32_t BitwiseValue(const uint8_t* p, size_t n) {
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ ((c & 1) ? 0x82f63b78u : 0);
  }
  return ~c;
}

std::vector<uint8_t> RandomBytes(size_t n, unsigned seed) {
  std::mt19937 random(seed);
  std::vector<uint8_t> bytes(n);
  for (uint8_t& b : bytes) b = static_cast<uint8_t>(random());
  return bytes;
}

// Long buffers are checksummed in three interleaved streams of 8 KiB or
// 256 bytes that are joined afterwards; every length around those blocks,
// at every alignment, must give the plain definition's value.
TEST(Crc32cTest, LongBuffersMatchTheDefinitionAtEveryLengthAndAlignment) {
  const std::vector<uint8_t> bytes = RandomBytes(4 * 3 * 8192 + 64, 1);
  std::vector<size_t> lengths;
  for (size_t n = 0; n <= 1024; ++n) lengths.push_back(n);
  for (size_t block :
       {size_t{3 * 256}, size_t{3 * 8192}, size_t{2 * 3 * 8192}, size_t{4 * 3 * 8192}}) {
    for (size_t n = block - 17; n <= block + 17; ++n) lengths.push_back(n);
  }
  lengths.push_back(3 * 8192 + 3 * 256 + 5);
  lengths.push_back(2 * 3 * 8192 + 2 * 3 * 256 + 255);
  for (size_t offset = 0; offset < 8; ++offset) {
    for (size_t n : lengths) {
      ASSERT_LE(offset + n, bytes.size());
      ASSERT_EQ(Value(bytes.data() + offset, n), BitwiseValue(bytes.data() + offset, n))
          << "offset " << offset << ", length " << n;
    }
  }
}

TEST(Crc32cTest, ExtendJoinsLongPiecesSplitAnywhere) {
  const std::vector<uint8_t> bytes = RandomBytes(3 * 3 * 8192 + 1000, 2);
  const uint32_t whole = BitwiseValue(bytes.data(), bytes.size());
  std::mt19937 random(3);
  for (int i = 0; i < 200; ++i) {
    const size_t split = random() % (bytes.size() + 1);
    const uint32_t head = Value(bytes.data(), split);
    EXPECT_EQ(Extend(head, bytes.data() + split, bytes.size() - split), whole) << split;
  }
}

TEST(Crc32cTest, MaskRoundTripsAndDiffers) {
  EXPECT_EQ(Mask(0), kMaskDelta);
  for (uint32_t crc : {0u, 1u, 0x8a9136aau, 0xffffffffu}) {
    EXPECT_EQ(Unmask(Mask(crc)), crc);
    EXPECT_NE(Mask(crc), crc);
  }
}

}  // namespace
}  // namespace rill::crc32c
