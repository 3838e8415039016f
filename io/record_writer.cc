#include "io/record_writer.h"

#include <cstdint>
#include <utility>

#include "graph/status_macros.h"
#include "io/crc32c.h"

namespace rill {
namespace {

void AppendFixed32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

void AppendFixed64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

std::string EncodeRecordHeader(std::string_view data) {
  std::string header;
  header.reserve(kRecordHeaderSize);
  AppendFixed64(header, data.size());
  AppendFixed32(header, crc32c::Mask(crc32c::Value(header)));
  return header;
}

std::string EncodeRecordFooter(std::string_view data) {
  std::string footer;
  footer.reserve(kRecordFooterSize);
  AppendFixed32(footer, crc32c::Mask(crc32c::Value(data)));
  return footer;
}

RecordWriter::~RecordWriter() { Close().IgnoreError(); }

absl::StatusOr<std::unique_ptr<RecordWriter>> RecordWriter::Open(const std::string& path,
                                                                 io::WriteMode mode, io::Env* env) {
  ASSIGN_OR_RETURN(std::unique_ptr<io::WritableFile> file, env->NewWritableFile(path, mode));
  return std::make_unique<RecordWriter>(std::move(file));
}

absl::Status RecordWriter::WriteRecord(std::string_view data) {
  RETURN_IF_ERROR(file_->Append(EncodeRecordHeader(data)));
  RETURN_IF_ERROR(file_->Append(data));
  return file_->Append(EncodeRecordFooter(data));
}

absl::Status RecordWriter::Flush() { return file_->Sync(); }

absl::Status RecordWriter::Close() { return file_->Close(); }

}  // namespace rill
