#include "tests/transport/raw_curve_peer.h"

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
namespace {

constexpr absl::Duration kHandshakeWait = absl::Seconds(10);

}  // namespace

absl::StatusOr<std::unique_ptr<RawCurvePeer>> RawCurvePeer::Connect(int port,
                                                                    const CurveKeyPair& client,
                                                                    const CurveKey& server_key,
                                                                    const Options& options) {
  absl::StatusOr<int> fd = ConnectLoopback(port, options.local_address);
  if (!fd.ok()) return fd.status();
  auto peer = std::unique_ptr<RawCurvePeer>(
      new RawCurvePeer(*fd, CurveClient(client, server_key, CurveKeyPair::Random())));
  if (options.stop == Stop::kNothingSent) return peer;
  if (absl::Status s = peer->Greet(); !s.ok()) return s;
  if (options.stop == Stop::kAfterGreeting) return peer;
  if (absl::Status s = peer->HelloWelcome(); !s.ok()) return s;
  if (options.stop == Stop::kAfterWelcome) return peer;
  if (absl::Status s = peer->InitiateReady(); !s.ok()) return s;
  return peer;
}

RawCurvePeer::~RawCurvePeer() { close(fd_); }

absl::Status RawCurvePeer::Greet() {
  // A client's greeting: the server's with the other role.
  std::string greeting = zmtp::ServerGreeting(zmtp::Mechanism::kCurve);
  greeting[32] = 0;
  std::string theirs;
  if (!Send(greeting) ||
      !ReadExactly(zmtp::kGreetingBytes, absl::Now() + kHandshakeWait, &theirs)) {
    return absl::UnavailableError("the server did not complete the greeting");
  }
  return zmtp::CheckGreeting(theirs, zmtp::Mechanism::kCurve);
}

absl::Status RawCurvePeer::HelloWelcome() {
  if (!SendCommand(curve_.Hello())) return absl::UnavailableError("cannot send HELLO");
  absl::StatusOr<std::string> welcome = ReadCommand(kHandshakeWait);
  if (!welcome.ok()) return welcome.status();
  return curve_.Welcome(*welcome);
}

absl::Status RawCurvePeer::InitiateReady() {
  if (!SendCommand(curve_.Initiate())) return absl::UnavailableError("cannot send INITIATE");
  absl::StatusOr<std::string> ready = ReadCommand(kHandshakeWait);
  if (!ready.ok()) return ready.status();
  if (ready->starts_with("\x05"
                         "ERROR")) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "the server sent ERROR '%s'", ready->substr(std::min<size_t>(7, ready->size()))));
  }
  return curve_.Ready(*ready);
}

bool RawCurvePeer::Send(std::string_view bytes) { return SendAll(fd_, bytes); }

bool RawCurvePeer::SendFrame(uint8_t flags, std::string_view body) {
  return SendZmtpFrame(fd_, flags, body);
}

bool RawCurvePeer::SendCommand(std::string_view body) { return SendFrame(zmtp::kCommand, body); }

bool RawCurvePeer::SendSealed(uint8_t flags, std::string_view data, std::optional<uint64_t> nonce) {
  // libzmq sends a MESSAGE as a plain frame; its flags travel in the box.
  return SendFrame(0, curve_.Seal(flags, data, nonce));
}

bool RawCurvePeer::SendRequest(const RpcHeader& header, const std::vector<std::string>& frames) {
  if (!SendSealed(frames.empty() ? 0 : kBoxMore, header.SerializeAsString())) return false;
  for (size_t i = 0; i < frames.size(); ++i) {
    if (!SendSealed(i + 1 < frames.size() ? kBoxMore : 0, frames[i])) return false;
  }
  return true;
}

bool RawCurvePeer::ReadExactly(size_t n, absl::Time deadline, std::string* out) {
  return testing::ReadExactly(fd_, n, deadline, out);
}

absl::StatusOr<RawCurvePeer::Frame> RawCurvePeer::ReadFrame(absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  std::string head;
  if (!ReadExactly(2, deadline, &head)) return absl::UnavailableError("no frame came");
  Frame frame;
  frame.flags = static_cast<uint8_t>(head[0]);
  uint64_t size = static_cast<uint8_t>(head[1]);
  if (frame.flags & zmtp::kLong) {
    std::string rest;
    if (!ReadExactly(7, deadline, &rest)) return absl::UnavailableError("no frame came");
    head += rest;
    size = zmtp::ReadBigEndian64(reinterpret_cast<const uint8_t*>(head.data()) + 1);
  }
  if (size > (uint64_t{1} << 32)) {
    return absl::InvalidArgumentError(absl::StrFormat("a frame of %d bytes", size));
  }
  if (!ReadExactly(static_cast<size_t>(size), deadline, &frame.body)) {
    return absl::UnavailableError("a frame was cut short");
  }
  return frame;
}

absl::StatusOr<std::string> RawCurvePeer::ReadCommand(absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    absl::StatusOr<Frame> frame = ReadFrame(deadline - absl::Now());
    if (!frame.ok()) return frame.status();
    if (frame->flags & zmtp::kCommand) return std::move(frame->body);
  }
}

absl::StatusOr<CurveClient::Opened> RawCurvePeer::ReadSealed(absl::Duration wait) {
  absl::StatusOr<Frame> frame = ReadFrame(wait);
  if (!frame.ok()) return frame.status();
  return curve_.Open(frame->body);
}

std::optional<RawCurvePeer::Reply> RawCurvePeer::ReadReply(absl::Duration wait) {
  const absl::Time deadline = absl::Now() + wait;
  std::optional<Reply> reply;
  for (;;) {
    absl::StatusOr<CurveClient::Opened> opened = ReadSealed(deadline - absl::Now());
    if (!opened.ok()) return std::nullopt;
    if (opened->flags & kBoxCommand) continue;
    if (!reply.has_value()) {
      reply.emplace();
      if (!reply->header.ParseFromString(opened->data)) return std::nullopt;
    } else {
      reply->frames.push_back(std::move(opened->data));
    }
    if (!(opened->flags & kBoxMore)) return reply;
  }
}

int RawCurvePeer::Call(const std::string& method, uint64_t id, std::string* message,
                       absl::Duration wait) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(id);
  if (!SendRequest(header)) return -1;
  const absl::Time deadline = absl::Now() + wait;
  for (;;) {
    std::optional<Reply> reply = ReadReply(deadline - absl::Now());
    if (!reply) return -1;
    if (reply->header.request_id() != id) continue;
    if (message != nullptr) *message = reply->header.status_message();
    return reply->header.status_code();
  }
}

bool RawCurvePeer::ClosedWithin(absl::Duration wait) {
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

}  // namespace rill::testing
