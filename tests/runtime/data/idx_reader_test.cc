#include "runtime/data/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using testing::StatusIs;

std::string BigEndian32(uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string IdxHeader(uint8_t type, const std::vector<uint32_t>& dims) {
  std::string out = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (uint32_t d : dims) out += BigEndian32(d);
  return out;
}

// The elements of `values` in big-endian byte order.
template <typename T>
std::string BigEndianData(const std::vector<T>& values) {
  std::string out;
  for (const T& v : values) {
    char bytes[sizeof(T)];
    std::memcpy(bytes, &v, sizeof(T));
    std::reverse(bytes, bytes + sizeof(T));
    out.append(bytes, sizeof(T));
  }
  return out;
}

class IdxFiles : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string WriteRaw(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }
  std::string WriteGzip(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    gzFile file = gzopen(path.c_str(), "wb");
    EXPECT_NE(file, nullptr);
    EXPECT_EQ(gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size())),
              static_cast<int>(bytes.size()));
    gzclose(file);
    return path;
  }

  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(IdxFiles, ReadsRawAndGzippedUint8Images) {
  const std::string bytes = IdxHeader(0x08, {2, 2, 3}) + std::string(
                                                             "\x00\x01\x02\x03\x04\x05"
                                                             "\x06\x07\x08\x09\xfe\xff",
                                                             12);
  const Tensor expected =
      Tensor::FromVector<uint8_t>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 254, 255}, {2, 2, 3});
  ASSERT_OK_AND_ASSIGN(const Tensor raw, ReadIdx(WriteRaw("images-idx3-ubyte", bytes)));
  EXPECT_TRUE(TensorsEqual(raw, expected)) << raw.DebugString();
  ASSERT_OK_AND_ASSIGN(const Tensor gz, ReadIdx(WriteGzip("images-idx3-ubyte.gz", bytes)));
  EXPECT_TRUE(TensorsEqual(gz, expected)) << gz.DebugString();
}

TEST(ParseIdx, ReadsEveryTypeBigEndian) {
  ASSERT_OK_AND_ASSIGN(Tensor t, ParseIdx(IdxHeader(0x09, {2}) + "\xff\x05", "x"));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<int8_t>({-1, 5}, {2})));
  ASSERT_OK_AND_ASSIGN(t, ParseIdx(IdxHeader(0x0B, {2}) + BigEndianData<int16_t>({-2, 300}), "x"));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<int16_t>({-2, 300}, {2})));
  ASSERT_OK_AND_ASSIGN(
      t, ParseIdx(IdxHeader(0x0C, {1, 2}) + BigEndianData<int32_t>({-70000, 123456789}), "x"));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<int32_t>({-70000, 123456789}, {1, 2})));
  ASSERT_OK_AND_ASSIGN(t,
                       ParseIdx(IdxHeader(0x0D, {2}) + BigEndianData<float>({1.5f, -0.1f}), "x"));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<float>({1.5f, -0.1f}, {2})));
  ASSERT_OK_AND_ASSIGN(t, ParseIdx(IdxHeader(0x0E, {}) + BigEndianData<double>({0.1}), "x"));
  EXPECT_TRUE(TensorsEqual(t, Tensor::Scalar<double>(0.1)));
}

TEST(ParseIdx, ReadsEmptyData) {
  ASSERT_OK_AND_ASSIGN(const Tensor t, ParseIdx(IdxHeader(0x08, {0, 28, 28}), "x"));
  EXPECT_EQ(t.shape(), TensorShape({0, 28, 28}));
}

TEST(ParseIdx, RejectsBadMagic) {
  EXPECT_THAT(ParseIdx(std::string("\x1f\x8b\x08\x00 more", 9), "f.gz"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("f.gz: bad magic at byte offset 0"), HasSubstr("1f 8b"))));
}

TEST(ParseIdx, RejectsUnknownTypeCode) {
  EXPECT_THAT(ParseIdx(IdxHeader(0x0A, {1}) + "\x00", "f"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("unknown data type 0x0a at byte offset 2")));
}

TEST(ParseIdx, RejectsTruncatedHeader) {
  EXPECT_THAT(ParseIdx(std::string("\0\0\x08", 3), "f"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("truncated header")));
  EXPECT_THAT(ParseIdx(IdxHeader(0x08, {60000, 28, 28}).substr(0, 10), "f"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("3 dimensions end at byte offset 16, but the input ends at "
                                 "byte offset 10")));
}

