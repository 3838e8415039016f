#include "transport/rpc.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "tests/test_util.h"
#include "transport/wire.h"
#include "zmq_addon.hpp"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

absl::Time In(absl::Duration d) { return absl::Now() + d; }

// Replies with the request's body reversed and its tensors plus a scalar
// holding their count.
void Echo(RpcMessage request, RpcDone done) {
  RpcMessage reply;
  reply.body.assign(request.body.rbegin(), request.body.rend());
  reply.tensors = request.tensors;
  reply.tensors.push_back(Tensor::Scalar<int64_t>(static_cast<int64_t>(request.tensors.size())));
  done(absl::OkStatus(), std::move(reply));
}

std::unique_ptr<RpcServer> StartServer(std::vector<RpcMethod> methods, bool bind_ipc = true,
                                       int handler_threads = 2) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.bind_ipc = bind_ipc;
  options.handler_threads = handler_threads;
  absl::StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(options, std::move(methods));
  EXPECT_OK(server);
  return server.ok() ? *std::move(server) : nullptr;
}

RpcClientOptions ClientOptions(int port, bool prefer_ipc = false) {
  RpcClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  options.prefer_ipc = prefer_ipc;
  options.heartbeat_interval = absl::Milliseconds(50);
  options.heartbeat_timeout = absl::Milliseconds(400);
  return options;
}

std::unique_ptr<RpcClient> Connect(int port, bool prefer_ipc = false) {
  absl::StatusOr<std::unique_ptr<RpcClient>> client =
      RpcClient::Connect(ClientOptions(port, prefer_ipc));
  EXPECT_OK(client);
  return client.ok() ? *std::move(client) : nullptr;
}

// Collects the result of an asynchronous call.
struct CallResult {
  absl::Notification done;
  absl::Status status;
  RpcMessage reply;
  RpcDone Callback() {
    return [this](absl::Status s, RpcMessage m) {
      status = std::move(s);
      reply = std::move(m);
      done.Notify();
    };
  }
};

// Holds the replies of a handler that never answers, so that the caller
// sees only the transport's own failures.
struct Hang {
  absl::Mutex mu;
  std::vector<RpcDone> held ABSL_GUARDED_BY(mu);
  RpcServer::Handler Handler() {
    return [this](RpcMessage, RpcDone done) {
      absl::MutexLock lock(&mu);
      held.push_back(std::move(done));
    };
  }
};

int CountEntries(const std::string& dir) {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

// A client's last references (its shared-memory arena, its sockets) may
// go on the shared I/O thread a moment after the client itself, so counts
// of open files and threads are compared once they settle.

// CountEntries(dir) once it has not changed for 200 ms (at most 5 s).
int StableCount(const std::string& dir) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int n = CountEntries(dir);
  for (int same = 0; same < 20 && absl::Now() < deadline; ++same) {
    absl::SleepFor(absl::Milliseconds(10));
    const int now = CountEntries(dir);
    if (now != n) same = -1;
    n = now;
  }
  return n;
}

// CountEntries(dir) once it is back to `want`, or after 5 s.
int SettledCount(const std::string& dir, int want) {
  const absl::Time deadline = absl::Now() + absl::Seconds(5);
  int n = CountEntries(dir);
  while (n != want && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(10));
    n = CountEntries(dir);
  }
  return n;
}

