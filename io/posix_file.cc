#include "io/posix_file.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <random>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill::io {
namespace {

// Appends smaller than this are gathered; larger ones are written directly.
constexpr size_t kBufferSize = 256 * 1024;

// What a file that is not a regular one is, for messages.
const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
}

absl::Status NotRegularError(const std::string& path, mode_t mode) {
  return absl::InvalidArgumentError(absl::StrFormat(
      "'%s' is %s, not a regular file: refusing to replace it", path, FileTypeName(mode)));
}

// Closes a descriptor on every return path.
class ScopedFd {
 public:
  explicit ScopedFd(int fd) : fd_(fd) {}
  ~ScopedFd() {
    if (fd_ >= 0) close(fd_);
  }
  ScopedFd(const ScopedFd&) = delete;
  ScopedFd& operator=(const ScopedFd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void reset(int fd) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_;
};

// An openat beneath `dir_fd` failed: a symbolic link there is named as
// such rather than by the errno O_NOFOLLOW gives for it (ELOOP, ENOTDIR).
absl::Status BeneathError(int dir_fd, const std::string& name, const std::string& shown,
                          int error) {
  struct stat st {};
  if (fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISLNK(st.st_mode)) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot write '%s': it is a symbolic link, which is not followed", shown));
  }
  return PosixError("cannot open for writing", shown, error);
}

// A file written with write(2). Small appends are gathered in a buffer;
// large ones go straight to the kernel.
class PosixWritableFile final : public WritableFile {
 public:
  PosixWritableFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {
    buffer_.reserve(kBufferSize);
  }
  ~PosixWritableFile() override {
    if (fd_ >= 0) (void)Close();
  }

  absl::Status Append(std::string_view data) override;
  absl::Status Flush() override;
  absl::Status Sync() override;
  absl::Status Close() override;
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }

 private:
  absl::Status WriteAll(const char* data, size_t n);

  const std::string path_;
  int fd_;
  uint64_t size_;
  std::vector<char> buffer_;
};

class PosixRandomAccessFile final : public RandomAccessFile {
 public:
  PosixRandomAccessFile(std::string path, int fd, uint64_t size)
      : path_(std::move(path)), fd_(fd), size_(size) {}
  ~PosixRandomAccessFile() override { close(fd_); }

  absl::StatusOr<size_t> ReadUpTo(uint64_t offset, size_t n, char* dst) const override;
  const std::string& path() const override { return path_; }
  uint64_t size() const override { return size_; }
  absl::StatusOr<uint64_t> CurrentSize() const override;

 private:
  const std::string path_;
  const int fd_;
  const uint64_t size_;
};

}  // namespace

absl::Status PosixError(std::string_view what, const std::string& path, int error) {
  const std::string message =
      absl::StrFormat("%s '%s': %s", std::string(what), path, std::strerror(error));
  switch (error) {
    case ENOENT:
      return absl::NotFoundError(message);
    case EACCES:
    case EPERM:
      return absl::PermissionDeniedError(message);
    case ENOSPC:
    case EDQUOT:
      return absl::ResourceExhaustedError(message);
    case EEXIST:
      return absl::AlreadyExistsError(message);
    default:
      return absl::InternalError(message);
  }
}

bool IsPlainRelativePath(std::string_view path) {
  if (path.empty()) return false;
  size_t begin = 0;
  while (true) {
    const size_t end = std::min(path.find('/', begin), path.size());
    const std::string_view part = path.substr(begin, end - begin);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == path.size()) return true;
    begin = end + 1;
  }
}

absl::StatusOr<std::unique_ptr<WritableFile>> NewPosixWritableFile(const std::string& path,
                                                                   WriteMode mode) {
  const int flags = mode == WriteMode::kTruncate ? O_TRUNC
                    : mode == WriteMode::kAppend ? O_APPEND
                                                 : O_EXCL;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (fd < 0) return PosixError("cannot open for writing", path, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return PosixError("cannot stat", path, error);
  }
  return std::make_unique<PosixWritableFile>(path, fd, static_cast<uint64_t>(st.st_size));
}

