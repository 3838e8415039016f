#include "io/posix_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <random>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill::io {
namespace {

// Appends smaller than this are gathered; larger ones are written directly.
constexpr size_t kBufferSize = 256 * 1024;

absl::Status ErrnoError(std::string_view what, const std::string& path, int error) {
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

absl::Status SyncDirectoryOf(const std::string& path) {
  const std::string dir = Dirname(path);
  const int fd = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return ErrnoError("cannot open directory", dir, errno);
  const int rc = fsync(fd);
  const int error = errno;
  close(fd);
  // Some file systems cannot sync a directory; the rename still happened.
  if (rc != 0 && error != EINVAL && error != EROFS) {
    return ErrnoError("cannot sync directory", dir, error);
  }
  return absl::OkStatus();
}

// What a file that is not a regular one is, for messages.
const char* FileTypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  return "a special file";
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
  return ErrnoError("cannot open for writing", shown, error);
}

}  // namespace

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

WritableFile::WritableFile(std::string path, int fd, uint64_t size)
    : path_(std::move(path)), fd_(fd), size_(size) {
  buffer_.reserve(kBufferSize);
}

absl::StatusOr<std::unique_ptr<WritableFile>> WritableFile::Open(const std::string& path,
                                                                 WriteMode mode) {
  const int flags = mode == WriteMode::kTruncate ? O_TRUNC
                    : mode == WriteMode::kAppend ? O_APPEND
                                                 : O_EXCL;
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC | flags, 0644);
  if (fd < 0) return ErrnoError("cannot open for writing", path, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoError("cannot stat", path, error);
  }
  return std::unique_ptr<WritableFile>(
      new WritableFile(path, fd, static_cast<uint64_t>(st.st_size)));
}

absl::StatusOr<std::unique_ptr<WritableFile>> WritableFile::CreateBeneath(
    const std::string& dir, const std::string& relative) {
  if (!IsPlainRelativePath(relative)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "'%s' is not a relative path of plain names (none empty, '.' or '..')", relative));
  }
  RETURN_IF_ERROR(CreateDirectories(dir));
  ScopedFd dir_fd(open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dir_fd.get() < 0) return ErrnoError("cannot open directory", dir, errno);
  std::string shown = dir;
  size_t begin = 0;
  for (size_t slash; (slash = relative.find('/', begin)) != std::string::npos; begin = slash + 1) {
    const std::string part = relative.substr(begin, slash - begin);
    shown += "/" + part;
    if (mkdirat(dir_fd.get(), part.c_str(), 0755) != 0 && errno != EEXIST) {
      return ErrnoError("cannot create directory", shown, errno);
    }
    const int next =
        openat(dir_fd.get(), part.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (next < 0) return BeneathError(dir_fd.get(), part, shown, errno);
    dir_fd.reset(next);
  }
  const std::string name = relative.substr(begin);
  shown += "/" + name;
  const int fd = openat(dir_fd.get(), name.c_str(),
                        O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) return BeneathError(dir_fd.get(), name, shown, errno);
  return std::unique_ptr<WritableFile>(new WritableFile(shown, fd, 0));
}

WritableFile::~WritableFile() {
  if (fd_ >= 0) (void)Close();
}

absl::Status WritableFile::WriteAll(const char* data, size_t n) {
  while (n > 0) {
    const ssize_t written = write(fd_, data, n);
    if (written < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot write", path_, errno);
    }
    data += written;
    n -= static_cast<size_t>(written);
  }
  return absl::OkStatus();
}

