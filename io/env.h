// The one interface through which checkpoints, event files and other
// outputs reach the file system, so that tests can wrap it to inject faults.
#ifndef RILL_IO_ENV_H_
#define RILL_IO_ENV_H_

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

// Appends to a file. Errors name the file. Thread safety: none; one writer
// per file.
class WritableFile {
 public:
  // Env::Default()->NewWritableFile(path, mode).
  static absl::StatusOr<std::unique_ptr<WritableFile>> Open(const std::string& path,
                                                            WriteMode mode);
  // Creates (or truncates) `path` through Env::Default().
  static absl::StatusOr<std::unique_ptr<WritableFile>> Create(const std::string& path) {
    return Open(path, WriteMode::kTruncate);
  }
  // Creates (or truncates) `dir`/`relative`, creating `dir` and the
  // directories `relative` names. No symbolic link below `dir` is followed
  // (FAILED_PRECONDITION naming it), so the file stays inside `dir`;
  // INVALID_ARGUMENT unless IsPlainRelativePath(relative), or when the
  // file exists and is not a regular one (CheckOutputPath). POSIX only: it
  // walks directory descriptors, which the Env does not model.
  static absl::StatusOr<std::unique_ptr<WritableFile>> CreateBeneath(const std::string& dir,
                                                                     const std::string& relative);

  virtual ~WritableFile() = default;

  virtual absl::Status Append(std::string_view data) = 0;
  // Hands buffered bytes to the kernel.
  virtual absl::Status Flush() = 0;
  // Flush, then fsync: the bytes survive a crash of the machine (the name
  // survives only once its directory is synced too: Env::SyncDir).
  virtual absl::Status Sync() = 0;
  // Flush and close; further calls fail. Does not sync.
  virtual absl::Status Close() = 0;

  virtual const std::string& path() const = 0;
  // Bytes appended so far (including any the file held when opened).
  virtual uint64_t size() const = 0;
};

// Positioned reads from a regular file. Errors name the file.
// Thread safety: reads may be called concurrently.
class RandomAccessFile {
 public:
  // Env::Default()->NewRandomAccessFile(path).
  static absl::StatusOr<std::unique_ptr<RandomAccessFile>> Open(const std::string& path);

  virtual ~RandomAccessFile() = default;

  // Reads what there is, up to `n` bytes at `offset`; returns the count.
  virtual absl::StatusOr<size_t> ReadUpTo(uint64_t offset, size_t n, char* dst) const = 0;
  // Reads exactly `n` bytes at `offset` into `dst`. A file that ends
  // earlier is DATA_LOSS naming the file, offset and sizes.
  absl::Status Read(uint64_t offset, size_t n, char* dst) const;

  virtual const std::string& path() const = 0;
  // The size when opened.
  virtual uint64_t size() const = 0;
  // The size now; it grows while another process appends.
  virtual absl::StatusOr<uint64_t> CurrentSize() const = 0;
};

// File-system operations, as LevelDB's Env: the POSIX one (Default) or a
// wrapper a test puts around it. Errors name the path and what failed.
// Thread safety: implementations are safe to call from any thread.
class Env {
 public:
  virtual ~Env() = default;

  // The Env every caller that is not given one uses: the POSIX file
  // system, unless a test installed another (ScopedDefaultEnv).
  static Env* Default();
  // The POSIX file system, whatever the default is.
  static Env* Posix();

  virtual absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                        WriteMode mode) = 0;
  // INVALID_ARGUMENT for anything but a regular file (a FIFO, a socket, a
  // device such as /dev/zero has no size or end to read positioned).
  virtual absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) = 0;

  virtual bool FileExists(const std::string& path) = 0;
  // NOT_FOUND when missing.
  virtual absl::Status DeleteFile(const std::string& path) = 0;
  // Creates `path` and its missing parents; FAILED_PRECONDITION when a
  // part of it is not a directory.
  virtual absl::Status CreateDir(const std::string& path) = 0;
  // Removes an empty directory.
  virtual absl::Status DeleteDir(const std::string& path) = 0;
  // The names (not paths) in `dir`, sorted, without "." and "..".
  virtual absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) = 0;
  // Renames `from` to `to`, replacing `to` when it is a regular file (and
  // refusing, INVALID_ARGUMENT, when it is anything else: CheckOutputPath).
  // The new name survives a crash only after SyncDir of `to`'s directory.
  virtual absl::Status RenameFile(const std::string& from, const std::string& to) = 0;
  // Makes the names in `dir` (files created, renamed into it) durable.
  virtual absl::Status SyncDir(const std::string& dir) = 0;
};

// Makes `env` the default Env for its lifetime, for tests whose writes
// happen where no Env can be passed (the SaveV2 kernel under a Session).
// REQUIRES: scopes nest (the last made is the first gone); `env` outlives
// this. A null `env` installs Env::Posix().
class ScopedDefaultEnv {
 public:
  explicit ScopedDefaultEnv(Env* env);
  ~ScopedDefaultEnv();
  ScopedDefaultEnv(const ScopedDefaultEnv&) = delete;
  ScopedDefaultEnv& operator=(const ScopedDefaultEnv&) = delete;

 private:
  Env* const previous_;
};

}  // namespace rill::io

#endif  // RILL_IO_ENV_H_
