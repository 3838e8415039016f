#include "transport/curve.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "tests/test_util.h"
#include "tests/transport/raw_socket.h"
#include "tests/transport/raw_zmtp_peer.h"
#include "transport/rpc.h"
#include "transport/zmtp/protocol.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

class Curve : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq was built without CURVE";
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("curve_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Dir(const std::string& name) const { return (dir_ / name).string(); }

  std::filesystem::path dir_;
};

std::shared_ptr<const CurveKeys> Keys(const std::string& dir) {
  absl::StatusOr<CurveKeys> keys = LoadCurveKeys(dir);
  EXPECT_OK(keys);
  return keys.ok() ? std::make_shared<const CurveKeys>(*std::move(keys)) : nullptr;
}

TEST_F(Curve, KeygenWritesAPairThatLoadsAndTrustsItself) {
  ASSERT_OK_AND_ASSIGN(const std::string public_key, WriteCurveKeys(Dir("cluster"), ""));
  EXPECT_EQ(public_key.size(), 40u);
  struct stat st;
  ASSERT_EQ(stat((Dir("cluster") + "/secret.key").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  ASSERT_OK_AND_ASSIGN(const CurveKeys keys, LoadCurveKeys(Dir("cluster")));
  EXPECT_EQ(keys.public_key, public_key);
  EXPECT_EQ(keys.server_public_key, public_key);
  EXPECT_TRUE(keys.authorized.contains(public_key));
  // A pair is never overwritten.
  EXPECT_THAT(WriteCurveKeys(Dir("cluster"), "").status(),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr("secret.key")));
}

TEST_F(Curve, AClientOfAClusterIsAuthorizedThereAndKnowsItsServers) {
  ASSERT_OK_AND_ASSIGN(const std::string cluster_key, WriteCurveKeys(Dir("cluster"), ""));
  ASSERT_OK_AND_ASSIGN(const std::string client_key, WriteCurveKeys(Dir("client"), Dir("cluster")));
  ASSERT_OK_AND_ASSIGN(const CurveKeys client, LoadCurveKeys(Dir("client")));
  EXPECT_EQ(client.server_public_key, cluster_key);
  ASSERT_OK_AND_ASSIGN(const CurveKeys cluster, LoadCurveKeys(Dir("cluster")));
  EXPECT_TRUE(cluster.authorized.contains(client_key));
}

TEST_F(Curve, BadKeyFilesAreNamed) {
  EXPECT_THAT(LoadCurveKeys(Dir("missing")).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("public.key")));
  ASSERT_OK(WriteCurveKeys(Dir("a"), "").status());
  ASSERT_OK(WriteCurveKeys(Dir("b"), "").status());
  std::filesystem::copy_file(Dir("b") + "/secret.key", Dir("a") + "/secret.key",
                             std::filesystem::copy_options::overwrite_existing);
  EXPECT_THAT(LoadCurveKeys(Dir("a")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not the secret key")));
  std::ofstream(Dir("b") + "/authorized_keys", std::ios::app) << "# a comment\nnot-a-key\n";
  EXPECT_THAT(LoadCurveKeys(Dir("b")).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("authorized_keys:3")));
}

// Forwards one TCP connection to `target_port` and keeps every byte that
// crosses it, as a capture on the wire would.
class Relay {
 public:
  explicit Relay(int target_port) : target_port_(target_port) {
    listener_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    EXPECT_EQ(bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(listen(listener_, 4), 0);
    EXPECT_EQ(getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { Run(); });
  }
  ~Relay() {
    stopping_ = true;
    thread_.join();
    close(listener_);
  }

  int port() const { return port_; }
  std::string captured() {
    absl::MutexLock lock(&mu_);
    return captured_;
  }

 private:
  void Run() {
    std::vector<int> client_fds, server_fds;
    while (!stopping_) {
      std::vector<pollfd> fds = {{listener_, POLLIN, 0}};
      for (size_t i = 0; i < client_fds.size(); ++i) {
        fds.push_back({client_fds[i], POLLIN, 0});
        fds.push_back({server_fds[i], POLLIN, 0});
      }
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      if (fds[0].revents & POLLIN) {
        const int client = accept(listener_, nullptr, nullptr);
        const int server = socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in addr{};
        addr.sin_family = AF_INET;
        addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        addr.sin_port = htons(static_cast<uint16_t>(target_port_));
        if (connect(server, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) {
          client_fds.push_back(client);
          server_fds.push_back(server);
        } else {
          close(client);
          close(server);
        }
      }
      for (size_t f = 1; f < fds.size(); ++f) {
        if (!(fds[f].revents & (POLLIN | POLLHUP))) continue;
        const size_t pair = (f - 1) / 2;
        const int from = fds[f].fd;
        const int to = from == client_fds[pair] ? server_fds[pair] : client_fds[pair];
        char buffer[65536];
        const ssize_t n = read(from, buffer, sizeof(buffer));
        if (n <= 0) continue;
        {
          absl::MutexLock lock(&mu_);
          captured_.append(buffer, static_cast<size_t>(n));
        }
        for (ssize_t sent = 0; sent < n;) {
          const ssize_t w = write(to, buffer + sent, static_cast<size_t>(n - sent));
          if (w <= 0) break;
          sent += w;
        }
      }
    }
    for (int fd : client_fds) close(fd);
    for (int fd : server_fds) close(fd);
  }

  const int target_port_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::thread thread_;
  absl::Mutex mu_;
  std::string captured_ ABSL_GUARDED_BY(mu_);
};

void Echo(RpcMessage request, RpcDone done) { done(absl::OkStatus(), std::move(request)); }

std::unique_ptr<RpcServer> StartServer(std::shared_ptr<const CurveKeys> keys,
                                       ConnectionLimitOptions limits = {}) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.bind_ipc = false;
  options.curve = std::move(keys);
  options.limits = limits;
  options.log = testing::QuietLog();
  absl::StatusOr<std::unique_ptr<RpcServer>> server =
      RpcServer::Start(options, {RpcMethod{.name = "echo", .handler = Echo}});
  EXPECT_OK(server);
  return server.ok() ? *std::move(server) : nullptr;
}

absl::StatusOr<RpcMessage> CallEcho(int port, std::shared_ptr<const CurveKeys> keys,
                                    RpcMessage request, absl::Duration timeout) {
  RpcClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  options.prefer_ipc = false;
  options.curve = std::move(keys);
  options.heartbeat_interval = absl::Milliseconds(50);
  options.heartbeat_timeout = timeout;
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> client, RpcClient::Connect(options));
  return client->CallSync("echo", std::move(request), absl::Now() + timeout);
}

// A tensor whose bytes are easy to find in a capture.
RpcMessage Marked() {
  RpcMessage message;
  message.body = "request";
  Tensor t(DT_UINT8, TensorShape({4096}));
  const std::string mark = "rill-plaintext-mark:";
  for (int64_t i = 0; i < t.NumElements(); ++i) t.data<uint8_t>()[i] = mark[i % mark.size()];
  message.tensors.push_back(t);
  return message;
}

bool Contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

TEST_F(Curve, MembersTalkEncryptedAndNoTensorByteCrossesInPlaintext) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  const std::shared_ptr<const CurveKeys> keys = Keys(Dir("cluster"));
  ASSERT_NE(keys, nullptr);
  std::unique_ptr<RpcServer> server = StartServer(keys);
  ASSERT_NE(server, nullptr);
  Relay relay(server->port());
  ASSERT_OK_AND_ASSIGN(RpcMessage reply, CallEcho(relay.port(), keys, Marked(), absl::Seconds(20)));
  ASSERT_EQ(reply.tensors.size(), 1u);
  EXPECT_EQ(reply.tensors[0].NumElements(), 4096);
  const std::string captured = relay.captured();
  EXPECT_GT(captured.size(), 8192u);
  EXPECT_FALSE(Contains(captured, "rill-plaintext-mark:rill-plaintext-mark:"));
  EXPECT_FALSE(Contains(captured, "request"));
}