absl::Status WritableFile::Append(std::string_view data) {
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

absl::Status WritableFile::Flush() {
  if (fd_ < 0) return absl::FailedPreconditionError("flush of closed file '" + path_ + "'");
  const absl::Status status = WriteAll(buffer_.data(), buffer_.size());
  buffer_.clear();
  return status;
}

absl::Status WritableFile::Sync() {
  RETURN_IF_ERROR(Flush());
  if (fdatasync(fd_) != 0) return ErrnoError("cannot sync", path_, errno);
  return absl::OkStatus();
}

absl::Status WritableFile::Close() {
  if (fd_ < 0) return absl::OkStatus();
  absl::Status status = Flush();
  if (close(fd_) != 0 && status.ok()) status = ErrnoError("cannot close", path_, errno);
  fd_ = -1;
  return status;
}

RandomAccessFile::~RandomAccessFile() { close(fd_); }

absl::StatusOr<std::unique_ptr<RandomAccessFile>> RandomAccessFile::Open(const std::string& path) {
  // O_NONBLOCK: opening a FIFO would otherwise wait for a writer before
  // the check below could refuse it.
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) return ErrnoError("cannot open", path, errno);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    const int error = errno;
    close(fd);
    return ErrnoError("cannot stat", path, error);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return absl::InvalidArgumentError(absl::StrFormat("cannot open '%s': %s, not a regular file",
                                                      path, FileTypeName(st.st_mode)));
  }
  return std::unique_ptr<RandomAccessFile>(
      new RandomAccessFile(path, fd, static_cast<uint64_t>(st.st_size)));
}

absl::StatusOr<size_t> RandomAccessFile::ReadUpTo(uint64_t offset, size_t n, char* dst) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = pread(fd_, dst + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0) {
      if (errno == EINTR) continue;
      return ErrnoError("cannot read", path_, errno);
    }
    if (got == 0) break;
    done += static_cast<size_t>(got);
  }
  return done;
}

absl::StatusOr<uint64_t> RandomAccessFile::CurrentSize() const {
  struct stat st {};
  if (fstat(fd_, &st) != 0) return ErrnoError("cannot stat", path_, errno);
  return static_cast<uint64_t>(st.st_size);
}

absl::Status RandomAccessFile::Read(uint64_t offset, size_t n, char* dst) const {
  ASSIGN_OR_RETURN(const size_t got, ReadUpTo(offset, n, dst));
  if (got != n) {
    return absl::DataLossError(
        absl::StrFormat("'%s' is truncated: wanted %d bytes at offset %d, the file has %d bytes",
                        path_, n, offset, size_));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> ReadFileToString(const std::string& path) {
  ASSIGN_OR_RETURN(std::unique_ptr<RandomAccessFile> file, RandomAccessFile::Open(path));
  std::string contents(file->size(), '\0');
  RETURN_IF_ERROR(file->Read(0, contents.size(), contents.data()));
  return contents;
}

std::string TemporaryPathFor(const std::string& path) {
  thread_local std::mt19937_64 random(std::random_device{}());
  return absl::StrFormat("%s.tempstate%d", path, random());
}

absl::Status RenameFile(const std::string& from, const std::string& to) {
  if (rename(from.c_str(), to.c_str()) != 0) {
    return ErrnoError("cannot rename to '" + to + "':", from, errno);
  }
  return SyncDirectoryOf(to);
}

absl::Status WriteFileAtomically(const std::string& path, std::string_view contents) {
  const std::string temp = TemporaryPathFor(path);
  absl::Status status = [&]() -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, WritableFile::Create(temp));
    RETURN_IF_ERROR(file->Append(contents));
    RETURN_IF_ERROR(file->Sync());
    RETURN_IF_ERROR(file->Close());
    return RenameFile(temp, path);
  }();
  if (!status.ok()) unlink(temp.c_str());
  return status;
}

bool FileExists(const std::string& path) { return access(path.c_str(), F_OK) == 0; }

absl::Status DeleteFile(const std::string& path) {
  if (unlink(path.c_str()) != 0) return ErrnoError("cannot delete", path, errno);
  return absl::OkStatus();
}

absl::Status CreateDirectories(const std::string& path) {
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

std::string Dirname(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

absl::StatusOr<std::vector<std::string>> MatchingNames(const std::string& dir,
                                                       const std::string& pattern) {
  std::unique_ptr<DIR, int (*)(DIR*)> handle(opendir(dir.c_str()), closedir);
  if (handle == nullptr) return ErrnoError("cannot list directory", dir, errno);
  std::vector<std::string> names;
  while (const dirent* entry = readdir(handle.get())) {
    if (fnmatch(pattern.c_str(), entry->d_name, 0) == 0) names.emplace_back(entry->d_name);
  }
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace rill::io