absl::StatusOr<std::unique_ptr<WritableFile>> WritableFile::CreateBeneath(
    const std::string& dir, const std::string& relative) {
  if (!IsPlainRelativePath(relative)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a relative path of plain names (none empty, '.' or '..')", relative));
  }
  RETURN_IF_ERROR(CreateDirectories(dir));
  ScopedFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) return PosixError("cannot open directory", dir, errno);
  std::string shown = dir;
  size_t begin = 0;
  for (size_t slash; (slash = relative.find('/', begin)) != std::string::npos; begin = slash + 1) {
    const std::string part = relative.substr(begin, slash - begin);
    shown += "/" + part;
    if (mkdirat(dir_fd.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
      return PosixError("cannot create directory", shown, errno);
    }
    const int next =
        openat(dir_fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return BeneathError(dir_fd.get(), part, shown, errno);
    dir_fd.reset(next);
  }
  const std::string name = relative.substr(begin);
  shown += "/" + name;
  // A FIFO or device there is refused, not written into: opening a FIFO
  // would wait for a reader, writing a device would feed it.
  struct stat st {};
  if (fstatat(dir_fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISREG(st.st_mode) &&
      !S_ISLNK(st.st_mode)) {
    return NotRegularError(shown, st.st_mode);
  }
  ScopedFd fd(openat(dir_fd.get(), name.c_str(),
                     O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK, 0644));
  if (fd.get() < 0) return BeneathError(dir_fd.get(), name, shown, errno);
  // Checked again on what was opened, in case the name changed meanwhile.
  if (fstat(fd.get(), &st) != 0) return PosixError("cannot stat", shown, errno);
  if (!S_ISREG(st.st_mode)) return NotRegularError(shown, st.st_mode);
  if (fcntl(fd.get(), F_SETFL, fcntl(fd.get(), F_GETFL) & ~O_NONBLOCK) != 0) {
    return PosixError("cannot set blocking writes on", shown, errno);
  }
  auto file = std::make_unique<PosixWritableFile>(shown, fd.get(), 0);
  fd.release();
  return file;
}

absl::Status PosixWritableFile::WriteAll(const char* data, size_t n) {
  while (n > 0) {
    const ssize_t written = write(fd_, data, n);
    if (written < 0) {
      if (errno == EINTR) continue;
      return PosixError("cannot write", path_, errno);
    }
    data += written;
    n -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

absl::Status PosixWritableFile::Append(std::string_view data) {
  if (fd_ < 0) return absl::FailedPreconditionError("write to closed file '" + path_ + "'");
  size_ += data.size();
  if (buffer_.size() + data.size() <= kBufferSize) {
    buffer_.insert(buffer_.end(), data.begin(), data.end());
    return absl::OkStatus();
  }
  RETURN_IF_ERROR(Flush());
  if (data.size() < kBufferSize) {
    buffer_.insert(buffer_.end(), data.begin(), data.end());
    return absl::OkStatus();
  }
  return WriteAll(data.data(), data.size());
}

absl::Status PosixWritableFile::Flush() {
  if (fd_ < 0) return absl::FailedPreconditionError("flush of closed file '" + path_ + "'");
  const absl::Status status = WriteAll(buffer_.data(), buffer_.size());
  buffer_.clear();
  return status;
}

absl::Status PosixWritableFile::Sync() {
  RETURN_IF_ERROR(Flush());
  if (fdatasync(fd_) != 0) return PosixError("cannot sync", path_, errno);
  return absl::OkStatus();
}

absl::Status PosixWritableFile::Close() {
  if (fd_ < 0) return absl::OkStatus();
  absl::Status status = Flush();
  if (close(fd_) != 0 && status.ok()) status = PosixError("cannot close", path_, errno);
  fd_ = -1;
  return status;
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewPosixRandomAccessFile(
    const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before
  // the check below could refuse it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return PosixError("cannot open", path, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return PosixError("cannot stat", path, error);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrFormat("cannot open '%s': %s, not a regular file",
                                                      path, FileTypeName(st.st_mode)));
  }
  return std::make_unique<PosixRandomAccessFile>(path, fd, static_cast<uint64_t>(st.st_size));
}

absl::StatusOr<size_t> PosixRandomAccessFile::ReadUpTo(uint64_t offset, size_t n, char* dst) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return PosixError("cannot read", path_, errno);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

absl::StatusOr<uint64_t> PosixRandomAccessFile::CurrentSize() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) return PosixError("cannot stat", path_, errno);
  return static_cast<uint64_t>(st.st_size);
}

absl::Status CheckOutputPath(const std::string& path) {
  struct stat st {};
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT || errno == ENOTDIR) return absl::OkStatus();
    return PosixError("cannot inspect the output path", path, errno);
  }
  if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode)) return absl::OkStatus();
  return NotRegularError(path, st.st_mode);
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path, Env* env) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, env->NewRandomAccessFile(path));
  std::string contents(file->size(), '\0');
  RETURN_IF_ERROR(file->Read(0, contents.size(), contents.data()));
  return contents;
}

std::string TemporaryPathFor(const std::string& path) {
  thread_local std::mt19937_64 random(std::random_device{}());
  return absl::StrFormat("%s.tempstate%d", path, random());
}

absl::Status RenameFile(const std::string& from, const std::string& to, Env* env) {
  RETURN_IF_ERROR(env->RenameFile(from, to));
  return env->SyncDir(Dirname(to));
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents, Env* env) {
  // Asked before writing: a refused path wastes no temporary file.
  RETURN_IF_ERROR(CheckOutputPath(path));
  const std::string temp = TemporaryPathFor(path);
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                     env->NewWritableFile(temp, WriteMode::kTruncate));
    RETURN_IF_ERROR(file->Append(contents));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
    return RenameFile(temp, path, env);
  }();
  // Once renamed the temporary name is gone; before, it is removed.
  if (!status.ok() && env->FileExists(temp)) env->DeleteFile(temp).IgnoreError();
  return status;
}

bool FileExists(const std::string& path, Env* env) { return env->FileExists(path); }

absl::Status DeleteFile(const std::string& path, Env* env) { return env->DeleteFile(path); }

absl::Status CreateDirectories(const std::string& path, Env* env) { return env->CreateDir(path); }

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::StatusOr<std::vector<std::string>> MatchingNames(const std::string& dir,
                                                       const std::string& pattern, Env* env) {
  ASSIGN_OR_RETURN(std::vector<std::string> names, env->GetChildren(dir));
  std::erase_if(names, [&](const std::string& name) {
    return fnmatch(pattern.c_str(), name.c_str(), 0) != 0;
  });
  return names;
}

}  // namespace rill::io
