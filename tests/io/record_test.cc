#include <cstdint>
#include <fstream>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/proto/event.pb.h"
#include "gtest/gtest.h"
#include "io/crc32c.h"
#include "io/record_reader.h"
#include "io/record_writer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::MakeTempDir;
using ::rill::testing::ReadFileOrDie;
using ::rill::testing::StatusIs;
using ::rill::testing::TestDataDir;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::string Bytes(std::initializer_list<uint8_t> bytes) {
  return std::string(bytes.begin(), bytes.end());
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  ASSERT_TRUE(out.good()) << path;
}

// The bytes a RecordWriter writes for `records` into a fresh file.
std::string Framed(const std::vector<std::string>& records) {
  const std::string path = MakeTempDir() + "/records";
  absl::StatusOr<std::unique_ptr<RecordWriter>> writer = RecordWriter::Open(path);
  EXPECT_OK(writer);
  if (!writer.ok()) return "";
  for (const std::string& r : records) EXPECT_OK((*writer)->WriteRecord(r));
  EXPECT_OK((*writer)->Close());
  return ReadFileOrDie(path);
}

// A file of two records, "first" and "second record", and its path.
struct TwoRecords {
  std::string path = MakeTempDir() + "/two";
  std::string bytes = Framed({"first", "second record"});
  static constexpr uint64_t kSecond = 12 + 5 + 4;  // Offset of the second record.
};

TEST(RecordReader, ReadsTheRecordTensorFlowWrote) {
  EXPECT_THAT(ReadAllRecords(TestDataDir() + "/tf_checkpoints/expected.tfrecord"),
              IsOkAndHolds(ElementsAre("The Quick Brown Fox")));
}

TEST(RecordWriter, WritesTheBytesTensorFlowWrote) {
  EXPECT_EQ(Framed({"The Quick Brown Fox"}),
            ReadFileOrDie(TestDataDir() + "/tf_checkpoints/expected.tfrecord"));
}

// The two Event vectors of TF_TRAINING_FORMATS.md section 2.2.
TEST(RecordWriter, FramesTheFileVersionEventAsDocumented) {
  Event event;
  event.set_wall_time(1.5e9);
  event.set_file_version("brain.Event:2");
  const std::string data =
      Bytes({0x09, 0x00, 0x00, 0x00, 0xc0, 0x0b, 0x5a, 0xd6, 0x41, 0x1a, 0x0d, 'b',
             'r',  'a',  'i',  'n',  '.',  'E',  'v',  'e',  'n',  't',  ':',  '2'});
  ASSERT_EQ(event.SerializeAsString(), data);
  EXPECT_EQ(Framed({data}), Bytes({0x18, 0, 0, 0, 0, 0, 0, 0, 0xa3, 0x7f, 0x4b, 0x22}) + data +
                                Bytes({0x4c, 0xa9, 0xa4, 0x64}));
}

TEST(RecordWriter, FramesTheScalarEventAsDocumented) {
  Event event;
  event.set_wall_time(1500000001.0);
  event.set_step(1);
  Summary::Value* value = event.mutable_summary()->add_value();
  value->set_tag("loss");
  value->set_simple_value(0.5f);
  const std::string data =
      Bytes({0x09, 0x00, 0x00, 0x40, 0xc0, 0x0b, 0x5a, 0xd6, 0x41, 0x10, 0x01, 0x2a, 0x0d,
             0x0a, 0x0b, 0x0a, 0x04, 'l',  'o',  's',  's',  0x15, 0x00, 0x00, 0x00, 0x3f});
  ASSERT_EQ(event.SerializeAsString(), data);
  EXPECT_EQ(Framed({data}), Bytes({0x1a, 0, 0, 0, 0, 0, 0, 0, 0x12, 0x9b, 0xd8, 0x2d}) + data +
                                Bytes({0xef, 0xf4, 0xfc, 0x1b}));
}

TEST(RecordWriter, HeaderAndFooterAreTheFraming) {
  const std::string data = "The Quick Brown Fox";
  EXPECT_EQ(EncodeRecordHeader(data) + data + EncodeRecordFooter(data), Framed({data}));
}

TEST(RecordWriter, AppendsToAnExistingFile) {
  const std::string path = MakeTempDir() + "/records";
  for (const char* record : {"one", "two"}) {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordWriter> writer, RecordWriter::Open(path));
    ASSERT_OK(writer->WriteRecord(record));
    ASSERT_OK(writer->Flush());
  }
  EXPECT_THAT(ReadAllRecords(path), IsOkAndHolds(ElementsAre("one", "two")));
}

TEST(RecordWriter, EmptyAndLargeRecordsRoundTrip) {
  const std::string large(200 * 1024, 'x');  // Larger than the write buffer.
  const std::string path = MakeTempDir() + "/records";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordWriter> writer, RecordWriter::Open(path));
  for (const std::string& r : {std::string(), large, std::string("tail")}) {
    ASSERT_OK(writer->WriteRecord(r));
  }
  ASSERT_OK(writer->Close());
  EXPECT_THAT(ReadAllRecords(path), IsOkAndHolds(ElementsAre("", large, "tail")));
}

