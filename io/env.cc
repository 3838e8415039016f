#include "io/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"

namespace rill::io {
namespace {

class PosixEnv final : public Env {
 public:
  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                WriteMode mode) override {
    return NewPosixWritableFile(path, mode);
  }

  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override {
    return NewPosixRandomAccessFile(path);
  }

  bool FileExists(const std::string& path) override { return access(path.c_str(), F_OK) == 0; }

  absl::Status DeleteFile(const std::string& path) override {
    if (unlink(path.c_str()) != 0) return PosixError("cannot delete", path, errno);
    return absl::OkStatus();
  }

  absl::Status CreateDir(const std::string& path) override {
    std::error_code error;
    std::filesystem::create_directories(path, error);
    if (!error && !std::filesystem::is_directory(path, error)) {
      error = std::make_error_code(std::errc::not_a_directory);
    }
    if (!error) return absl::OkStatus();
    const std::string message =
        absl::StrFormat("cannot create directory '%s': %s", path, error.message());
    if (error == std::errc::not_a_directory || error == std::errc::file_exists) {
      return absl::FailedPreconditionError(message);
    }
    if (error == std::errc::permission_denied) return absl::PermissionDeniedError(message);
    return absl::InternalError(message);
  }

  absl::Status DeleteDir(const std::string& path) override {
    if (rmdir(path.c_str()) != 0) return PosixError("cannot remove directory", path, errno);
    return absl::OkStatus();
  }

  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override {
    std::unique_ptr<DIR, int (*)(DIR*)> handle(opendir(dir.c_str()), closedir);
    if (handle == nullptr) return PosixError("cannot list directory", dir, errno);
    std::vector<std::string> names;
    while (const dirent* entry = readdir(handle.get())) {
      const std::string_view name = entry->d_name;
      if (name != "." && name != "..") names.emplace_back(name);
    }
    std::sort(names.begin(), names.end());
    return names;
  }

  absl::Status RenameFile(const std::string& from, const std::string& to) override {
    // rename(2) would replace a device or FIFO as readily as a file.
    RETURN_IF_ERROR(CheckOutputPath(to));
    if (rename(from.c_str(), to.c_str()) != 0) {
      return PosixError("cannot rename to '" + to + "':", from, errno);
    }
    return absl::OkStatus();
  }

  absl::Status SyncDir(const std::string& dir) override {
    const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return PosixError("cannot open directory", dir, errno);
    const int rc = fsync(fd);
    const int error = errno;
    close(fd);
    // Some file systems cannot sync a directory; the names are there.
    if (rc != 0 && error != EINVAL && error != EROFS) {
      return PosixError("cannot sync directory", dir, error);
    }
    return absl::OkStatus();
  }
};

// The default Env. Relaxed would do for the pointer itself; acquire/release
// so that an Env a test installs is seen fully built by other threads.
std::atomic<Env*>& DefaultEnv() {
  static std::atomic<Env*> env{Env::Posix()};
  return env;
}

}  // namespace

Env* Env::Posix() {
  // Never destroyed: threads may still write while the process exits.
  static PosixEnv* const env = new PosixEnv;
  return env;
}

Env* Env::Default() { return DefaultEnv().load(std::memory_order_acquire); }

ScopedDefaultEnv::ScopedDefaultEnv(Env* env)
    : previous_(
          DefaultEnv().exchange(env != nullptr ? env : Env::Posix(), std::memory_order_acq_rel)) {}

ScopedDefaultEnv::~ScopedDefaultEnv() { DefaultEnv().store(previous_, std::memory_order_release); }

absl::StatusOr<std::unique_ptr<WritableFile>> WritableFile::Open(const std::string& path,
                                                                 WriteMode mode) {
  return Env::Default()->NewWritableFile(path, mode);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(const std::string& path) {
  return Env::Default()->NewRandomAccessFile(path);
}

absl::Status RandomAccessFile::Read(uint64_t offset, size_t n, char* dst) const {
  ASSIGN_OR_RETURN(const size_t got, ReadUpTo(offset, n, dst));
  if (got != n) {
    return absl::DataLossError(
        absl::StrFormat("'%s' is truncated: wanted %d bytes at offset %d, the file has %d bytes",
                        path(), n, offset, size()));
  }
  return absl::OkStatus();
}

}  // namespace rill::io
