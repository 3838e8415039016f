// RecordWriter appends TFRecord-framed records to a file: the framing of
// TensorFlow's event files and TFRecord data sets, without compression.
#ifndef RILL_IO_RECORD_WRITER_H_
#define RILL_IO_RECORD_WRITER_H_

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/posix_file.h"

namespace rill {

// A record on disk is
//   uint64 LE   length of the data
//   uint32 LE   masked CRC32C of those 8 length bytes
//   bytes       data
//   uint32 LE   masked CRC32C of the data
inline constexpr size_t kRecordHeaderSize = 8 + 4;
inline constexpr size_t kRecordFooterSize = 4;

// The header and footer framing `data`.
std::string EncodeRecordHeader(std::string_view data);
std::string EncodeRecordFooter(std::string_view data);

// Thread safety: none; callers serialize their calls.
class RecordWriter {
 public:
  explicit RecordWriter(std::unique_ptr<io::WritableFile> file) : file_(std::move(file)) {}
  // Closes the file; errors are dropped, so call Close() to see them.
  ~RecordWriter();
  RecordWriter(const RecordWriter&) = delete;
  RecordWriter& operator=(const RecordWriter&) = delete;

  // Opens `path` for records (by default adding to what is there) through
  // `env`.
  static absl::StatusOr<std::unique_ptr<RecordWriter>> Open(
      const std::string& path, io::WriteMode mode = io::WriteMode::kAppend,
      io::Env* env = io::Env::Default());

  // May stay buffered until Flush or Close.
  absl::Status WriteRecord(std::string_view data);
  // Hands the records to the OS and waits until they are on disk (fsync),
  // so that a crash after it returns loses none of them.
  absl::Status Flush();
  absl::Status Close();

  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<io::WritableFile> file_;
};

}  // namespace rill

#endif  // RILL_IO_RECORD_WRITER_H_
