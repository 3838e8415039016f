#include "io/record_reader.h"

#include <cstdint>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/crc32c.h"
#include "io/record_writer.h"

namespace rill {
namespace {

uint32_t DecodeFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

uint64_t DecodeFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<RecordReader>> RecordReader::Open(const std::string& path,
                                                                 io::Env* env) {
  ASSIGN_OR_RETURN(std::unique_ptr<io::RandomAccessFile> file, env->NewRandomAccessFile(path));
  return std::make_unique<RecordReader>(std::move(file));
}

absl::StatusOr<std::string> RecordReader::ReadRecord() {
  const auto data_loss = [&](const char* kind, const std::string& detail) {
    return absl::DataLossError(
        absl::StrCat(path(), ": ", kind, " record at offset ", offset_, ": ", detail));
  };
  char header[kRecordHeaderSize];
  ASSIGN_OR_RETURN(const size_t got, file_->ReadUpTo(offset_, sizeof(header), header));
  if (got == 0) {
    return absl::OutOfRangeError(absl::StrCat(path(), ": end of file at offset ", offset_));
  }
  if (got < sizeof(header)) {
    return data_loss("truncated",
                     absl::StrFormat("header has %d of %d bytes", got, sizeof(header)));
  }
  // The length is checked before it is trusted, so that a flipped bit
  // cannot make the reader allocate or skip a wrong amount.
  const uint32_t stored_length_crc = crc32c::Unmask(DecodeFixed32(header + 8));
  const uint32_t length_crc = crc32c::Value(header, 8);
  if (stored_length_crc != length_crc) {
    return data_loss("corrupted",
                     absl::StrFormat("length CRC mismatch (stored 0x%08x, computed 0x%08x)",
                                     stored_length_crc, length_crc));
  }
  const uint64_t length = DecodeFixed64(header);
  ASSIGN_OR_RETURN(const uint64_t size, file_->CurrentSize());
  const uint64_t available =
      size > offset_ + kRecordHeaderSize ? size - offset_ - kRecordHeaderSize : 0;
  if (available < kRecordFooterSize || length > available - kRecordFooterSize) {
    return data_loss("truncated",
                     absl::StrFormat("%d data bytes and a %d-byte CRC announced, %d bytes left",
                                     length, kRecordFooterSize, available));
  }
  std::string data(length + kRecordFooterSize, '\0');
  ASSIGN_OR_RETURN(const size_t read,
                   file_->ReadUpTo(offset_ + kRecordHeaderSize, data.size(), data.data()));
  if (read < data.size()) {
    return data_loss("truncated",
                     absl::StrFormat("%d of %d data and CRC bytes", read, data.size()));
  }
  const uint32_t stored_data_crc = crc32c::Unmask(DecodeFixed32(data.data() + length));
  data.resize(length);
  const uint32_t data_crc = crc32c::Value(data);
  if (stored_data_crc != data_crc) {
    return data_loss("corrupted",
                     absl::StrFormat("data CRC mismatch (stored 0x%08x, computed 0x%08x)",
                                     stored_data_crc, data_crc));
  }
  offset_ += kRecordHeaderSize + length + kRecordFooterSize;
  return data;
}

absl::StatusOr<std::vector<std::string>> ReadAllRecords(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<RecordReader> reader, RecordReader::Open(path));
  std::vector<std::string> records;
  while (true) {
    absl::StatusOr<std::string> record = reader->ReadRecord();
    if (absl::IsOutOfRange(record.status())) return records;
    if (!record.ok()) return record.status();
    records.push_back(*std::move(record));
  }
}

}  // namespace rill
