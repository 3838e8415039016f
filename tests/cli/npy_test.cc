#include "cli/npy.h"

#include <sys/stat.h>

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

// The bytes numpy writes before the data: magic, version, little-endian
// header length, the dict, spaces and a newline.
std::string NpyHeader(int major, const std::string& dict, size_t total) {
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t header_len = total - 8 - len_bytes;
  std::string out = "\x93NUMPY";
  out += static_cast<char>(major);
  out += '\0';
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  out += dict;
  out.append(header_len - dict.size() - 1, ' ');
  return out + "\n";
}

template <typename T>
std::string Bytes(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

TEST(Npy, WritesFloatMatrixExactlyAsNumpy) {
  const Tensor t = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(t));
  const std::string expected =
      NpyHeader(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 128) +
      Bytes<float>({1, 2, 3, 4, 5, 6});
  EXPECT_EQ(bytes, expected);
  EXPECT_EQ(bytes.substr(8, 2), std::string("\x76\x00", 2));  // 118, little-endian.
}

TEST(Npy, WritesScalarAndVectorHeadersAsNumpy) {
  ASSERT_OK_AND_ASSIGN(const std::string scalar, SerializeNpy(Tensor::Scalar<double>(2.5)));
  EXPECT_EQ(scalar, NpyHeader(1, "{'descr': '<f8', 'fortran_order': False, 'shape': (), }", 128) +
                        Bytes<double>({2.5}));
  ASSERT_OK_AND_ASSIGN(const std::string vec,
                       SerializeNpy(Tensor::FromVector<uint8_t>({7, 8, 9}, {3})));
  EXPECT_EQ(vec, NpyHeader(1, "{'descr': '|u1', 'fortran_order': False, 'shape': (3,), }", 128) +
                     "\x07\x08\x09");
  ASSERT_OK_AND_ASSIGN(const std::string flags,
                       SerializeNpy(Tensor::FromVector<bool>({true, false}, {2})));
  EXPECT_THAT(flags, HasSubstr("'descr': '|b1'"));
}

TEST(Npy, DataStartsAlignedForLongShapes) {
  const Tensor t(DT_INT16, TensorShape({1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2}));
  ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(t));
  EXPECT_EQ((bytes.size() - 4) % 64, 0u);
  EXPECT_EQ(bytes[bytes.size() - 5], '\n');
}

void ExpectRoundTrip(const Tensor& t) {
  ASSERT_OK_AND_ASSIGN(const std::string bytes, SerializeNpy(t));
  ASSERT_OK_AND_ASSIGN(const Tensor back, ParseNpy(bytes));
  EXPECT_TRUE(TensorsEqual(t, back)) << t.DebugString() << " vs " << back.DebugString();
}

TEST(Npy, RoundTripsEveryDtype) {
  ExpectRoundTrip(Tensor::FromVector<float>({1.5f, -2, 0.1f, 1e30f, -0.0f, 7}, {2, 3}));
  ExpectRoundTrip(Tensor::FromVector<double>({1.5, -2, 0.1, 1e300, -0.0, 7}, {3, 2}));
  ExpectRoundTrip(Tensor::FromVector<int8_t>({-128, 127, 0}, {3}));
  ExpectRoundTrip(Tensor::FromVector<int16_t>({-32768, 32767, 5, 6}, {2, 2}));
  ExpectRoundTrip(Tensor::FromVector<int32_t>({-2147483647 - 1, 2147483647}, {2}));
  ExpectRoundTrip(Tensor::FromVector<int64_t>({INT64_MIN, INT64_MAX, 3}, {3, 1}));
  ExpectRoundTrip(Tensor::FromVector<uint8_t>({0, 255}, {2}));
  ExpectRoundTrip(Tensor::FromVector<uint16_t>({0, 65535}, {2}));
  ExpectRoundTrip(Tensor::FromVector<uint32_t>({0, 4294967295u}, {2}));
  ExpectRoundTrip(Tensor::FromVector<uint64_t>({0, UINT64_MAX}, {1, 2}));
  ExpectRoundTrip(Tensor::FromVector<bool>({true, false, true}, {3}));
  ExpectRoundTrip(Tensor::FromVector<half>({half(1.5f), half(-65504.0f)}, {2}));
  ExpectRoundTrip(Tensor::FromVector<complex64>({{1, 2}, {-3, 4}}, {2}));
  ExpectRoundTrip(Tensor::FromVector<complex128>({{1, 2}, {-3, 0.5}}, {1, 2}));
}

