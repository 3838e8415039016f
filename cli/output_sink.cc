#include "cli/output_sink.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>

namespace rill::cli {

OutputSink::OutputSink(int fd, size_t limit) : fd_(fd), limit_(std::max<size_t>(limit, 1)) {
  struct stat info;
  if (fstat(fd, &info) != 0) return;  // Writes will fail, and drop what they carry.
  if (S_ISSOCK(info.st_mode)) {
    mode_ = Mode::kSocket;
  } else if (S_ISFIFO(info.st_mode) || S_ISCHR(info.st_mode)) {
    const std::string path = "/proc/self/fd/" + std::to_string(fd);
    own_fd_ = open(path.c_str(), O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    mode_ = own_fd_ >= 0 ? Mode::kNonBlocking : Mode::kPollFirst;
    if (own_fd_ >= 0) fd_ = own_fd_;
  }
}

OutputSink::~OutputSink() {
  if (own_fd_ >= 0) close(own_fd_);
}

void OutputSink::Write(std::string_view text) {
  if (gone_ || text.empty()) return;
  if (buffer_.size() - head_ >= 4 * limit_) {
    dropped_ += text.size();
    return;
  }
  buffer_.append(text);
  Flush();
}

void OutputSink::Flush() {
  while (!gone_ && pending()) {
    const char* data = buffer_.data() + head_;
    size_t size = buffer_.size() - head_;
    ssize_t n;
    if (mode_ == Mode::kPollFirst) {
      pollfd writable = {.fd = fd_, .events = POLLOUT, .revents = 0};
      if (poll(&writable, 1, 0) <= 0) break;
      size = std::min<size_t>(size, PIPE_BUF);
    }
    if (mode_ == Mode::kSocket) {
      n = send(fd_, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    } else {
      n = write(fd_, data, size);
    }
    if (n > 0) {
      head_ += static_cast<size_t>(n);
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      break;
    } else if (!(n < 0 && errno == EINTR)) {
      gone_ = true;
    }
  }
  if (gone_ || !pending()) {
    buffer_.clear();
    head_ = 0;
  } else if (head_ >= buffer_.size() / 2) {
    buffer_.erase(0, head_);
    head_ = 0;
  }
}

void OutputSink::Abandon() {
  dropped_ += buffer_.size() - head_;
  buffer_.clear();
  head_ = 0;
}

}  // namespace rill::cli
