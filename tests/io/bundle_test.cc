#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "graph/tensor_slice.h"
#include "io/bundle_format.h"
#include "io/bundle_merge.h"
#include "io/bundle_reader.h"
#include "io/bundle_writer.h"
#include "io/crc32c.h"
#include "io/posix_file.h"
#include "io/table.h"
#include "tests/test_util.h"

namespace rill::io {
namespace {

using ::rill::testing::IsOk;
using ::rill::testing::ReadFileOrDie;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::HasSubstr;

std::string TfCheckpoint() {
  return ::rill::testing::TestDataDir() + "/tf_checkpoints/regression-model/variables/variables";
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Writes `tensors` as one bundle under `prefix`.
void Save(const std::string& prefix, const std::vector<std::pair<std::string, Tensor>>& tensors) {
  absl::StatusOr<std::unique_ptr<BundleWriter>> writer = BundleWriter::Create(prefix);
  ASSERT_THAT(writer, IsOk());
  for (const auto& [key, tensor] : tensors) ASSERT_THAT((*writer)->Add(key, tensor), IsOk());
  ASSERT_THAT((*writer)->Finish(), IsOk());
}

TEST(BundleTest, ReadsTheCheckpointTensorFlowWrote) {
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(TfCheckpoint());
  ASSERT_THAT(reader, IsOk());
  EXPECT_EQ((*reader)->header().num_shards(), 1);
  absl::StatusOr<Tensor> w = (*reader)->Read("w");
  absl::StatusOr<Tensor> b = (*reader)->Read("b");
  ASSERT_THAT(w, IsOk());
  ASSERT_THAT(b, IsOk());
  EXPECT_EQ(w->dtype(), DT_FLOAT);
  EXPECT_EQ(w->shape(), TensorShape({1}));
  EXPECT_FLOAT_EQ(w->data<float>()[0], -0.8578622f);
  EXPECT_FLOAT_EQ(b->data<float>()[0], 0.0f);
  std::vector<std::string> keys;
  ASSERT_THAT((*reader)->ForEachEntry([&](std::string_view key, const BundleEntryProto&) {
    keys.emplace_back(key);
    return absl::OkStatus();
  }),
              IsOk());
  EXPECT_THAT(keys, ::testing::ElementsAre("b", "w"));
  EXPECT_THAT((*reader)->Read("nope"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("tensor 'nope' not found")));
}

TEST(BundleTest, WritesTheSameBytesAsTensorFlow) {
  absl::StatusOr<std::unique_ptr<BundleReader>> tf = BundleReader::Open(TfCheckpoint());
  ASSERT_THAT(tf, IsOk());
  const std::string prefix = ::rill::testing::MakeTempDir() + "/variables";
  // Added out of order: the index is sorted, the data file keeps the order
  // TensorFlow's sorted saver used.
  Save(prefix, {{"b", *(*tf)->Read("b")}, {"w", *(*tf)->Read("w")}});
  EXPECT_EQ(ReadFileOrDie(prefix + ".index"), ReadFileOrDie(TfCheckpoint() + ".index"));
  EXPECT_EQ(ReadFileOrDie(prefix + ".data-00000-of-00001"),
            ReadFileOrDie(TfCheckpoint() + ".data-00000-of-00001"));
}

template <typename T>
Tensor Filled(const TensorShape& shape, T first) {
  Tensor t(kDataTypeOf<T>, shape);
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    t.data<T>()[i] = static_cast<T>(first + static_cast<T>(i));
  }
  return t;
}

TEST(BundleTest, EveryDtypeRoundTrips) {
  const TensorShape shape({2, 3});
  std::vector<std::pair<std::string, Tensor>> tensors = {
      {"float", Filled<float>(shape, -1.5f)},
      {"double", Filled<double>(shape, 2.25)},
      {"int32", Filled<int32_t>(shape, -7)},
      {"uint32", Filled<uint32_t>(shape, 4000000000u)},
      {"int64", Filled<int64_t>(shape, int64_t{1} << 40)},
      {"uint64", Filled<uint64_t>(shape, uint64_t{1} << 63)},
      {"int16", Filled<int16_t>(shape, -300)},
      {"uint16", Filled<uint16_t>(shape, 60000)},
      {"int8", Filled<int8_t>(shape, -100)},
      {"uint8", Filled<uint8_t>(shape, 200)},
      {"bool", Filled<bool>(shape, true)},
      {"half", Filled<half>(shape, half(0.5f))},
      {"bfloat16", Filled<bfloat16>(shape, bfloat16(3.0f))},
      {"complex64", Filled<complex64>(shape, complex64(1, -2))},
      {"complex128", Filled<complex128>(shape, complex128(-3, 4))},
      {"scalar", Tensor::Scalar<float>(42.0f)},
      {"empty", Tensor(DT_INT32, TensorShape({0, 4}))},
      {"w/.ATTRIBUTES/VARIABLE_VALUE", Filled<float>(TensorShape({4}), 1.0f)},
  };
  Tensor strings(DT_STRING, TensorShape({5}));
  strings.data<std::string>()[0] = "";
  strings.data<std::string>()[1] = "hello";
  strings.data<std::string>()[2] = std::string("\0\xff\x01 binary", 10);
  strings.data<std::string>()[3] = std::string(300, 'x');  // a two-byte varint length
  strings.data<std::string>()[4] = "last";
  tensors.emplace_back("strings", strings);
  tensors.emplace_back("string_scalar", Tensor::Scalar<std::string>("only"));

  const std::string prefix = ::rill::testing::MakeTempDir() + "/all/model.ckpt-7";
  Save(prefix, tensors);
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  ASSERT_THAT(reader, IsOk());
  for (const auto& [key, want] : tensors) {
    absl::StatusOr<Tensor> got = (*reader)->Read(key);
    ASSERT_THAT(got, IsOk()) << key;
    EXPECT_EQ(got->dtype(), want.dtype()) << key;
    EXPECT_EQ(got->shape(), want.shape()) << key;
    if (want.dtype() == DT_STRING) {
      EXPECT_EQ(Values<std::string>(*got), Values<std::string>(want)) << key;
    } else {
      const size_t n = want.NumElements() * DataTypeSize(want.dtype());
      EXPECT_EQ(std::string(static_cast<const char*>(got->raw_data()), n),
                std::string(static_cast<const char*>(want.raw_data()), n))
          << key;
    }
  }
  // Nothing is left under a temporary name.
  for (const auto& file : std::filesystem::directory_iterator(Dirname(prefix))) {
    EXPECT_THAT(file.path().string(), ::testing::Not(HasSubstr("tempstate")));
  }
}

TEST(BundleTest, BadInputToTheWriterIsAnError) {
  const std::string prefix = ::rill::testing::MakeTempDir() + "/bad";
  absl::StatusOr<std::unique_ptr<BundleWriter>> writer = BundleWriter::Create(prefix);
  ASSERT_THAT(writer, IsOk());
  ASSERT_THAT((*writer)->Add("a", Tensor::Scalar<float>(1)), IsOk());
  EXPECT_THAT((*writer)->Add("a", Tensor::Scalar<float>(2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'a' is saved twice")));
  EXPECT_THAT((*writer)->Add("", Tensor::Scalar<float>(2)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty tensor name")));
  ASSERT_THAT((*writer)->Finish(), IsOk());
  EXPECT_THAT((*writer)->Finish(), StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("")));
}

TEST(BundleTest, AnAbandonedWriterLeavesNoCheckpoint) {
  const std::string dir = ::rill::testing::MakeTempDir();
  {
    absl::StatusOr<std::unique_ptr<BundleWriter>> writer = BundleWriter::Create(dir + "/gone");
    ASSERT_THAT(writer, IsOk());
    ASSERT_THAT((*writer)->Add("a", Tensor::Scalar<float>(1)), IsOk());
  }
  EXPECT_TRUE(std::filesystem::is_empty(dir));
  EXPECT_THAT(BundleReader::Open(dir + "/gone"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("gone.index")));
}

// Every single-bit flip and every truncation of either file is an error
// naming that file, or (where the format ignores the bytes, such as the
// footer's padding) gives back the right values; never a wrong value.
TEST(BundleTest, CorruptFilesAreErrorsNamingTheFile) {
  const std::string dir = ::rill::testing::MakeTempDir();
  const std::string good = dir + "/good";
  Tensor strings(DT_STRING, TensorShape({2}));
  strings.data<std::string>()[0] = "alpha";
  strings.data<std::string>()[1] = "beta";
  Save(good, {{"v", Filled<float>(TensorShape({3}), 1.0f)}, {"s", strings}});
  const std::string index = ReadFileOrDie(good + ".index");
  const std::string data = ReadFileOrDie(good + ".data-00000-of-00001");

  const auto check = [&](const std::string& prefix, const std::string& damaged_file,
                         const std::string& what) {
    absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
    if (!reader.ok()) {
      EXPECT_THAT(reader.status().message(), HasSubstr(damaged_file)) << what;
      return;
    }
    for (const char* key : {"v", "s"}) {
      absl::StatusOr<Tensor> got = (*reader)->Read(key);
      if (!got.ok()) {
        EXPECT_THAT(got.status().message(), HasSubstr(damaged_file)) << what << " " << key;
        continue;
      }
      if (std::string(key) == "v") {
        EXPECT_EQ(Values<float>(*got), (std::vector<float>{1, 2, 3})) << what;
      } else {
        EXPECT_EQ(Values<std::string>(*got), (std::vector<std::string>{"alpha", "beta"})) << what;
      }
    }
  };
  const std::string prefix = dir + "/damaged";
  for (const bool damage_index : {true, false}) {
    const std::string& original = damage_index ? index : data;
    const std::string name = prefix + (damage_index ? ".index" : ".data-00000-of-00001");
    WriteBytes(prefix + ".index", index);
    WriteBytes(prefix + ".data-00000-of-00001", data);
    for (size_t i = 0; i < original.size(); ++i) {
      for (int bit : {0, 7}) {
        std::string bytes = original;
        bytes[i] ^= static_cast<char>(1 << bit);
        WriteBytes(name, bytes);
        check(prefix, name, "flip byte " + std::to_string(i));
      }
    }
    for (size_t size = 0; size < original.size(); ++size) {
      WriteBytes(name, original.substr(0, size));
      check(prefix, name, "truncated to " + std::to_string(size));
    }
    WriteBytes(name, original);
  }
  ASSERT_TRUE(std::filesystem::remove(prefix + ".data-00000-of-00001"));
  EXPECT_THAT(BundleReader::Open(prefix).value()->Read("v"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("data-00000-of-00001")));
}

// An index entry is a few bytes whatever shape it claims; the reader
// compares the shape with the entry's size before allocating it.
TEST(BundleTest, AShapeTheEntrysBytesCannotHoldIsRefusedBeforeAllocation) {
  const std::string prefix = ::rill::testing::MakeTempDir() + "/claims";
  WriteBytes(DataFilename(prefix, 0, 1), "abcd");
  {
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        WritableFile::Create(IndexFilename(prefix));
    ASSERT_THAT(file, IsOk());
    TableWriter table(file->get());
    ASSERT_THAT(table.Add(kHeaderKey, MakeBundleHeader(1).SerializeAsString()), IsOk());
    // Bytes that end past 2^63 (as signed integers, their end overflowed).
    BundleEntryProto far;
    far.set_dtype(DT_FLOAT);
    far.set_offset(std::numeric_limits<int64_t>::max());
    far.set_size(4);
    ASSERT_THAT(table.Add("far", far.SerializeAsString()), IsOk());
    for (const auto& [key, dtype] :
         {std::pair{"floats", DT_FLOAT}, std::pair{"strings", DT_STRING}}) {
      BundleEntryProto entry;
      entry.set_dtype(dtype);
      entry.mutable_shape()->add_dim()->set_size(int64_t{1} << 40);
      entry.set_size(4);
      ASSERT_THAT(table.Add(key, entry.SerializeAsString()), IsOk());
    }
    ASSERT_THAT(table.Finish(), IsOk());
    ASSERT_THAT((*file)->Close(), IsOk());
  }
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  ASSERT_THAT(reader, IsOk());
  EXPECT_THAT((*reader)->Read("far"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("bytes [9223372036854775807, 9223372036854775811) lie past")));
  EXPECT_THAT(
      (*reader)->Read("floats"),
      StatusIs(absl::StatusCode::kDataLoss,
               HasSubstr("float [1099511627776] needs 4398046511104 bytes, the entry has 4")));
  EXPECT_THAT((*reader)->Read("strings"),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("1099511627776 strings need at least 1099511627776 bytes, the "
                                 "entry has 4")));
}

// Found by the checkpoint fuzz target: a header announcing 2^31 - 1
// shards made Open allocate a slot per shard (16 GiB).
TEST(BundleTest, AHeaderAnnouncingManyShardsCostsNothingUntilOneIsRead) {
  const std::string prefix = ::rill::testing::MakeTempDir() + "/many";
  const int shards = std::numeric_limits<int32_t>::max();
  const float value = 2.5f;
  WriteBytes(DataFilename(prefix, 0, shards),
             std::string(reinterpret_cast<const char*>(&value), sizeof(value)));
  {
    absl::StatusOr<std::unique_ptr<WritableFile>> file =
        WritableFile::Create(IndexFilename(prefix));
    ASSERT_THAT(file, IsOk());
    TableWriter table(file->get());
    ASSERT_THAT(table.Add(kHeaderKey, MakeBundleHeader(shards).SerializeAsString()), IsOk());
    BundleEntryProto entry;
    entry.set_dtype(DT_FLOAT);
    entry.mutable_shape()->add_dim()->set_size(1);
    entry.set_size(sizeof(value));
    entry.set_crc32c(crc32c::Mask(crc32c::Value(&value, sizeof(value))));
    ASSERT_THAT(table.Add("v", entry.SerializeAsString()), IsOk());
    entry.set_shard_id(shards - 1);
    ASSERT_THAT(table.Add("w", entry.SerializeAsString()), IsOk());
    ASSERT_THAT(table.Finish(), IsOk());
    ASSERT_THAT((*file)->Close(), IsOk());
  }
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  ASSERT_THAT(reader, IsOk());
  absl::StatusOr<Tensor> v = (*reader)->Read("v");
  ASSERT_THAT(v, IsOk());
  EXPECT_EQ(Values<float>(*v), std::vector<float>{2.5f});
  EXPECT_THAT((*reader)->Read("w"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("data-2147483646-of-2147483647")));
}

// String lengths near 2^64 whose sum wraps around to the bytes that follow
// (with their checksum right) would have each string read past the entry.
TEST(BundleTest, StringLengthsThatWrapAroundAreRefused) {
  const auto varint = [](uint64_t v) {
    std::string out;
    for (; v >= 0x80; v >>= 7) out += static_cast<char>(v | 0x80);
    return out + static_cast<char>(v);
  };
  const uint64_t lengths[] = {uint64_t{1} << 63, (uint64_t{1} << 63) + 3};
  std::string data;
  uint32_t crc = 0;
  for (const uint64_t length : lengths) {
    data += varint(length);
    crc = crc32c::Extend(crc, &length, sizeof(length));  // Over 32 bits: as 8 bytes.
  }
  const uint32_t masked = crc32c::Mask(crc);
  data.append(reinterpret_cast<const char*>(&masked), sizeof(masked));
  data += "abc";
  Tensor out(DT_STRING, TensorShape({2}));
  uint32_t entry_crc = 0;
  EXPECT_THAT(DecodeStringTensor(data, out, &entry_crc, "entry"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("add up to more than")));
}

// Tensors are checksummed in pieces of kChecksumChunkBytes as they are
// written and read; the stored checksum is still that of all the bytes,
// and damage anywhere in a later piece is found.
TEST(BundleTest, TensorsLargerThanAChecksumChunkRoundTripAndAreChecked) {
  const std::string prefix = ::rill::testing::MakeTempDir() + "/large";
  const int64_t elements = static_cast<int64_t>(5 * kChecksumChunkBytes / 2 / sizeof(float)) + 3;
  const Tensor large = ::rill::testing::RandomTensor(TensorShape({elements}), 11);
  Save(prefix, {{"large", large}, {"small", Tensor::Scalar<float>(4)}});
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  ASSERT_THAT(reader, IsOk());
  absl::StatusOr<BundleEntryProto> entry = (*reader)->Entry("large");
  ASSERT_THAT(entry, IsOk());
  EXPECT_EQ(entry->crc32c(), crc32c::Mask(crc32c::Value(large.raw_data(), large.TotalBytes())));
  absl::StatusOr<Tensor> got = (*reader)->Read("large");
  ASSERT_THAT(got, IsOk());
  EXPECT_EQ(Values<float>(*got), Values<float>(large));

  const std::string data_path = prefix + ".data-00000-of-00001";
  std::string data = ReadFileOrDie(data_path);
  data[entry->offset() + 2 * kChecksumChunkBytes + 100] ^= 0x10;
  WriteBytes(data_path, data);
  reader = BundleReader::Open(prefix);
  ASSERT_THAT(reader, IsOk());
  EXPECT_THAT((*reader)->Read("large"),
              StatusIs(absl::StatusCode::kDataLoss, HasSubstr("checksum mismatch")));
  EXPECT_THAT((*reader)->Read("small"), IsOk());
}

TEST(BundleTest, SlicesAreSavedInPiecesAndReadWholeOrInPart) {
  const std::string prefix = ::rill::testing::MakeTempDir() + "/sliced";
  const TensorShape full({4, 3});
  Tensor whole = Filled<float>(full, 0.0f);
  absl::StatusOr<std::unique_ptr<BundleWriter>> writer = BundleWriter::Create(prefix);
  ASSERT_THAT(writer, IsOk());
  for (const char* text : {"0,2:-", "2,2:-"}) {
    const TensorSlice slice = *TensorSlice::Parse(text);
    Tensor part(DT_FLOAT, slice.SliceShape(full));
    CopySliceData(whole, TensorSlice::Full(2), part, slice, full);
    ASSERT_THAT((*writer)->AddSlice("part", full, slice, part), IsOk());
  }
  ASSERT_THAT((*writer)->Add("plain", whole), IsOk());
  ASSERT_THAT((*writer)->Finish(), IsOk());

  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(prefix);
  ASSERT_THAT(reader, IsOk());
  EXPECT_EQ(Values<float>(*(*reader)->Read("part")), Values<float>(whole));
  // Rows 1..2 span both pieces; columns 1..2 of them.
  const TensorSlice middle = *TensorSlice::Parse("1,2:1,2");
  EXPECT_EQ(Values<float>(*(*reader)->ReadSlice("part", full, middle)),
            (std::vector<float>{4, 5, 7, 8}));
  EXPECT_EQ(Values<float>(*(*reader)->ReadSlice("plain", full, middle)),
            (std::vector<float>{4, 5, 7, 8}));
  EXPECT_THAT((*reader)->ReadSlice("plain", TensorShape({3, 4}), middle),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("has shape [4,3]")));
  // The pieces' keys sort before plain names, under TensorFlow's encoding.
  EXPECT_EQ(SliceKey("part", *TensorSlice::Parse("0,2:-")),
            std::string("\x00part\x00\x01\x01\x02\x80\x82\x80\x7f", 13));
}

TEST(BundleTest, MergeJoinsShardsAndRenumbersTheirDataFiles) {
  const std::string dir = ::rill::testing::MakeTempDir();
  const std::string parts = dir + "/model.ckpt-5_temp_0123/part";
  Save(parts + "-00000-of-00002", {{"ps0/w", Tensor::Scalar<float>(1)}});
  Save(parts + "-00001-of-00002", {{"ps1/b", Tensor::Scalar<double>(2)}});
  const std::string destination = dir + "/model.ckpt-5";
  ASSERT_THAT(MergeBundles({parts + "-00000-of-00002", parts + "-00001-of-00002"}, destination),
              IsOk());
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.ckpt-5_temp_0123"));
  EXPECT_TRUE(std::filesystem::exists(destination + ".data-00000-of-00002"));
  EXPECT_TRUE(std::filesystem::exists(destination + ".data-00001-of-00002"));
  absl::StatusOr<std::unique_ptr<BundleReader>> reader = BundleReader::Open(destination);
  ASSERT_THAT(reader, IsOk());
  EXPECT_EQ((*reader)->header().num_shards(), 2);
  EXPECT_EQ((*reader)->Read("ps0/w")->scalar<float>(), 1.0f);
  EXPECT_EQ((*reader)->Read("ps1/b")->scalar<double>(), 2.0);

  Save(dir + "/x", {{"same", Tensor::Scalar<float>(1)}});
  Save(dir + "/y", {{"same", Tensor::Scalar<float>(2)}});
  EXPECT_THAT(MergeBundles({dir + "/x", dir + "/y"}, dir + "/xy"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'same'")));
  EXPECT_THAT(MergeBundles({dir + "/missing"}, dir + "/m"),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("missing.index")));
}

TEST(TensorSliceTest, ParsesShapeAndSliceEntries) {
  absl::StatusOr<std::optional<ShapeAndSlice>> parsed = ParseShapeAndSlice("4 3 0,2:-");
  ASSERT_THAT(parsed, IsOk());
  ASSERT_TRUE(parsed->has_value());
  EXPECT_EQ((*parsed)->full_shape, TensorShape({4, 3}));
  EXPECT_EQ((*parsed)->slice.DebugString(), "0,2:-");
  EXPECT_FALSE(ParseShapeAndSlice("")->has_value());
  for (const char* bad : {"4 3", "4 3 0,5:-", "4 x 0,2:-", "4 3 0,2", "4 3 a,b:-"}) {
    EXPECT_THAT(ParseShapeAndSlice(bad),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("malformed")))
        << bad;
  }
}

}  // namespace
}  // namespace rill::io
