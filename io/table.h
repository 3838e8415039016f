// A sorted key-value file in LevelDB's table format, written with the
// options TensorFlow uses for a checkpoint's .index (256 KiB blocks, no
// compression), so that the same entries give the same bytes.
#ifndef RILL_IO_TABLE_H_
#define RILL_IO_TABLE_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/posix_file.h"

namespace leveldb {
class Table;
class TableBuilder;
}  // namespace leveldb

namespace rill::io {

// TensorFlow's table block size (LevelDB's own default is 4 KiB).
constexpr size_t kTableBlockSize = 256 * 1024;

// Thread safety: none.
class TableWriter {
 public:
  // `file` must outlive the writer; Finish does not close it.
  explicit TableWriter(WritableFile* file);
  ~TableWriter();
  TableWriter(const TableWriter&) = delete;
  TableWriter& operator=(const TableWriter&) = delete;

  // REQUIRES (checked): keys strictly increase in byte-wise order.
  absl::Status Add(std::string_view key, std::string_view value);
  // Writes the index block and footer.
  absl::Status Finish();

 private:
  class FileAdapter;
  std::unique_ptr<FileAdapter> adapter_;
  std::unique_ptr<leveldb::TableBuilder> builder_;
  std::string last_key_;
  bool finished_ = false;
};

// Reads a table, checking every block's checksum. Errors name the file.
// Open checks the block handles against the file's size first (DATA_LOSS):
// LevelDB allocates a block's size before reading it.
// Thread safety: Get and ForEach may be called concurrently.
class TableReader {
 public:
  static absl::StatusOr<std::unique_ptr<TableReader>> Open(const std::string& path,
                                                           Env* env = Env::Default());
  ~TableReader();
  TableReader(const TableReader&) = delete;
  TableReader& operator=(const TableReader&) = delete;

  // nullopt when the key is not in the table.
  absl::StatusOr<std::optional<std::string>> Get(std::string_view key) const;
  // Calls `visit` for each entry in key order; stops at its first error.
  absl::Status ForEach(
      const std::function<absl::Status(std::string_view key, std::string_view value)>& visit) const;

  const std::string& path() const { return file_->path(); }

 private:
  class FileAdapter;
  TableReader(std::unique_ptr<RandomAccessFile> file, std::unique_ptr<FileAdapter> adapter,
              std::unique_ptr<leveldb::Table> table);

  std::unique_ptr<RandomAccessFile> file_;
  std::unique_ptr<FileAdapter> adapter_;
  std::unique_ptr<leveldb::Table> table_;
};

}  // namespace rill::io

#endif  // RILL_IO_TABLE_H_
