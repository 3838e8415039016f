// RecordReader reads TFRecord-framed records (record_writer.h) one after
// another, checking both CRCs of each; bad input gives an error, never a crash.
#ifndef RILL_IO_RECORD_READER_H_
#define RILL_IO_RECORD_READER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/posix_file.h"

namespace rill {

// Thread safety: none; one reader per thread.
class RecordReader {
 public:
  explicit RecordReader(std::unique_ptr<io::RandomAccessFile> file) : file_(std::move(file)) {}

  static absl::StatusOr<std::unique_ptr<RecordReader>> Open(const std::string& path,
                                                            io::Env* env = io::Env::Default());

  // The data of the next record. OUT_OF_RANGE at a clean end of file (no
  // byte after the last whole record). DATA_LOSS for a truncated record or
  // a CRC mismatch, naming the file, the record's offset and what is wrong:
  //   "/logs/events.out...: corrupted record at offset 47: data CRC
  //    mismatch (stored 0x1b3ae80d, computed 0x0badf00d)"
  // After an error the reader stays at that record, so that a reader of a
  // file still being appended can try again later.
  absl::StatusOr<std::string> ReadRecord();

  // Where the next record starts.
  uint64_t offset() const { return offset_; }
  const std::string& path() const { return file_->path(); }

 private:
  std::unique_ptr<io::RandomAccessFile> file_;
  uint64_t offset_ = 0;
};

// The data of every record in the file at `path`, in order.
absl::StatusOr<std::vector<std::string>> ReadAllRecords(const std::string& path);

}  // namespace rill

#endif  // RILL_IO_RECORD_READER_H_