TEST_F(Curve, WithoutKeysTheSameCallCrossesInPlaintext) {
  // The control for the test above: the relay does see what is sent.
  std::unique_ptr<RpcServer> server = StartServer(nullptr);
  ASSERT_NE(server, nullptr);
  Relay relay(server->port());
  ASSERT_OK(CallEcho(relay.port(), nullptr, Marked(), absl::Seconds(20)).status());
  EXPECT_TRUE(Contains(relay.captured(), "rill-plaintext-mark:rill-plaintext-mark:"));
}

TEST_F(Curve, AClientOfTheClusterGetsIn) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  ASSERT_OK(WriteCurveKeys(Dir("client"), Dir("cluster")).status());
  std::unique_ptr<RpcServer> server = StartServer(Keys(Dir("cluster")));
  ASSERT_NE(server, nullptr);
  EXPECT_OK(CallEcho(server->port(), Keys(Dir("client")), Marked(), absl::Seconds(20)).status());
}

// Each refusal comes with its reason at once: the heartbeat (20 s here)
// would only say that the server stopped answering.
TEST_F(Curve, StrangersAreRefusedAndToldWhy) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  ASSERT_OK(WriteCurveKeys(Dir("stranger"), "").status());
  std::unique_ptr<RpcServer> server = StartServer(Keys(Dir("cluster")));
  ASSERT_NE(server, nullptr);
  const absl::Duration patience = absl::Seconds(20);
  EXPECT_THAT(CallEcho(server->port(), nullptr, Marked(), patience).status(),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("accepts only CURVE clients and this client has no keys")));
  // A key pair the cluster never authorized, which does not know the
  // cluster's public key either.
  EXPECT_THAT(CallEcho(server->port(), Keys(Dir("stranger")), Marked(), patience).status(),
              StatusIs(absl::StatusCode::kUnauthenticated,
                       HasSubstr("closed the connection during the CURVE handshake")));
  // A stranger holding the cluster's public key is still refused.
  ASSERT_OK_AND_ASSIGN(CurveKeys forged, LoadCurveKeys(Dir("stranger")));
  forged.server_public_key = Keys(Dir("cluster"))->public_key;
  EXPECT_THAT(
      CallEcho(server->port(), std::make_shared<const CurveKeys>(forged), Marked(), patience)
          .status(),
      StatusIs(absl::StatusCode::kUnauthenticated,
               HasSubstr("its CURVE public key is not in the server's authorized_keys")));
  // The server stays up for its members.
  EXPECT_OK(CallEcho(server->port(), Keys(Dir("cluster")), Marked(), patience).status());
}

