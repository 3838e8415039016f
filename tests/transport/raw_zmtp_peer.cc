#include "tests/transport/raw_zmtp_peer.h"

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
#include "tests/transport/raw_socket.h"
#include "transport/zmtp/protocol.h"

namespace rill::testing {

absl::StatusOr<std::unique_ptr<RawZmtpPeer>> RawZmtpPeer::Connect(int port, Stop stop) {
  absl::StatusOr<int> fd = ConnectLoopback(port);
  if (!fd.ok()) return fd.status();
  auto peer = std::unique_ptr<RawZmtpPeer>(new RawZmtpPeer(*fd));
  if (stop == Stop::kNothingSent) return peer;
  // A client's greeting: the server's with the other role.
  std::string greeting = zmtp::ServerGreeting(zmtp::Mechanism::kNull);
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  std::string theirs;
  if (!peer->Send(greeting) || !peer->ReadExactly(zmtp::kGreetingBytes, deadline, &theirs)) {
    return absl::UnavailableError("the server did not complete the greeting");
  }
  if (stop == Stop::kAfterGreeting) return peer;
  const std::string ready = zmtp::CommandBody(
      "READY", zmtp::EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}}));
  std::string header;
  if (!peer->SendFrame(zmtp::kCommand, ready) || !peer->ReadExactly(2, deadline, &header)) {
    return absl::UnavailableError("the server did not answer READY");
  }
  std::string body;
  if (!peer->ReadExactly(static_cast<uint8_t>(header[1]), deadline, &body) ||
      !body.starts_with("\x05READY")) {
    return absl::UnavailableError("the server's READY is missing");
  }
  return peer;
}

RawZmtpPeer::~RawZmtpPeer() { close(fd_); }

bool RawZmtpPeer::Send(std::string_view bytes) { return SendAll(fd_, bytes); }

bool RawZmtpPeer::SendFrame(uint8_t flags, std::string_view body) {
  return SendZmtpFrame(fd_, flags, body);
}

bool RawZmtpPeer::SendRequest(const RpcHeader& header, const std::vector<std::string>& frames) {
  if (!SendFrame(frames.empty() ? 0 : zmtp::kMore, header.SerializeAsString())) return false;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!SendFrame(i + 1 < frames.size() ? zmtp::kMore : 0, frames[i])) return false;
  }
  return true;
}

bool RawZmtpPeer::SendTensorRequest(const std::string& method, uint64_t id, int64_t bytes) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(id);
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_UINT8);
  meta->mutable_shape()->add_dim()->set_size(bytes);
  meta->set_bytes(static_cast<uint64_t>(bytes));
  uint8_t frame_header[zmtp::kLongHeaderBytes];
  const size_t length = zmtp::EncodeFrameHeader(0, static_cast<uint64_t>(bytes), frame_header);
  if (!SendFrame(zmtp::kMore, header.SerializeAsString()) ||
      !Send(std::string_view(reinterpret_cast<const char*>(frame_header), length))) {
    return false;
  }
  const std::string chunk(4 << 20, 'x');
  for (int64_t left = bytes; left > 0; left -= static_cast<int64_t>(chunk.size())) {
    if (!Send(std::string_view(chunk).substr(
            0, static_cast<size_t>(std::min<int64_t>(left, static_cast<int64_t>(chunk.size())))))) {
      return false;
    }
  }
  return true;
}

int64_t RawZmtpPeer::SendEmptyFrames(const std::string& method, int64_t frames) {
  RpcHeader header;
  header.set_method(method);
  if (!SendFrame(zmtp::kMore, header.SerializeAsString())) return 0;
  constexpr int64_t kPerChunk = int64_t{1} << 19;
  std::string chunk;
  for (int64_t i = 0; i < kPerChunk; ++i) chunk += std::string("\x01\x00", 2);
  int64_t sent = 0;
  while (sent < frames && Send(chunk)) sent += kPerChunk;
  return sent;
}

bool RawZmtpPeer::ReadExactly(size_t n, absl::Time deadline, std::string* out) {
  return testing::ReadExactly(fd_, n, deadline, out);
}

std::optional<RpcHeader> RawZmtpPeer::ReadReply(absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  std::optional<RpcHeader> reply;
  for (bool first = true;; first = false) {
    std::string head;
    if (!ReadExactly(2, deadline, &head)) return std::nullopt;
    const uint8_t flags = static_cast<uint8_t>(head[0]);
    uint64_t size = static_cast<uint8_t>(head[1]);
    if (flags & zmtp::kLong) {
      std::string rest;
      if (!ReadExactly(7, deadline, &rest)) return std::nullopt;
      head += rest;
      size = zmtp::ReadBigEndian64(reinterpret_cast<const uint8_t*>(head.data()) + 1);
    }
    std::string body;
    if (!ReadExactly(size, deadline, &body)) return std::nullopt;
    if (flags & zmtp::kCommand) {
      first = true;
      continue;
    }
    if (first) {
      reply.emplace();
      if (!reply->ParseFromString(body)) return std::nullopt;
    }
    if (!(flags & zmtp::kMore)) return reply;
  }
}

int RawZmtpPeer::Call(const std::string& method, uint64_t id, std::string* message,
                      absl::Duration wait) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(id);
  if (!SendRequest(header)) return -1;
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    std::optional<RpcHeader> reply = ReadReply(deadline - absl::Now());
    if (!reply) return -1;
    if (reply->request_id() != id) continue;
    if (message != nullptr) *message = reply->status_message();
    return reply->status_code();
  }
}

bool RawZmtpPeer::ClosedWithin(absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    pollfd fd = {fd_, POLLIN, 0};
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0 || poll(&fd, 1, static_cast<int>(left)) <= 0) return false;
    char buffer[65536];
    const ssize_t got = recv(fd_, buffer, sizeof(buffer), 0);
    if (got <= 0) return true;
  }
}

bool RawZmtpPeer::ClosedUnreadWithin(absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    // The server's close shows as a hang-up or a reset (RST, as it drops
    // unread input); what it sent stays unread.
    pollfd fd = {fd_, POLLRDHUP, 0};
    const int64_t left = absl::ToInt64Milliseconds(deadline - absl::Now());
    if (left <= 0) return false;
    if (poll(&fd, 1, static_cast<int>(std::min<int64_t>(left, 100))) > 0 &&
        (fd.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0) {
      return true;
    }
  }
}

}  // namespace rill::testing
