#include "transport/peer_limits.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "tests/test_util.h"
#include "transport/rpc.h"
#include "transport/wire.h"
#include "zmq_addon.hpp"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

using ::rill::testing::CapturedLog;

TEST(PeerLimits, AdmitsUpToTheLimitsThenRefusesThenDropsAndRecovers) {
  CapturedLog log;
  auto limits =
      PeerLimits::Create({.max_calls_per_peer = 2, .max_bytes_per_peer = 1000}, 7, log.file());
  PeerLimits::Admission first = limits->Admit("a", "127.0.0.1:5", 10);
  PeerLimits::Admission second = limits->Admit("a", "", 10);
  EXPECT_OK(first.refusal);
  EXPECT_OK(second.refusal);
  EXPECT_EQ(limits->Held("a"), std::make_pair(int64_t{2}, int64_t{20}));

  std::vector<PeerLimits::Admission> refused;
  for (int i = 0; i < PeerLimits::kMaxQueuedRefusals; ++i) {
    refused.push_back(limits->Admit("a", "", 10));
    EXPECT_THAT(refused.back().refusal, StatusIs(absl::StatusCode::kResourceExhausted,
                                                 HasSubstr("holds 2 calls (20 bytes)")));
    EXPECT_TRUE(refused.back().ticket);  // Its refusal is sent.
  }
  PeerLimits::Admission dropped = limits->Admit("a", "", 10);
  EXPECT_FALSE(dropped.ticket);  // It does not read its refusals either.
  EXPECT_THAT(log.Read(), HasSubstr("connection 127.0.0.1:5 holds 2 calls"));

  // Another connection has limits of its own.
  EXPECT_OK(limits->Admit("b", "", 10).refusal);

  // One reply written: room again.
  first.ticket = PeerLimits::Ticket();
  EXPECT_THAT(log.Read(), HasSubstr("connection 127.0.0.1:5 is under its limits again (17 calls "
                                    "refused)"));
  PeerLimits::Admission third = limits->Admit("a", "", 10);
  EXPECT_OK(third.refusal);
  refused.clear();
  second.ticket = PeerLimits::Ticket();
  third.ticket = PeerLimits::Ticket();
  EXPECT_EQ(limits->Held("a"), std::make_pair(int64_t{0}, int64_t{0}));
}

TEST(PeerLimits, BytesCountRequestsAndRepliesAndOneLargeCallIsAlwaysAdmitted) {
  CapturedLog log;
  auto limits =
      PeerLimits::Create({.max_calls_per_peer = 100, .max_bytes_per_peer = 1000}, 7, log.file());
  PeerLimits::Admission large = limits->Admit("a", "", 5000);
  EXPECT_OK(large.refusal);
  EXPECT_THAT(limits->Admit("a", "", 1).refusal,
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("(5000 bytes)")));
  large.ticket = PeerLimits::Ticket();

  PeerLimits::Admission call = limits->Admit("a", "", 100);
  call.ticket.AddBytes(900);  // Its reply.
  EXPECT_EQ(limits->Held("a"), std::make_pair(int64_t{1}, int64_t{1000}));
  EXPECT_EQ(limits->Admit("a", "", 1).refusal.code(), absl::StatusCode::kResourceExhausted);
}

TEST(PeerLimits, AFrameCarriesItsTicketUntilZeroMqReleasesIt) {
  CapturedLog log;
  auto limits = PeerLimits::Create({}, 7, log.file());
  std::vector<zmq::message_t> frames;
  frames.emplace_back(std::string("identity"));
  frames.emplace_back(std::string("x"));  // Small: its bytes live in the message.
  const int64_t bytes = FrameBytes(frames);
  EXPECT_EQ(bytes, 9);
  AttachTicket(frames, limits->Admit("a", "", bytes).ticket);
  EXPECT_EQ(std::string(frames.back().data<char>(), frames.back().size()), "x");
  EXPECT_EQ(limits->Held("a").first, 1);
  frames.clear();
  EXPECT_EQ(limits->Held("a").first, 0);
}

TEST(ConnectionCap, RefusesConnectionsOverTheCapUntilOneCloses) {
  CapturedLog log;
  ConnectionCap cap(1, 7, log.file());
  cap.Accepted(10);
  EXPECT_OK(cap.Check(10));
  cap.Accepted(11);
  EXPECT_THAT(cap.Check(11), StatusIs(absl::StatusCode::kResourceExhausted,
                                      HasSubstr("serves at most 1 connections at once")));
  EXPECT_THAT(log.Read(), HasSubstr("1 connections open, the limit"));
  cap.Disconnected(10);
  EXPECT_OK(cap.Check(11));
  EXPECT_EQ(cap.open(), 1);
  cap.Disconnected(11);
  EXPECT_EQ(cap.open(), 0);
}

TEST(ConnectionCap, ShutsTheOldestWaitingConnectionDownBeyondTheWaitingRoom) {
  CapturedLog log;
  ConnectionCap cap(0, 7, log.file());
  std::vector<std::pair<int, int>> pairs;
  for (int i = 0; i <= ConnectionCap::kMaxWaiting; ++i) {
    int fds[2];
    ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, fds), 0);
    pairs.emplace_back(fds[0], fds[1]);
    cap.Accepted(fds[0]);
  }
  // The oldest was shut down: its other end reads end-of-file.
  char byte;
  EXPECT_EQ(read(pairs.front().second, &byte, 1), 0);
  EXPECT_OK(cap.Check(pairs.front().first));  // No longer waiting.
  EXPECT_EQ(cap.Check(pairs.back().first).code(), absl::StatusCode::kResourceExhausted);
  for (auto [a, b] : pairs) {
    close(a);
    close(b);
  }
}