// Without the keys a stranger never gets past the handshake, so it never
// keeps a member out: a new connection takes the place of the one longest
// in its handshake.
TEST_F(Curve, StrangersStuckInTheHandshakeNeverKeepAMemberOut) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  std::unique_ptr<RpcServer> server = StartServer(Keys(Dir("cluster")), {.max_connections = 4});
  ASSERT_NE(server, nullptr);
  std::vector<std::unique_ptr<testing::RawZmtpPeer>> strangers;
  for (int i = 0; i < 10; ++i) {
    ASSERT_OK_AND_ASSIGN(
        auto stranger,
        testing::RawZmtpPeer::Connect(server->port(), testing::RawZmtpPeer::Stop::kNothingSent));
    strangers.push_back(std::move(stranger));
  }
  absl::SleepFor(absl::Milliseconds(300));
  EXPECT_OK(CallEcho(server->port(), Keys(Dir("cluster")), Marked(), absl::Seconds(20)).status());
}

TEST_F(Curve, AClientWithKeysIsToldThatAServerWithoutThemDoesNotUseCurve) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  std::unique_ptr<RpcServer> server = StartServer(nullptr);
  ASSERT_NE(server, nullptr);
  EXPECT_THAT(CallEcho(server->port(), Keys(Dir("cluster")), Marked(), absl::Seconds(20)).status(),
              StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("does not use CURVE")));
}