TEST(Rpc, EchoesBodyAndTensorsBothWays) {
  auto server = StartServer({{"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  ASSERT_NE(client, nullptr);
  Tensor big(DT_FLOAT, TensorShape({512, 64}));
  for (int64_t i = 0; i < big.NumElements(); ++i) big.data<float>()[i] = static_cast<float>(i);
  Tensor strings = Tensor::FromVector<std::string>({"a", "", "ccc"}, TensorShape({3}));
  ASSERT_OK_AND_ASSIGN(RpcMessage reply,
                       client->CallSync("Echo", {"abc", {big, strings, Tensor::Scalar<int32_t>(7)}},
                                        In(absl::Seconds(10))));
  EXPECT_EQ(reply.body, "cba");
  ASSERT_EQ(reply.tensors.size(), 4u);
  EXPECT_TRUE(TensorsEqual(reply.tensors[0], big));
  EXPECT_TRUE(TensorsEqual(reply.tensors[1], strings));
  EXPECT_TRUE(TensorsEqual(reply.tensors[2], Tensor::Scalar<int32_t>(7)));
  EXPECT_TRUE(TensorsEqual(reply.tensors[3], Tensor::Scalar<int64_t>(3)));
  EXPECT_EQ(client->address(), "127.0.0.1:" + std::to_string(server->port()));
}

TEST(Rpc, ConcurrentCallsFromSeveralThreadsGetTheirOwnReplies) {
  auto server = StartServer({{"Echo", Echo}}, /*bind_ipc=*/true, /*handler_threads=*/3);
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  ASSERT_NE(client, nullptr);
  constexpr int kThreads = 4;
  constexpr int kCalls = 50;
  std::atomic<int> mismatches{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::vector<std::unique_ptr<CallResult>> async;
      for (int i = 0; i < kCalls; ++i) {
        const std::string body = std::to_string(t * 1000 + i);
        const Tensor tensor = Tensor::Scalar<int32_t>(t * 1000 + i);
        if (i % 2 == 0) {
          async.push_back(std::make_unique<CallResult>());
          client->Call("Echo", {body, {tensor}}, In(absl::Seconds(10)), async.back()->Callback());
          continue;
        }
        absl::StatusOr<RpcMessage> reply =
            client->CallSync("Echo", {body, {tensor}}, In(absl::Seconds(10)));
        if (!reply.ok() || reply->body != std::string(body.rbegin(), body.rend()) ||
            !TensorsEqual(reply->tensors[0], tensor)) {
          mismatches.fetch_add(1, std::memory_order_relaxed);
        }
      }
      for (int i = 0; i < kCalls / 2; ++i) {
        CallResult& result = *async[i];
        result.done.WaitForNotification();
        const std::string body = std::to_string(t * 1000 + 2 * i);
        if (!result.status.ok() || result.reply.body != std::string(body.rbegin(), body.rend()) ||
            !TensorsEqual(result.reply.tensors[0], Tensor::Scalar<int32_t>(t * 1000 + 2 * i))) {
          mismatches.fetch_add(1, std::memory_order_relaxed);
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Rpc, RemoteErrorArrivesWithItsCodeAndMessage) {
  auto server = StartServer({{"Fail", [](RpcMessage, RpcDone done) {
                                done(absl::NotFoundError("no variable 'w' in container 'c'"), {});
                              }}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  EXPECT_THAT(client->CallSync("Fail", {}, In(absl::Seconds(10))),
              StatusIs(absl::StatusCode::kNotFound, "no variable 'w' in container 'c'"));
}

TEST(Rpc, UnknownMethodIsUnimplementedAndNamed) {
  auto server = StartServer({{"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  EXPECT_THAT(client->CallSync("RunGraf", {}, In(absl::Seconds(10))),
              StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("unknown method 'RunGraf'")));
}

TEST(Rpc, CallFailsAtItsDeadlineWhenTheHandlerNeverReplies) {
  Hang hang;
  auto server = StartServer({{"Hang", hang.Handler()}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  const std::string expected =
      absl::StrFormat("call Hang to 127.0.0.1:%d: no reply within", server->port());
  // The deadline outlasts the heartbeat timeout: the server keeps answering
  // pings while its handler is stuck.
  EXPECT_THAT(client->CallSync("Hang", {}, In(absl::Milliseconds(700))),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr(expected)));
}

TEST(Rpc, InlineMethodsAreAnsweredWhileEveryHandlerThreadIsBusy) {
  absl::Notification release;
  absl::Notification blocking;
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.handler_threads = 1;
  ASSERT_OK_AND_ASSIGN(auto server,
                       RpcServer::Start(options, {{"Echo", Echo, /*runs_inline=*/true},
                                                  {"Block", [&](RpcMessage, RpcDone done) {
                                                     blocking.Notify();
                                                     release.WaitForNotification();
                                                     done(absl::OkStatus(), {});
                                                   }}}));
  auto client = Connect(server->port());
  CallResult blocked;
  client->Call("Block", {}, In(absl::Seconds(20)), blocked.Callback());
  blocking.WaitForNotification();
  // The one handler thread is held; Echo runs on the socket thread.
  ASSERT_OK_AND_ASSIGN(RpcMessage reply,
                       client->CallSync("Echo", {"abc", {}}, In(absl::Seconds(20))));
  EXPECT_EQ(reply.body, "cba");
  release.Notify();
  blocked.done.WaitForNotification();
  EXPECT_OK(blocked.status);
}

TEST(Rpc, AtMostTwoLargeCallsAreInFlightPerPeer) {
  Hang hang;
  auto server = StartServer({{"Hang", hang.Handler()}, {"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  const Tensor megabyte(DT_FLOAT, TensorShape({256 << 10}));
  std::vector<std::unique_ptr<CallResult>> calls;
  for (int i = 0; i < 5; ++i) {
    calls.push_back(std::make_unique<CallResult>());
    client->Call("Hang", {"", {megabyte}}, In(absl::Seconds(20)), calls.back()->Callback());
  }
  const auto held = [&] {
    absl::MutexLock lock(&hang.mu);
    return hang.held.size();
  };
  const auto wait_for = [&](size_t count) {
    for (int i = 0; i < 2000 && held() < count; ++i) absl::SleepFor(absl::Milliseconds(5));
    return held();
  };
  ASSERT_EQ(wait_for(2), 2u);
  // Small calls are not held back by the large ones.
  ASSERT_OK(client->CallSync("Echo", {"x", {}}, In(absl::Seconds(20))).status());
  EXPECT_EQ(held(), 2u);
  // Each reply lets one more through, until all five have arrived.
  for (size_t answered = 0; answered < 5; ++answered) {
    ASSERT_GE(wait_for(answered + 1), answered + 1);
    RpcDone done;
    {
      absl::MutexLock lock(&hang.mu);
      EXPECT_LE(hang.held.size() - answered, 2u);
      done = std::move(hang.held[answered]);
    }
    done(absl::OkStatus(), {});
  }
  for (const auto& call : calls) {
    call->done.WaitForNotification();
    EXPECT_OK(call->status);
  }
}

TEST(Rpc, OutstandingCallsFailUnavailableWhenThePeerGoesAway) {
  Hang hang;
  auto server = StartServer({{"Hang", hang.Handler()}});
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  auto client = Connect(port);
  CallResult first;
  CallResult second;
  client->Call("Hang", {}, absl::InfiniteFuture(), first.Callback());
  client->Call("Hang", {}, absl::InfiniteFuture(), second.Callback());
  ASSERT_OK(client->CallSync("_ping", {}, In(absl::Seconds(10))));  // Both calls have arrived.
  server.reset();
  const absl::Time start = absl::Now();
  ASSERT_TRUE(first.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_TRUE(second.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_LT(absl::Now() - start, absl::Seconds(5));
  const std::string expected =
      absl::StrFormat("call Hang: peer 127.0.0.1:%d stopped answering (no reply for", port);
  EXPECT_THAT(first.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr(expected)));
  EXPECT_THAT(second.status, StatusIs(absl::StatusCode::kUnavailable, HasSubstr(expected)));
}

TEST(Rpc, CallSyncFailsUnavailableWhenThePeerGoesAway) {
  Hang hang;
  auto server = StartServer({{"Hang", hang.Handler()}});
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  auto client = Connect(port);
  absl::StatusOr<RpcMessage> result;
  std::thread caller([&] { result = client->CallSync("Hang", {}, absl::InfiniteFuture()); });
  for (int i = 0; i < 2000; ++i) {
    {
      absl::MutexLock lock(&hang.mu);
      if (!hang.held.empty()) break;
    }
    absl::SleepFor(absl::Milliseconds(5));
  }
  server.reset();
  caller.join();
  EXPECT_THAT(
      result,
      StatusIs(absl::StatusCode::kUnavailable,
               HasSubstr(absl::StrFormat("call Hang: peer 127.0.0.1:%d stopped answering", port))));
}

TEST(Rpc, HandlerDoesNotRunForACallerThatGaveUp) {
  absl::Notification release;
  std::atomic<int> late_runs{0};
  auto server = StartServer({{"Block",
                              [&](RpcMessage, RpcDone done) {
                                release.WaitForNotification();
                                done(absl::OkStatus(), {});
                              }},
                             {"Late",
                              [&](RpcMessage, RpcDone done) {
                                late_runs.fetch_add(1, std::memory_order_relaxed);
                                done(absl::OkStatus(), {});
                              }},
                             {"Echo", Echo}},
                            /*bind_ipc=*/false, /*handler_threads=*/1);
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  CallResult blocked;
  client->Call("Block", {}, In(absl::Seconds(10)), blocked.Callback());
  EXPECT_THAT(client->CallSync("Late", {}, In(absl::Milliseconds(100))),
              StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("call Late")));
  // The server's deadline for Late ends later than the client's by the
  // message's transit time; let that pass too.
  absl::SleepFor(absl::Milliseconds(50));
  release.Notify();
  // The single worker runs requests in order: once Echo answers, Late has
  // been taken off the queue.
  ASSERT_OK(client->CallSync("Echo", {}, In(absl::Seconds(10))));
  EXPECT_EQ(late_runs.load(), 0);
  ASSERT_TRUE(blocked.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_OK(blocked.status);
}

// Sends `frames` from a raw DEALER and returns the reply's header, or
// nullopt when the server sent none within `wait`.
std::optional<RpcHeader> RawExchange(int port, std::vector<zmq::message_t> frames,
                                     absl::Duration wait) {
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect("tcp://127.0.0.1:" + std::to_string(port));
  EXPECT_TRUE(zmq::send_multipart(dealer, frames).has_value());
  dealer.set(zmq::sockopt::rcvtimeo, static_cast<int>(absl::ToInt64Milliseconds(wait)));
  std::vector<zmq::message_t> reply;
  if (!zmq::recv_multipart(dealer, std::back_inserter(reply))) return std::nullopt;
  absl::StatusOr<RpcHeader> header = DecodeHeader(reply.at(0));
  EXPECT_OK(header);
  return header.ok() ? std::optional<RpcHeader>(*header) : std::nullopt;
}

TEST(Rpc, ServerAnswersMalformedRequestsAndKeepsServing) {
  auto server = StartServer({{"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  const int port = server->port();

  // Unparseable header: no request id to answer, so it is dropped.
  std::vector<zmq::message_t> garbage;
  garbage.emplace_back("\xff\xff\xff\xff\xff\xff", 6);
  EXPECT_FALSE(RawExchange(port, std::move(garbage), absl::Milliseconds(200)).has_value());

  // Header promises two tensors, one frame follows.
  RpcHeader header;
  header.set_method("Echo");
  header.set_request_id(41);
  ASSERT_OK_AND_ASSIGN(std::vector<zmq::message_t> truncated,
                       EncodeMessage(header, {Tensor::Scalar<float>(1), Tensor::Scalar<float>(2)}));
  truncated.pop_back();
  std::optional<RpcHeader> reply = RawExchange(port, std::move(truncated), absl::Seconds(10));
  ASSERT_TRUE(reply.has_value());
  EXPECT_TRUE(reply->is_reply());
  EXPECT_EQ(reply->request_id(), 41u);
  EXPECT_EQ(reply->status_code(), static_cast<int>(absl::StatusCode::kInvalidArgument));
  EXPECT_THAT(reply->status_message(), HasSubstr("declares 2 tensors but 1 frames follow it"));

  // A frame shorter than its metadata says.
  header.set_request_id(42);
  ASSERT_OK_AND_ASSIGN(std::vector<zmq::message_t> short_frame,
                       EncodeMessage(header, {Tensor(DT_FLOAT, TensorShape({8}))}));
  short_frame[1] = zmq::message_t(std::string(5, 'x'));
  reply = RawExchange(port, std::move(short_frame), absl::Seconds(10));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->request_id(), 42u);
  EXPECT_THAT(
      reply->status_message(),
      HasSubstr("frame 1 (tensor 0) of a 'Echo' request has 5 bytes; its header declares 32"));

  // Random bytes straight into the TCP port: not even ZMTP.
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::mt19937 random(7);
  std::string noise(4096, '\0');
  for (char& c : noise) c = static_cast<char>(random());
  EXPECT_GT(write(fd, noise.data(), noise.size()), 0);
  close(fd);

  auto client = Connect(port);
  ASSERT_OK_AND_ASSIGN(RpcMessage echoed,
                       client->CallSync("Echo", {"ok", {}}, In(absl::Seconds(10))));
  EXPECT_EQ(echoed.body, "ko");
}

TEST(Rpc, UsesIpcForAPeerOnThisMachine) {
  auto server = StartServer({{"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  EXPECT_TRUE(server->ipc_endpoint().starts_with("ipc://")) << server->ipc_endpoint();
  auto client = Connect(server->port(), /*prefer_ipc=*/true);
  EXPECT_OK(client->CallSync("Echo", {"x", {}}, In(absl::Seconds(10))));
  EXPECT_EQ(client->transport(), "ipc");
  ASSERT_OK_AND_ASSIGN(
      RpcMessage reply,
      client->CallSync("Echo", {"xy", {Tensor::Scalar<double>(2.5)}}, In(absl::Seconds(10))));
  EXPECT_EQ(reply.body, "yx");
  EXPECT_TRUE(TensorsEqual(reply.tensors[0], Tensor::Scalar<double>(2.5)));
}

// A server at the same address after a restart has another ipc socket:
// asynchronous calls go by tcp once the old ipc connection is seen closed
// (one sent before may be lost with it: its deadline ends it), and
// synchronous ones after one of them found the old peer silent.
TEST(Rpc, ReachesAServerRestartedAtTheSameAddressAfterIpc) {
  auto first = StartServer({{"Echo", Echo}});
  ASSERT_NE(first, nullptr);
  const int port = first->port();
  auto client = Connect(port, /*prefer_ipc=*/true);
  EXPECT_OK(client->CallSync("Echo", {"x", {}}, In(absl::Seconds(10))));
  ASSERT_EQ(client->transport(), "ipc");
  first.reset();

  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:" + std::to_string(port);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcServer> second,
                       RpcServer::Start(options, {{"Echo", Echo}}));
  absl::Status status;
  for (int attempt = 0; attempt < 20; ++attempt) {
    CallResult result;
    client->Call("Echo", {"ab", {}}, In(absl::Milliseconds(500)), result.Callback());
    result.done.WaitForNotification();
    status = result.status;
    if (status.ok()) {
      EXPECT_EQ(result.reply.body, "ba");
      break;
    }
  }
  ASSERT_OK(status);
  absl::StatusOr<RpcMessage> reply;
  for (int attempt = 0; attempt < 2 && !reply.ok(); ++attempt) {
    reply = client->CallSync("Echo", {"cd", {}}, In(absl::Seconds(5)));
  }
  ASSERT_OK(reply);
  EXPECT_EQ(reply->body, "dc");
}

TEST(Rpc, StaysOnTcpWhenIpcIsNotPreferredOrNotOffered) {
  auto server = StartServer({{"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port(), /*prefer_ipc=*/false);
  EXPECT_OK(client->CallSync("Echo", {}, In(absl::Seconds(10))));
  EXPECT_EQ(client->transport(), "tcp");

  auto tcp_only = StartServer({{"Echo", Echo}}, /*bind_ipc=*/false);
  ASSERT_NE(tcp_only, nullptr);
  EXPECT_EQ(tcp_only->ipc_endpoint(), "");
  auto preferring = Connect(tcp_only->port(), /*prefer_ipc=*/true);
  EXPECT_OK(preferring->CallSync("Echo", {}, In(absl::Seconds(10))));
  EXPECT_EQ(preferring->transport(), "tcp");
}

TEST(Rpc, StartingAndStoppingServersLeaksNoThreadsOrFiles) {
  // One round first, so that lazily created process state is not counted.
  {
    auto server = StartServer({{"Echo", Echo}});
    auto client = Connect(server->port(), /*prefer_ipc=*/true);
    ASSERT_OK(client->CallSync("Echo", {}, In(absl::Seconds(10))));
  }
  const int fds = StableCount("/proc/self/fd");
  const int threads = StableCount("/proc/self/task");
  for (int i = 0; i < 20; ++i) {
    auto server = StartServer({{"Echo", Echo}});
    ASSERT_NE(server, nullptr);
    const std::string socket_file = server->ipc_endpoint().substr(6);
    EXPECT_TRUE(std::filesystem::exists(socket_file));
    auto client = Connect(server->port(), /*prefer_ipc=*/true);
    ASSERT_OK(client->CallSync("Echo", {}, In(absl::Seconds(10))));
    client.reset();
    server.reset();
    EXPECT_FALSE(std::filesystem::exists(socket_file));
  }
  EXPECT_EQ(SettledCount("/proc/self/fd", fds), fds);
  EXPECT_EQ(SettledCount("/proc/self/task", threads), threads);
}

TEST(Rpc, ClientDestructionCancelsOutstandingCalls) {
  Hang hang;
  auto server = StartServer({{"Hang", hang.Handler()}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  CallResult result;
  client->Call("Hang", {}, absl::InfiniteFuture(), result.Callback());
  client.reset();
  ASSERT_TRUE(result.done.HasBeenNotified());
  EXPECT_THAT(result.status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("call Hang")));
}

TEST(Rpc, ACallSentWhileTheClientIdlesStillFailsAtItsDeadline) {
  // With nothing in flight the I/O thread sleeps a heartbeat interval; a
  // call sent meanwhile from this thread must wake it for an earlier
  // deadline rather than wait that long.
  Hang hang;
  auto server = StartServer({{"Echo", Echo}, {"Hang", hang.Handler()}});
  ASSERT_NE(server, nullptr);
  RpcClientOptions options = ClientOptions(server->port());
  options.heartbeat_interval = absl::Seconds(20);
  options.heartbeat_timeout = absl::Seconds(60);
  ASSERT_OK_AND_ASSIGN(auto client, RpcClient::Connect(options));
  CallResult settled;
  client->Call("Echo", {}, In(absl::Seconds(10)), settled.Callback());
  ASSERT_TRUE(settled.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  absl::SleepFor(absl::Milliseconds(50));  // The I/O thread is back in poll.
  CallResult late;
  client->Call("Hang", {}, In(absl::Milliseconds(100)), late.Callback());
  ASSERT_TRUE(late.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(late.status, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("call Hang")));
}

TEST(Rpc, InlineCallbacksMayCallAgainAndGetEveryOutcome) {
  Hang hang;
  auto server = StartServer({{"Echo", Echo}, {"Hang", hang.Handler()}});
  ASSERT_NE(server, nullptr);
  RpcClientOptions options = ClientOptions(server->port());
  options.inline_callbacks = true;
  ASSERT_OK_AND_ASSIGN(auto client, RpcClient::Connect(options));

  // A callback that calls again, as the master's do.
  CallResult second;
  CallResult first;
  client->Call(
      "Echo", {"ab", {}}, In(absl::Seconds(10)), [&](absl::Status status, RpcMessage reply) {
        first.Callback()(std::move(status), std::move(reply));
        client->Call("Echo", {first.reply.body, {}}, In(absl::Seconds(10)), second.Callback());
      });
  ASSERT_TRUE(second.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_OK(first.status);
  ASSERT_OK(second.status);
  EXPECT_EQ(first.reply.body, "ba");
  EXPECT_EQ(second.reply.body, "ab");

  CallResult late;
  client->Call("Hang", {}, In(absl::Milliseconds(100)), late.Callback());
  ASSERT_TRUE(late.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  EXPECT_THAT(late.status, StatusIs(absl::StatusCode::kDeadlineExceeded, HasSubstr("call Hang")));

  CallResult cancelled;
  client->Call("Hang", {}, absl::InfiniteFuture(), cancelled.Callback());
  client.reset();
  ASSERT_TRUE(cancelled.done.HasBeenNotified());
  EXPECT_THAT(cancelled.status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("call Hang")));
}

TEST(Rpc, CallsMadeBeforeThePeerIsUpAreDelivered) {
  int port;
  {
    auto probe = StartServer({});
    ASSERT_NE(probe, nullptr);
    port = probe->port();
  }
  RpcClientOptions client_options = ClientOptions(port, /*prefer_ipc=*/true);
  client_options.heartbeat_timeout = absl::Seconds(10);
  ASSERT_OK_AND_ASSIGN(auto client, RpcClient::Connect(client_options));
  CallResult result;
  client->Call("Echo", {"early", {}}, In(absl::Seconds(10)), result.Callback());
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:" + std::to_string(port);
  ASSERT_OK_AND_ASSIGN(auto server, RpcServer::Start(options, {{"Echo", Echo}}));
  ASSERT_TRUE(result.done.WaitForNotificationWithTimeout(absl::Seconds(10)));
  ASSERT_OK(result.status);
  EXPECT_EQ(result.reply.body, "ylrae");
}

TEST(Rpc, ABoundServerRefusesCallsUntilItServes) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  ASSERT_OK_AND_ASSIGN(auto server, RpcServer::Start(options));
  auto client = Connect(server->port());
  EXPECT_THAT(client->CallSync("Echo", {"abc", {}}, In(absl::Seconds(10))),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr("still starting")));
  ASSERT_OK(server->Serve({{"Echo", Echo, /*runs_inline=*/true}}));
  ASSERT_OK_AND_ASSIGN(RpcMessage reply,
                       client->CallSync("Echo", {"abc", {}}, In(absl::Seconds(10))));
  EXPECT_EQ(reply.body, "cba");
  EXPECT_THAT(server->Serve({{"Other", Echo}}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("serving already")));
}

TEST(Rpc, AMethodTableNamesEachMethodOnce) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  EXPECT_THAT(RpcServer::Start(options, {{"Echo", Echo}, {"Echo", Echo, true}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'Echo' is named twice")));
  EXPECT_THAT(RpcServer::Start(options, {{"_ping", Echo}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'_ping'")));
}

TEST(Rpc, BindingAPortInUseIsUnavailableNamingTheAddress) {
  auto server = StartServer({});
  ASSERT_NE(server, nullptr);
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:" + std::to_string(server->port());
  EXPECT_THAT(RpcServer::Start(options, {}),
              StatusIs(absl::StatusCode::kUnavailable, HasSubstr(options.bind_address)));
}

TEST(Rpc, MalformedAddressesAreInvalidArguments) {
  RpcServerOptions server_options;
  server_options.bind_address = "127.0.0.1:0";
  EXPECT_THAT(RpcServer::Start(server_options, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tcp://")));
  server_options.bind_address = "tcp://127.0.0.1:port";
  EXPECT_THAT(RpcServer::Start(server_options, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not HOST:PORT")));
  for (const char* address : {"localhost", ":80", "host:99999", "host:"}) {
    RpcClientOptions options;
    options.address = address;
    EXPECT_THAT(RpcClient::Connect(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not HOST:PORT")))
        << address;
  }
}

TEST(Rpc, UninitializedRequestTensorFailsTheCall) {
  auto server = StartServer({{"Echo", Echo}});
  ASSERT_NE(server, nullptr);
  auto client = Connect(server->port());
  EXPECT_THAT(client->CallSync("Echo", {"", {Tensor()}}, In(absl::Seconds(10))),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("uninitialized")));
}

}  // namespace
}  // namespace rill
