#include "tests/transport/raw_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "transport/zmtp/protocol.h"

namespace rill::testing {

absl::StatusOr<int> ConnectLoopback(int port, const std::string& from) {
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return absl::ResourceExhaustedError(std::strerror(errno));
  if (!from.empty()) {
    sockaddr_in local{};
    local.sin_family = AF_INET;
    if (inet_pton(AF_INET, from.c_str(), &local.sin_addr) != 1 ||
        bind(fd, reinterpret_cast<sockaddr*>(&local), sizeof(local)) != 0) {
      const int error = errno;
      close(fd);
      return absl::UnavailableError(absl::StrFormat("bind to %s: %s", from, std::strerror(error)));
    }
  }
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<uint16_t>(port));
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrFormat("connect to port %d: %s", port, std::strerror(error)));
  }
  return fd;
}

bool SendAll(int fd, std::string_view bytes) {
  while (!bytes.empty()) {
    const ssize_t n = send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

bool SendZmtpFrame(int fd, uint8_t flags, std::string_view body) {
  uint8_t header[zmtp::kLongHeaderBytes];
  const size_t length = zmtp::EncodeFrameHeader(flags, body.size(), header);
  return SendAll(fd, std::string_view(reinterpret_cast<const char*>(header), length)) &&
         SendAll(fd, body);
}

bool ReadExactly(int fd, size_t n, absl::Time deadline, std::string* out) {
  out->clear();
  while (out->size() < n) {
    pollfd poll_fd = {fd, POLLIN, 0};
    const int64_t wait = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (wait <= 0 || poll(&poll_fd, 1, static_cast<int>(wait)) <= 0) return false;
    char buffer[65536];
    const ssize_t got = recv(fd, buffer, std::min(sizeof(buffer), n - out->size()), 0);
    if (got <= 0) return false;
    out->append(buffer, static_cast<size_t>(got));
  }
  return true;
}

}  // namespace rill::testing