// The async path (Call, through the I/O thread) fails the same way, and
// so does every later call.
TEST_F(Curve, EveryCallOfARefusedClientFailsWithTheReason) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  std::unique_ptr<RpcServer> server = StartServer(Keys(Dir("cluster")));
  ASSERT_NE(server, nullptr);
  RpcClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(server->port());
  options.heartbeat_timeout = absl::Seconds(20);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> client, RpcClient::Connect(options));
  for (int i = 0; i < 3; ++i) {
    absl::Notification done;
    absl::Status status;
    client->Call("echo", Marked(), absl::Now() + absl::Seconds(20),
                 [&](absl::Status s, RpcMessage) {
                   status = std::move(s);
                   done.Notify();
                 });
    done.WaitForNotification();
    EXPECT_THAT(status, StatusIs(absl::StatusCode::kUnauthenticated,
                                 HasSubstr("call echo: peer 127.0.0.1:")));
    EXPECT_THAT(
        client->CallSync("echo", Marked(), absl::Now() + absl::Seconds(20)).status(),
        StatusIs(absl::StatusCode::kUnauthenticated, HasSubstr("accepts only CURVE clients")));
  }
}

// 8,100 garbage HELLOs a second took a whole core of the socket thread.
// Each source address now starts a bounded number of handshakes a second,
// and a member from another address gets in while the flood goes on.
TEST_F(Curve, AFloodOfGarbageHellosFromOneAddressLeavesMembersServed) {
  ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  testing::CapturedLog log;
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.bind_ipc = false;
  options.curve = Keys(Dir("cluster"));
  options.log = log.sink();
  ASSERT_OK_AND_ASSIGN(auto server,
                       RpcServer::Start(options, {RpcMethod{.name = "echo", .handler = Echo}}));
  std::string hello = zmtp::ServerGreeting(zmtp::Mechanism::kCurve);
  hello[32] = 0;  // As a client.
  const std::string body = std::string("\x05HELLO\x01\x00", 8) + std::string(192, '\x5a');
  uint8_t header[zmtp::kLongHeaderBytes];
  hello.append(reinterpret_cast<const char*>(header),
               zmtp::EncodeFrameHeader(zmtp::kCommand, body.size(), header));
  hello += body;
  std::atomic<bool> stop{false};
  std::atomic<int> sent{0};
  std::atomic<int> greeted{0};  // Connections the server spoke to: it would do their crypto.
  std::thread flood([&] {
    // Bounded: 5,000 connections at most, and only while the member calls.
    for (int i = 0; i < 5'000 && !stop.load(std::memory_order_relaxed); ++i) {
      absl::StatusOr<int> connected = testing::ConnectLoopback(server->port(), "127.0.0.2");
      if (!connected.ok()) continue;
      const int fd = *connected;
      if (send(fd, hello.data(), hello.size(), MSG_NOSIGNAL) > 0) sent.fetch_add(1);
      // Its greeting comes first; a connection over the budget is closed
      // without one.
      const timeval wait{.tv_sec = 1, .tv_usec = 0};
      setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &wait, sizeof(wait));
      char greeting[zmtp::kGreetingBytes];
      if (recv(fd, greeting, sizeof(greeting), MSG_WAITALL) == sizeof(greeting)) {
        greeted.fetch_add(1);
      }
      close(fd);
    }
  });
  const absl::Time flood_start = absl::Now();
  absl::SleepFor(absl::Milliseconds(300));
  const absl::Time start = absl::Now();
  const absl::Status member =
      CallEcho(server->port(), Keys(Dir("cluster")), Marked(), absl::Seconds(20)).status();
  const absl::Duration took = absl::Now() - start;
  stop.store(true, std::memory_order_relaxed);
  flood.join();
  const double seconds = absl::ToDoubleSeconds(absl::Now() - flood_start);
  EXPECT_OK(member);
  // 100 handshakes a second from one address, 200 at once.
  EXPECT_LE(greeted.load(), 200 + static_cast<int>(100 * seconds) + 20);
  EXPECT_GT(sent.load(), greeted.load());
  RecordProperty("member_call_ms_during_flood", absl::ToInt64Milliseconds(took));
  RecordProperty("garbage_hellos_sent", sent.load());
  std::cout << "a member's call took " << absl::ToInt64Milliseconds(took) << " ms during a flood of "
            << sent.load() << " garbage HELLOs, " << greeted.load() << " of them let in, in "
            << seconds << " s\n";
}

}  // namespace
}  // namespace rill