TEST(Npy, RoundTripsScalarAndEmptyShapes) {
  ExpectRoundTrip(Tensor::FromVector<int32_t>({42}, {}));
  ExpectRoundTrip(Tensor::FromVector<float>({}, {0}));
  ExpectRoundTrip(Tensor::FromVector<float>({}, {3, 0, 2}));
}

TEST(Npy, ParsesOldSixteenByteAlignedHeader) {
  const std::string bytes =
      NpyHeader(1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 80) +
      Bytes<int64_t>({10, -20, 30});
  ASSERT_OK_AND_ASSIGN(const Tensor t, ParseNpy(bytes));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<int64_t>({10, -20, 30}, {3})));
}

TEST(Npy, ParsesVersionTwoAndThreeHeaders) {
  for (int major : {2, 3}) {
    const std::string bytes =
        NpyHeader(major, "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 2), }", 128) +
        Bytes<float>({0.5f, -1});
    ASSERT_OK_AND_ASSIGN(const Tensor t, ParseNpy(bytes));
    EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<float>({0.5f, -1}, {1, 2}))) << major;
  }
}

TEST(Npy, AcceptsKeysInAnyOrderAndPythonTwoLongs) {
  const std::string bytes =
      NpyHeader(1, "{\"shape\": (2L,), \"fortran_order\": False, \"descr\": \"<i4\"}", 128) +
      Bytes<int32_t>({3, 4});
  ASSERT_OK_AND_ASSIGN(const Tensor t, ParseNpy(bytes));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<int32_t>({3, 4}, {2})));
}

TEST(Npy, ReadsFortranOrderIntoRowMajor) {
  // a = [[1, 2, 3], [4, 5, 6]] stored column by column.
  const std::string matrix =
      NpyHeader(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }", 128) +
      Bytes<float>({1, 4, 2, 5, 3, 6});
  ASSERT_OK_AND_ASSIGN(const Tensor t, ParseNpy(matrix));
  EXPECT_TRUE(TensorsEqual(t, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {2, 3})));

  // Element (i, j, k) of a [2, 3, 4] array sits at i + 2j + 6k in Fortran
  // order; its row-major value is 12i + 4j + k.
  std::vector<int32_t> stored(24);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k) stored[i + 2 * j + 6 * k] = 12 * i + 4 * j + k;
  const std::string cube =
      NpyHeader(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3, 4), }", 128) +
      Bytes(stored);
  ASSERT_OK_AND_ASSIGN(const Tensor c, ParseNpy(cube));
  std::vector<int32_t> row_major(24);
  for (int n = 0; n < 24; ++n) row_major[n] = n;
  EXPECT_TRUE(TensorsEqual(c, Tensor::FromVector<int32_t>(row_major, {2, 3, 4})));
}

TEST(Npy, RejectsBigEndianData) {
  const std::string bytes =
      NpyHeader(1, "{'descr': '>f4', 'fortran_order': False, 'shape': (1,), }", 128) +
      std::string(4, '\0');
  EXPECT_THAT(ParseNpy(bytes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("big-endian")));
}

TEST(Npy, RejectsTruncatedDataNamingOffsetAndSize) {
  const std::string bytes =
      NpyHeader(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 128) +
      std::string(20, '\0');
  EXPECT_THAT(ParseNpy(bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                        AllOf(HasSubstr("needs 24 bytes from byte offset 128"),
                                              HasSubstr("ends at byte offset 148"))));
}

TEST(Npy, RejectsTrailingBytes) {
  const std::string bytes =
      NpyHeader(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", 128) +
      std::string(6, '\0');
  EXPECT_THAT(ParseNpy(bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("followed by 2 unexpected bytes")));
}

TEST(Npy, RejectsBadMagicAndVersion) {
  EXPECT_THAT(ParseNpy("PK\x03\x04 not npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad magic")));
  std::string v4 = NpyHeader(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", 128);
  v4[6] = 4;
  EXPECT_THAT(ParseNpy(v4), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("version 4.0")));
}