TEST(ParseIdx, RejectsTruncatedDataNamingOffsetAndSize) {
  EXPECT_THAT(ParseIdx(IdxHeader(0x0C, {3}) + BigEndianData<int32_t>({1, 2}), "labels"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("labels: truncated data"),
                             HasSubstr("needs 12 bytes from byte offset 8"),
                             HasSubstr("ends at byte offset 16"))));
}

TEST(ParseIdx, RejectsDimensionsThatOverflow) {
  EXPECT_THAT(ParseIdx(IdxHeader(0x0E, {0xFFFFFFFF, 0xFFFF, 0xFFFFFFFF}), "f"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("dimension 2 at byte offset 12 makes the element count "
                                 "overflow")));
}

TEST(ParseIdx, RejectsTrailingBytes) {
  EXPECT_THAT(
      ParseIdx(IdxHeader(0x08, {2}) + "abc", "f"),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("1 unexpected bytes after the data, which ends at byte offset 10")));
}

TEST_F(IdxFiles, MissingFileIsNotFound) {
  EXPECT_THAT(ReadIdx(dir_ + "/nothing-idx1-ubyte.gz"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nothing-idx1-ubyte.gz")));
}

TEST_F(IdxFiles, CutShortGzipIsDataLoss) {
  const std::string full = WriteGzip("full.gz", IdxHeader(0x08, {4096}) + std::string(4096, 'x'));
  const std::string bytes = testing::ReadFileOrDie(full);
  const std::string cut = WriteRaw("cut.gz", bytes.substr(0, bytes.size() - 12));
  EXPECT_THAT(ReadIdx(cut), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("cut.gz")));
}

TEST_F(IdxFiles, LoadsMnistPairScaledWithWideLabels) {
  std::string pixels(3 * 28 * 28, '\0');
  pixels[0] = static_cast<char>(255);
  pixels[784 + 1] = 51;
  WriteGzip("train-images-idx3-ubyte.gz", IdxHeader(0x08, {3, 28, 28}) + pixels);
  WriteRaw("train-labels-idx1-ubyte", IdxHeader(0x08, {3}) + std::string("\x09\x00\x04", 3));
  ASSERT_OK_AND_ASSIGN(const MnistData data, LoadMnist(dir_, MnistSplit::kTrain, DT_INT64));
  EXPECT_EQ(data.images.shape(), TensorShape({3, 784}));
  EXPECT_EQ(data.images.data<float>()[0], 1.0f);
  EXPECT_EQ(data.images.data<float>()[1], 0.0f);
  EXPECT_FLOAT_EQ(data.images.data<float>()[785], 0.2f);
  EXPECT_TRUE(TensorsEqual(data.labels, Tensor::FromVector<int64_t>({9, 0, 4}, {3})));
}

TEST_F(IdxFiles, LoadMnistRejectsMismatchedCounts) {
  WriteRaw("t10k-images-idx3-ubyte", IdxHeader(0x08, {2, 1, 1}) + "\x01\x02");
  WriteRaw("t10k-labels-idx1-ubyte", IdxHeader(0x08, {3}) + "\x01\x02\x03");
  EXPECT_THAT(LoadMnist(dir_, MnistSplit::kTest),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("t10k-labels-idx1-ubyte"), HasSubstr("labels [2]"))));
  EXPECT_THAT(LoadMnist(dir_, MnistSplit::kTrain),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("train-images-idx3-ubyte")));
}

TEST(FashionMnist, RealFilesHaveTheStandardSizes) {
  if (!std::filesystem::exists(std::string(kFashionMnistDir) + "/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "Fashion-MNIST is not installed at " << kFashionMnistDir;
  }
  for (const auto& [split, n] :
       {std::pair{MnistSplit::kTrain, 60000}, {MnistSplit::kTest, 10000}}) {
    ASSERT_OK_AND_ASSIGN(const MnistData data, LoadMnist(kFashionMnistDir, split));
    EXPECT_EQ(data.images.shape(), TensorShape({n, 784}));
    EXPECT_EQ(data.labels.shape(), TensorShape({n}));
    const int32_t* labels = data.labels.data<int32_t>();
    EXPECT_EQ(*std::min_element(labels, labels + n), 0);
    EXPECT_EQ(*std::max_element(labels, labels + n), 9);
    const float* pixels = data.images.data<float>();
    EXPECT_EQ(*std::min_element(pixels, pixels + n * 784), 0.0f);
    EXPECT_EQ(*std::max_element(pixels, pixels + n * 784), 1.0f);
  }
}

}  // namespace
}  // namespace rill