// A raw DEALER: sends requests and reads replies at its own pace.
class RawClient {
 public:
  explicit RawClient(int port, int receive_buffer = 0)
      : dealer_(context_, zmq::socket_type::dealer) {
    dealer_.set(zmq::sockopt::linger, 0);
    if (receive_buffer > 0) {
      dealer_.set(zmq::sockopt::rcvhwm, 1);
      dealer_.set(zmq::sockopt::rcvbuf, receive_buffer);
    }
    dealer_.connect("tcp://127.0.0.1:" + std::to_string(port));
  }
  void Send(const std::string& method, uint64_t id) {
    RpcHeader header;
    header.set_method(method);
    header.set_request_id(id);
    std::vector<zmq::message_t> frames;
    frames.push_back(EncodeHeader(header));
    ASSERT_TRUE(zmq::send_multipart(dealer_, frames).has_value());
  }
  // The next reply's header, or nullopt after `wait` of silence.
  std::optional<RpcHeader> Receive(absl::Duration wait) {
    dealer_.set(zmq::sockopt::rcvtimeo, static_cast<int>(absl::ToInt64Milliseconds(wait)));
    std::vector<zmq::message_t> reply;
    if (!zmq::recv_multipart(dealer_, std::back_inserter(reply))) return std::nullopt;
    absl::StatusOr<RpcHeader> header = DecodeHeader(reply.at(0));
    return header.ok() ? std::optional<RpcHeader>(*header) : std::nullopt;
  }
  absl::StatusCode Call(const std::string& method, uint64_t id, std::string* message = nullptr) {
    Send(method, id);
    for (;;) {
      std::optional<RpcHeader> reply = Receive(absl::Seconds(20));
      if (!reply) return absl::StatusCode::kDeadlineExceeded;
      if (reply->request_id() != id) continue;
      if (message != nullptr) *message = reply->status_message();
      return static_cast<absl::StatusCode>(reply->status_code());
    }
  }

 private:
  zmq::context_t context_;
  zmq::socket_t dealer_;
};

std::unique_ptr<RpcServer> StartServer(const PeerLimitOptions& limits, std::FILE* log) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.bind_ipc = false;
  options.limits = limits;
  options.log = log;
  // Four MiB per reply, so that a reader that stops soon fills every buffer.
  RpcHandler large = [](RpcMessage, RpcDone done) {
    done(absl::OkStatus(), {"", {Tensor(DT_FLOAT, TensorShape({1 << 20}))}});
  };
  absl::StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(
      options,
      {{"Large", large}, {"Small", [](RpcMessage, RpcDone done) { done(absl::OkStatus(), {}); }}});
  EXPECT_OK(server);
  return server.ok() ? *std::move(server) : nullptr;
}

TEST(RpcServerLimits, AClientThatNeverReadsIsRefusedThenDroppedAndServedAgainOnceItReads) {
  CapturedLog log;
  auto server = StartServer({.max_calls_per_peer = 4}, log.file());
  ASSERT_NE(server, nullptr);
  RawClient flooder(server->port(), /*receive_buffer=*/4096);
  constexpr int kCalls = 100;
  for (int i = 1; i <= kCalls; ++i) flooder.Send("Large", i);

  // Other connections are served meanwhile.
  RawClient other(server->port());
  EXPECT_EQ(other.Call("Small", 1), absl::StatusCode::kOk);

  int answered = 0;
  int refused = 0;
  std::string refusal;
  while (std::optional<RpcHeader> reply = flooder.Receive(absl::Seconds(3))) {
    if (reply->status_code() == 0) ++answered;
    if (reply->status_code() == static_cast<int>(absl::StatusCode::kResourceExhausted)) {
      ++refused;
      refusal = reply->status_message();
    }
  }
  EXPECT_GE(answered, 4);
  EXPECT_GE(refused, 1);
  EXPECT_LT(answered + refused, kCalls);  // The rest were dropped unanswered.
  EXPECT_THAT(refusal, HasSubstr("whose replies it has not read"));
  EXPECT_THAT(log.Read(), HasSubstr("refusing its calls until it reads them"));

  // It has read everything: served again.
  EXPECT_EQ(flooder.Call("Large", kCalls + 1), absl::StatusCode::kOk);
  EXPECT_THAT(log.Read(), HasSubstr("is under its limits again"));
}

TEST(RpcServerLimits, ConnectionsOverTheCapAreToldWhyAndServedOnceOneCloses) {
  CapturedLog log;
  auto server = StartServer({.max_connections = 1}, log.file());
  ASSERT_NE(server, nullptr);
  auto first = std::make_unique<RawClient>(server->port());
  EXPECT_EQ(first->Call("Small", 1), absl::StatusCode::kOk);
  RawClient second(server->port());
  std::string why;
  EXPECT_EQ(second.Call("Small", 1, &why), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(why, HasSubstr("serves at most 1 connections at once"));

  first.reset();
  // The server hears of the closed connection soon after.
  absl::StatusCode code = absl::StatusCode::kResourceExhausted;
  for (int i = 2; i < 200 && code == absl::StatusCode::kResourceExhausted; ++i) {
    code = second.Call("Small", i);
    if (code == absl::StatusCode::kResourceExhausted) absl::SleepFor(absl::Milliseconds(50));
  }
  EXPECT_EQ(code, absl::StatusCode::kOk);
  EXPECT_THAT(log.Read(), HasSubstr("every connection is served again (1 were over the cap)"));
}

}  // namespace
}  // namespace rill
