// What strangers on a server's port can make it do: the reproductions of
// the attacks on rill servers, each against an RpcServer in this process.
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <deque>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/test_util.h"
#include "tests/transport/raw_zmtp_peer.h"
#include "transport/rpc.h"
#include "transport/wire.h"
#include "transport/zmtp/protocol.h"
#include "zmq_addon.hpp"

namespace rill {
namespace {

using ::rill::testing::CapturedLog;
using ::rill::testing::RawZmtpPeer;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

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

std::unique_ptr<RpcServer> StartServer(const ConnectionLimitOptions& limits, LogSink* log) {
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

// A real client's call, through RpcClient.
absl::Status RealCall(int port, const std::string& method = "Small") {
  RpcClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  options.prefer_ipc = false;
  absl::StatusOr<std::unique_ptr<RpcClient>> client = RpcClient::Connect(options);
  if (!client.ok()) return client.status();
  return (*client)->CallSync(method, {}, absl::Now() + absl::Seconds(20)).status();
}

// This process's peak resident memory, in bytes.
int64_t PeakResidentBytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with("VmHWM:")) continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ', absl::SkipEmpty());
    int64_t kib = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &kib)) return kib << 10;
  }
  return 0;
}

TEST(RpcServerLimits, AMessageOfEmptyFramesEndsItsConnectionAndTheServerServesOn) {
  CapturedLog log;
  auto server = StartServer({}, log.sink());
  ASSERT_NE(server, nullptr);
  ASSERT_OK_AND_ASSIGN(auto stranger, RawZmtpPeer::Connect(server->port()));
  // 40 million empty frames (80 MB), until the server hangs up.
  const int64_t peak_before = PeakResidentBytes();
  EXPECT_LT(stranger->SendEmptyFrames("Small", 40'000'000), 40'000'000);
  EXPECT_TRUE(stranger->ClosedWithin(absl::Seconds(10)));
  EXPECT_LT(PeakResidentBytes() - peak_before, int64_t{64} << 20);
  EXPECT_THAT(log.Read(), HasSubstr("more than 64 frames past the 0 tensors"));
  EXPECT_OK(RealCall(server->port()));
}

TEST(RpcServerLimits, GigabytesAMessageDeclaresAreReadWithoutBeingKeptAndRefused) {
  CapturedLog log;
  auto server = StartServer({.max_bytes_per_connection = 16 << 20}, log.sink());
  ASSERT_NE(server, nullptr);
  constexpr int64_t kDeclared = int64_t{256} << 20;
  const int64_t peak_before = PeakResidentBytes();
  std::vector<std::thread> senders;
  std::vector<std::string> answers(3);
  for (int s = 0; s < 3; ++s) {
    senders.emplace_back([&, s] {
      absl::StatusOr<std::unique_ptr<RawZmtpPeer>> stranger = RawZmtpPeer::Connect(server->port());
      ASSERT_OK(stranger);
      ASSERT_TRUE((*stranger)->SendTensorRequest("Small", 1, kDeclared));
      std::optional<RpcHeader> reply = (*stranger)->ReadReply(absl::Seconds(30));
      ASSERT_TRUE(reply.has_value());
      answers[s] = reply->status_message();
    });
  }
  // A real client is served meanwhile.
  EXPECT_OK(RealCall(server->port()));
  for (std::thread& sender : senders) sender.join();
  for (const std::string& answer : answers) {
    EXPECT_THAT(answer, HasSubstr("past its limit of 16777216 per connection"));
  }
  EXPECT_LT(PeakResidentBytes() - peak_before, int64_t{128} << 20);
}

// Messages that would take the server past the bytes it holds for all its
// connections are refused, while small calls still pass.
TEST(RpcServerLimits, MessagesPastTheServersBudgetAreRefusedWhileSmallCallsPass) {
  CapturedLog log;
  auto release = std::make_shared<absl::Notification>();
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.bind_ipc = false;
  options.limits = {.max_bytes_per_connection = 32 << 20, .max_buffered_bytes = 16 << 20};
  options.log = log.sink();
  // Holds its request (and so its bytes) until released.
  RpcHandler hold = [release](RpcMessage request, RpcDone done) {
    std::thread([release, request = std::move(request), done = std::move(done)] {
      release->WaitForNotification();
      done(absl::OkStatus(), {});
    }).detach();
  };
  absl::StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(
      options,
      {{"Hold", hold}, {"Small", [](RpcMessage, RpcDone done) { done(absl::OkStatus(), {}); }}});
  ASSERT_OK(server);
  const auto connect = [&] {
    RpcClientOptions client;
    client.address = "127.0.0.1:" + std::to_string((*server)->port());
    client.prefer_ipc = false;
    return RpcClient::Connect(client);
  };
  const auto megabytes = [](int n) {
    return RpcMessage{"", {Tensor(DT_UINT8, TensorShape({int64_t{n} << 20}))}};
  };
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> holder, connect());
  absl::Notification held;
  absl::Status held_status;
  holder->Call("Hold", megabytes(12), absl::Now() + absl::Seconds(60),
               [&](absl::Status status, RpcMessage) {
                 held_status = status;
                 held.Notify();
               });
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> other, connect());
  // Until the server has the 12 MiB, 8 more still fit: wait for the refusal.
  absl::Status refused;
  for (int i = 0; i < 100 && refused.ok(); ++i) {
    refused = other->CallSync("Small", megabytes(8), absl::Now() + absl::Seconds(20)).status();
    if (refused.ok()) absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kResourceExhausted,
                                HasSubstr("would pass its limit of 16777216 (max_buffered_bytes")));
  EXPECT_OK(other->CallSync("Small", {"small", {}}, absl::Now() + absl::Seconds(20)).status());
  EXPECT_THAT(log.Read(), HasSubstr("refusing the messages that would pass it"));
  release->Notify();
  held.WaitForNotification();
  EXPECT_OK(held_status);
  EXPECT_OK(other->CallSync("Small", megabytes(8), absl::Now() + absl::Seconds(20)).status());
}