TEST(RecordWriter, ReportsAWriteErrorNamingTheFile) {
  if (!std::ifstream("/dev/full").good()) GTEST_SKIP() << "no /dev/full";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordWriter> writer,
                       RecordWriter::Open("/dev/full", io::WriteMode::kAppend));
  ASSERT_OK(writer->WriteRecord("buffered until the flush"));
  EXPECT_THAT(writer->Flush(), StatusIs(absl::StatusCode::kResourceExhausted,
                                        AllOf(HasSubstr("/dev/full"), HasSubstr("write"))));
}

TEST(RecordWriter, OpenFailureNamesTheFile) {
  const std::string path = MakeTempDir() + "/missing/records";
  EXPECT_THAT(RecordWriter::Open(path), StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

TEST(RecordReader, CleanEndOfFileIsOutOfRange) {
  TwoRecords f;
  WriteFile(f.path, f.bytes);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordReader> reader, RecordReader::Open(f.path));
  EXPECT_THAT(reader->ReadRecord(), IsOkAndHolds("first"));
  EXPECT_EQ(reader->offset(), TwoRecords::kSecond);
  EXPECT_THAT(reader->ReadRecord(), IsOkAndHolds("second record"));
  EXPECT_EQ(reader->offset(), f.bytes.size());
  EXPECT_THAT(reader->ReadRecord(), StatusIs(absl::StatusCode::kOutOfRange, HasSubstr(f.path)));
  // An empty file holds no records.
  WriteFile(f.path, "");
  EXPECT_THAT(ReadAllRecords(f.path), IsOkAndHolds(ElementsAre()));
}

TEST(RecordReader, EveryTruncationIsDataLossAtTheRecordsOffset) {
  TwoRecords f;
  for (size_t size = 1; size < f.bytes.size(); ++size) {
    if (size == TwoRecords::kSecond) continue;  // A whole first record.
    SCOPED_TRACE(size);
    WriteFile(f.path, f.bytes.substr(0, size));
    const uint64_t offset = size < TwoRecords::kSecond ? 0 : TwoRecords::kSecond;
    EXPECT_THAT(ReadAllRecords(f.path),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(f.path),
                               HasSubstr("truncated record at offset " + std::to_string(offset)))));
  }
}

TEST(RecordReader, AFlippedBitInEachPartIsDataLoss) {
  TwoRecords f;
  struct Part {
    const char* name;
    size_t position;  // Within the second record.
    const char* error;
  };
  for (const Part& part :
       {Part{"length", 0, "length CRC mismatch"}, Part{"length CRC", 9, "length CRC mismatch"},
        Part{"data", 14, "data CRC mismatch"},
        Part{"data CRC", 12 + 13 + 2, "data CRC mismatch"}}) {
    SCOPED_TRACE(part.name);
    std::string bytes = f.bytes;
    bytes[TwoRecords::kSecond + part.position] ^= 0x10;
    WriteFile(f.path, bytes);
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordReader> reader, RecordReader::Open(f.path));
    EXPECT_THAT(reader->ReadRecord(), IsOkAndHolds("first"));
    EXPECT_THAT(reader->ReadRecord(),
                StatusIs(absl::StatusCode::kDataLoss,
                         AllOf(HasSubstr(f.path), HasSubstr("corrupted record at offset 21"),
                               HasSubstr(part.error))));
  }
}

TEST(RecordReader, AHugeLengthWithAValidCrcIsTruncationNotAnAllocation) {
  const std::string path = MakeTempDir() + "/huge";
  std::string header(8, '\0');
  header[7] = 0x40;  // 2^62 data bytes.
  const uint32_t crc = crc32c::Mask(crc32c::Value(header));
  for (int i = 0; i < 4; ++i) header.push_back(static_cast<char>(crc >> (8 * i)));
  WriteFile(path, header + "some data");
  EXPECT_THAT(ReadAllRecords(path),
              StatusIs(absl::StatusCode::kDataLoss,
                       HasSubstr("truncated record at offset 0: 4611686018427387904 data bytes")));
}

// A reader of a file still being written sees the tail as truncated, then
// reads it once the writer has finished it.
TEST(RecordReader, RetriesARecordThatWasCompletedLater) {
  TwoRecords f;
  WriteFile(f.path, f.bytes.substr(0, TwoRecords::kSecond + 15));
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RecordReader> reader, RecordReader::Open(f.path));
  EXPECT_THAT(reader->ReadRecord(), IsOkAndHolds("first"));
  EXPECT_THAT(reader->ReadRecord(), StatusIs(absl::StatusCode::kDataLoss, HasSubstr("truncated")));
  EXPECT_EQ(reader->offset(), TwoRecords::kSecond);
  WriteFile(f.path, f.bytes);
  EXPECT_THAT(reader->ReadRecord(), IsOkAndHolds("second record"));
}

TEST(RecordReader, OpenFailureNamesTheFile) {
  const std::string path = MakeTempDir() + "/absent";
  EXPECT_THAT(ReadAllRecords(path), StatusIs(absl::StatusCode::kNotFound, HasSubstr(path)));
}

}  // namespace
}  // namespace rill
