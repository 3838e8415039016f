// The file operations checkpoints and event files need, over POSIX calls,
// with errors that name the file: sequential writes, positioned reads, and
// the temporary-name-then-rename step that makes a file appear whole.
#ifndef RILL_IO_POSIX_FILE_H_
#define RILL_IO_POSIX_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill::io {

enum class WriteMode {
  kTruncate,   // Create, or empty an existing file.
  kAppend,     // Create, or add to the end of an existing file.
  kCreateNew,  // Create; ALREADY_EXISTS if the file is there.
};

// Appends to a file. Small appends are gathered in a buffer; large ones go
// straight to write(2). Thread safety: none; one writer per file.
class WritableFile {
 public:
  static absl::StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path,
                                                            WriteMode mode);
  // Creates (or truncates) `path`.
  static absl::StatusOr<std::unique_ptr<WritableFile>> Create(const std::string& path) {
    return Open(path, WriteMode::kTruncate);
  }
  // Creates (or truncates) `dir`/`relative`, creating `dir` and the
  // directories `relative` names. No symbolic link below `dir` is followed
  // (FAILED_PRECONDITION naming it), so the file stays inside `dir`;
  // INVALID_ARGUMENT unless IsPlainRelativePath(relative).
  static absl::StatusOr<std::unique_ptr<WritableFile>> CreateBeneath(const std::string& dir,
                                                                     const std::string& relative);
  ~WritableFile();
  WritableFile(const WritableFile&) = delete;
  WritableFile& operator=(const WritableFile&) = delete;

  absl::Status Append(std::string_view data);
  // Hands buffered bytes to the kernel.
  absl::Status Flush();
  // Flush, then fsync: the bytes survive a crash of the machine.
  absl::Status Sync();
  // Flush and close; further calls fail. Does not sync.
  absl::Status Close();

  const std::string& path() const { return path_; }
  // Bytes appended so far (including any the file held when opened).
  uint64_t size() const { return size_; }

 private:
  WritableFile(std::string path, int fd, uint64_t size);
  absl::Status WriteAll(const char* data, size_t n);

  const std::string path_;
  int fd_;
  uint64_t size_;
  std::vector<char> buffer_;
};

// Positioned reads from a file. Thread safety: Read may be called
// concurrently.
class RandomAccessFile {
 public:
  // Positioned reads need a file with a size and an end, which a FIFO, a
  // socket or a device (/dev/zero) lacks: INVALID_ARGUMENT for anything but
  // a regular file, found without waiting for a FIFO's writer.
  static absl::StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);
  ~RandomAccessFile();
  RandomAccessFile(const RandomAccessFile&) = delete;
  RandomAccessFile& operator=(const RandomAccessFile&) = delete;

  // Reads exactly `n` bytes at `offset` into `dst`. A file that ends
  // earlier is DATA_LOSS naming the file, offset and sizes.
  absl::Status Read(uint64_t offset, size_t n, char* dst) const;
  // Reads what there is, up to `n` bytes; returns the count.
  absl::StatusOr<size_t> ReadUpTo(uint64_t offset, size_t n, char* dst) const;

  const std::string& path() const { return path_; }
  // The size when opened.
  uint64_t size() const { return size_; }
  // The size now; it grows while another process appends.
  absl::StatusOr<uint64_t> CurrentSize() const;

 private:
  RandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}

  const std::string path_;
  const int fd_;
  const uint64_t size_;
};

absl::StatusOr<std::string> ReadFileToString(const std::string& path);

// A unique name beside `path` to write to before renaming it into place:
// "<path>.tempstate<random>", as TensorFlow names them.
std::string TemporaryPathFor(const std::string& path);

// Renames `from` to `to` (replacing `to`) and syncs the directory, so that
// the new name survives a crash.
absl::Status RenameFile(const std::string& from, const std::string& to);

// Writes `contents` under a temporary name, syncs it and renames it to
// `path`: readers see the old file or the whole new one, never a part.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents);

// True when `path` is one or more '/'-separated names, none of them empty,
// "." or "..": a path that cannot lead out of the directory it is under.
bool IsPlainRelativePath(std::string_view path);

bool FileExists(const std::string& path);
// NOT_FOUND when missing.
absl::Status DeleteFile(const std::string& path);
absl::Status CreateDirectories(const std::string& path);
// The directory part of `path` ("." when there is none).
std::string Dirname(const std::string& path);
// The names (not paths) in `dir` that match the shell glob `pattern`.
absl::StatusOr<std::vector<std::string>> MatchingNames(const std::string& dir,
                                                       const std::string& pattern);

}  // namespace rill::io

#endif  // RILL_IO_POSIX_FILE_H_