TEST(RpcServerLimits, IdleConnectionsGiveTheirPlacesToNewOnes) {
  CapturedLog log;
  auto server =
      StartServer({.max_connections = 8, .idle_timeout = absl::Milliseconds(300)}, log.sink());
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<RawZmtpPeer>> idle;
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK_AND_ASSIGN(auto peer, RawZmtpPeer::Connect(server->port()));
    idle.push_back(std::move(peer));
  }
  absl::SleepFor(absl::Milliseconds(400));
  EXPECT_OK(RealCall(server->port()));
  EXPECT_THAT(log.Read(), HasSubstr("gives its place to a new one"));
  // The oldest idle ones went first.
  int closed = 0;
  for (auto& peer : idle) closed += peer->ClosedWithin(absl::Milliseconds(100)) ? 1 : 0;
  EXPECT_EQ(closed, 3) << log.Read();
}

TEST(RpcServerLimits, HandshakesAndMessagesThatStallAreDropped) {
  CapturedLog log;
  auto server = StartServer({.idle_timeout = absl::Milliseconds(300)}, log.sink());
  ASSERT_NE(server, nullptr);
  ASSERT_OK_AND_ASSIGN(auto silent,
                       RawZmtpPeer::Connect(server->port(), RawZmtpPeer::Stop::kAfterGreeting));
  ASSERT_OK_AND_ASSIGN(auto slow, RawZmtpPeer::Connect(server->port()));
  RpcHeader header;
  header.set_method("Small");
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_UINT8);
  meta->mutable_shape()->add_dim()->set_size(1 << 20);
  meta->set_bytes(1 << 20);
  ASSERT_TRUE(slow->SendFrame(zmtp::kMore, header.SerializeAsString()));
  ASSERT_TRUE(slow->Send(std::string(9, '\x00')));  // Half a frame header.
  EXPECT_TRUE(silent->ClosedWithin(absl::Seconds(10)));
  EXPECT_TRUE(slow->ClosedWithin(absl::Seconds(10)));
  const std::string logged = log.Read();
  EXPECT_THAT(logged, HasSubstr("the handshake stalled"));
  EXPECT_THAT(logged, HasSubstr("a message stalled"));
  EXPECT_OK(RealCall(server->port()));
}

TEST(RpcServerLimits, AClientThatNeverReadsIsRefusedThenDroppedAndServedAgainOnceItReads) {
  CapturedLog log;
  auto server = StartServer({.max_calls_per_connection = 4}, log.sink());
  ASSERT_NE(server, nullptr);
  RawClient flooder(server->port(), /*receive_buffer=*/4096);
  constexpr int kCalls = 100;
  // Replies of 16 MiB fill every buffer on the way; what follows waits
  // behind them.
  for (int i = 1; i <= 4; ++i) flooder.Send("Large", i);
  absl::SleepFor(absl::Milliseconds(300));
  for (int i = 5; i <= kCalls; ++i) flooder.Send("Large", i);

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
  auto server = StartServer({.max_connections = 1}, log.sink());
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

// A peer that trickled its handshake a byte at a time, each within the
// idle timeout, kept its connection forever.
TEST(RpcServerLimits, AHandshakeEndsAtItsDeadlineHoweverItTrickles) {
  CapturedLog log;
  auto server = StartServer({.handshake_timeout = absl::Seconds(1)}, log.sink());
  ASSERT_NE(server, nullptr);
  ASSERT_OK_AND_ASSIGN(auto trickler,
                       RawZmtpPeer::Connect(server->port(), RawZmtpPeer::Stop::kNothingSent));
  const std::string greeting = zmtp::ServerGreeting(zmtp::Mechanism::kNull);
  bool closed = false;
  for (size_t i = 0; i < greeting.size() && !closed; ++i) {
    closed = !trickler->Send(greeting.substr(i, 1)) ||
             trickler->ClosedWithin(absl::Milliseconds(200));
  }
  EXPECT_TRUE(closed || trickler->ClosedWithin(absl::Seconds(5)));
  EXPECT_THAT(log.Read(), HasSubstr("the handshake took more than 1s (handshake_timeout)"));
  EXPECT_OK(RealCall(server->port()));
}

// A flood of bare greetings renewed every place faster than the grace a
// handshake gets, and a real client never got one. A connection that has
// finished its handshake now takes the place of one that has not.
TEST(RpcServerLimits, AFloodOfBareGreetingsDoesNotKeepARealClientOut) {
  CapturedLog log;
  auto server = StartServer({.max_connections = 8}, log.sink());
  ASSERT_NE(server, nullptr);
  std::atomic<bool> stop{false};
  std::thread flood([&] {
    std::deque<std::unique_ptr<RawZmtpPeer>> open;
    // Bounded: 3,000 connections at most, 64 open at once.
    for (int i = 0; i < 3'000 && !stop.load(std::memory_order_relaxed); ++i) {
      absl::StatusOr<std::unique_ptr<RawZmtpPeer>> peer =
          RawZmtpPeer::Connect(server->port(), RawZmtpPeer::Stop::kAfterGreeting);
      if (peer.ok()) open.push_back(*std::move(peer));
      if (open.size() > 64) open.pop_front();
    }
  });
  absl::SleepFor(absl::Milliseconds(200));
  const absl::Status call = RealCall(server->port());
  stop.store(true, std::memory_order_relaxed);
  flood.join();
  EXPECT_OK(call);
}

}  // namespace
}  // namespace rill