TEST(Npy, RejectsHeaderLengthPastTheEnd) {
  const std::string bytes =
      NpyHeader(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (), }", 128).substr(0, 50);
  EXPECT_THAT(ParseNpy(bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("truncated npy header: 118 bytes")));
}

TEST(Npy, RejectsBadHeadersSayingWhatIsWrong) {
  const auto parse = [](const std::string& dict) {
    return ParseNpy(NpyHeader(1, dict, 128) + std::string(4, '\0'));
  };
  EXPECT_THAT(parse("{'descr': '<i4', 'fortran_order': False}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("missing key 'shape'")));
  EXPECT_THAT(parse("{'descr': '<i4', 'fortran_order': False, 'shape': (1,), 'x': 1}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unexpected key 'x'")));
  EXPECT_THAT(parse("{'descr': [('a', '<i4')], 'fortran_order': False, 'shape': (1,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("structured dtypes")));
  EXPECT_THAT(parse("{'descr': '<U1', 'fortran_order': False, 'shape': (1,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unsupported element")));
  EXPECT_THAT(parse("{'descr': '<i4', 'fortran_order': maybe, 'shape': (1,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("byte offset 44"), HasSubstr("expected True or False"))));
  EXPECT_THAT(parse("{'descr': '<i4', 'fortran_order': False, 'shape': (-1,)}"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-negative dimension")));
}

TEST(Npy, RejectsBoolBytesOtherThanZeroAndOne) {
  const std::string bytes =
      NpyHeader(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", 128) + "\x01\x02";
  EXPECT_THAT(ParseNpy(bytes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 129 is 2")));
}

TEST(Npy, RefusesDtypesWithoutNpyForm) {
  EXPECT_THAT(SerializeNpy(Tensor(DT_STRING, TensorShape({1}))),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("string")));
  EXPECT_THAT(SerializeNpy(Tensor(DT_BFLOAT16, TensorShape({1}))),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("bfloat16")));
}

TEST(Npy, WritesAndReadsFiles) {
  const std::string path = testing::MakeTempDir() + "/t.npy";
  const Tensor t = Tensor::FromVector<int64_t>({1, 2, 3, 4}, {2, 2});
  ASSERT_OK(WriteNpy(path, t));
  ASSERT_OK_AND_ASSIGN(const Tensor back, ReadNpy(path));
  EXPECT_TRUE(TensorsEqual(t, back));
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST(Npy, ReadErrorsNameTheFile) {
  const std::string dir = testing::MakeTempDir();
  EXPECT_THAT(ReadNpy(dir + "/missing.npy"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.npy")));
  std::ofstream(dir + "/bad.npy") << "not numpy";
  EXPECT_THAT(ReadNpy(dir + "/bad.npy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad.npy: not an npy")));
  std::filesystem::remove_all(dir);
}

// Reads of files read the header first and then exactly the data it
// calls for; these files are bad in each of the ways that could otherwise
// make a reader block, allocate without bound or read past the data.
class NpyFile : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Write(const std::string& name, const std::string& bytes) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << bytes;
    return path;
  }

  const std::string dir_ = testing::MakeTempDir();
};

TEST_F(NpyFile, RefusesAFifoWithoutWaitingForAWriter) {
  const std::string fifo = dir_ + "/feed.npy";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_THAT(ReadNpy(fifo), StatusIs(absl::StatusCode::kInvalidArgument,
                                      AllOf(HasSubstr("feed.npy"), HasSubstr("a FIFO"),
                                            HasSubstr("not a regular file"))));
}

TEST_F(NpyFile, RefusesDevicesAndDirectories) {
  if (std::filesystem::exists("/dev/zero")) {
    EXPECT_THAT(ReadNpy("/dev/zero"),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("/dev/zero"), HasSubstr("a character device"))));
  }
  EXPECT_THAT(ReadNpy(dir_), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("a directory, not a regular file")));
}

TEST_F(NpyFile, RefusesTruncatedDataNamingTheFileAndSizes) {
  const std::string path =
      Write("short.npy",
            NpyHeader(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 128) +
                std::string(20, '\0'));
  EXPECT_THAT(ReadNpy(path), StatusIs(absl::StatusCode::kInvalidArgument,
                                      AllOf(HasSubstr("short.npy: truncated npy data"),
                                            HasSubstr("needs 24 bytes from byte offset 128"),
                                            HasSubstr("ends at byte offset 148"))));
}

TEST_F(NpyFile, RefusesBytesAfterTheData) {
  const std::string path = Write(
      "long.npy", NpyHeader(1, "{'descr': '<i4', 'fortran_order': False, 'shape': (1,), }", 128) +
                      std::string(6, '\0'));
  EXPECT_THAT(ReadNpy(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("long.npy"), HasSubstr("followed by 2 unexpected bytes"))));
}

TEST_F(NpyFile, RefusesDataOverTheLimitBeforeReadingIt) {
  const std::string path = Write("t.npy", *SerializeNpy(Tensor::FromVector<float>({1, 2, 3}, {3})));
  EXPECT_THAT(ReadNpy(path, 8),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("t.npy: npy shape (3,) of '<f4' is 12 bytes of data"),
                             HasSubstr("over the limit of 8 bytes"))));
  ASSERT_OK_AND_ASSIGN(const Tensor t, ReadNpy(path, 12));
  EXPECT_EQ(t.shape(), TensorShape({3}));
  // A header claiming 4 TiB of data in a file of 128 bytes.
  const std::string huge = Write(
      "huge.npy",
      NpyHeader(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776,), }", 128));
  EXPECT_THAT(ReadNpy(huge),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("over the limit of")));
}

TEST_F(NpyFile, RefusesShapesWhoseSizeOverflows) {
  const std::string bytes = NpyHeader(
      1, "{'descr': '<f8', 'fortran_order': False, 'shape': (4611686018427387904, 4), }", 128);
  EXPECT_THAT(ParseNpy(bytes), StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("(4611686018427387904, 4) is too large")));
  EXPECT_THAT(ReadNpy(Write("overflow.npy", bytes)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("overflow.npy"), HasSubstr("is too large"))));
}

TEST_F(NpyFile, RefusesAHeaderLengthOverTheLimit) {
  // Version 2.0, header length 0x7FFFFFFF, and nothing after it.
  const std::string bytes = std::string("\x93NUMPY\x02\x00\xFF\xFF\xFF\x7F", 12);
  EXPECT_THAT(ReadNpy(Write("long_header.npy", bytes)),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("long_header.npy: npy header length 2147483647"),
                             HasSubstr("at byte offset 8"), HasSubstr("limit of 65536 bytes"))));
  EXPECT_THAT(ParseNpy(bytes),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("limit of 65536 bytes")));
}

TEST_F(NpyFile, RefusesAMalformedHeaderNamingTheOffset) {
  const std::string path =
      Write("bad_header.npy",
            NpyHeader(1, "{'descr': '<i4', 'fortran_order': maybe, 'shape': (1,)}", 128) +
                std::string(4, '\0'));
  EXPECT_THAT(ReadNpy(path),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("bad_header.npy"), HasSubstr("byte offset 44"),
                             HasSubstr("expected True or False"))));
}

TEST_F(NpyFile, ReadsFortranOrderAndBoolFiles) {
  const std::string matrix = Write(
      "f.npy", NpyHeader(1, "{'descr': '<i4', 'fortran_order': True, 'shape': (2, 3), }", 128) +
                   Bytes<int32_t>({1, 4, 2, 5, 3, 6}));
  ASSERT_OK_AND_ASSIGN(const Tensor m, ReadNpy(matrix));
  EXPECT_TRUE(TensorsEqual(m, Tensor::FromVector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3})));
  const std::string flags = Write(
      "b.npy",
      NpyHeader(1, "{'descr': '|b1', 'fortran_order': False, 'shape': (2,), }", 128) + "\x01\x02");
  EXPECT_THAT(ReadNpy(flags),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("byte offset 129 is 2")));
}

}  // namespace
}  // namespace rill
