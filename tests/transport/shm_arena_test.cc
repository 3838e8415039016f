#include "transport/shm_arena.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "tests/test_util.h"
#include "transport/rpc.h"
#include "transport/wire.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

constexpr size_t kMiB = size_t{1} << 20;

// Mappings of arenas in this process, as the kernel lists them.
int ArenaMappings() {
  std::ifstream maps("/proc/self/maps");
  int n = 0;
  for (std::string line; std::getline(maps, line);)
    n += line.find("memfd:rill-tensors") != line.npos;
  return n;
}

int DevShmEntries() {
  std::error_code error;
  int n = 0;
  for (auto it = std::filesystem::directory_iterator("/dev/shm", error);
       !error && it != std::filesystem::directory_iterator(); it.increment(error)) {
    ++n;
  }
  return n;
}

bool WaitFor(const std::function<bool()>& condition, absl::Duration timeout = absl::Seconds(10)) {
  const absl::Time end = absl::Now() + timeout;
  while (!condition()) {
    if (absl::Now() > end) return false;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return true;
}

Tensor Pattern(int64_t n, float scale) {
  Tensor tensor(DT_FLOAT, TensorShape({n}));
  for (int64_t i = 0; i < n; ++i) tensor.data<float>()[i] = scale * static_cast<float>(i % 1000);
  return tensor;
}

bool HasPattern(const Tensor& tensor, float scale) {
  for (int64_t i = 0; i < tensor.NumElements(); ++i) {
    if (tensor.data<float>()[i] != scale * static_cast<float>(i % 1000)) return false;
  }
  return true;
}

// A received tensor as the server builds it: borrowed from the block `ref` names.
absl::StatusOr<Tensor> Borrow(ShmPeer& peer, const ShmRef& ref, int64_t floats) {
  RpcHeader header;
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_FLOAT);
  TensorShape({floats}).AsProto(meta->mutable_shape());
  *meta->mutable_shm() = ref;
  std::vector<zmq::message_t> frames(1);
  ASSIGN_OR_RETURN(std::vector<Tensor> tensors, DecodeTensors(header, frames, 0, &peer));
  return tensors[0];
}

TEST(ShmArena, ABlockIsReusedOnlyOnceItsReceiverLetsGo) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShmArena> arena, ShmArena::Create(kMiB, 1));
  ShmPeer peer(getpid());
  const Tensor sent = Pattern(64 << 10, 0.5f);  // 256 KiB.
  std::vector<Tensor> received;
  std::vector<uint64_t> offsets;
  for (;;) {
    std::optional<ShmRef> ref = arena->Place(sent.raw_data(), sent.TotalBytes());
    if (!ref) break;
    offsets.push_back(ref->offset());
    ASSERT_OK_AND_ASSIGN(Tensor tensor, Borrow(peer, *ref, sent.NumElements()));
    received.push_back(tensor);
  }
  // Three blocks of 256 KiB (and their headers) fit in 1 MiB beside the arena's header.
  ASSERT_EQ(received.size(), 3u);
  for (const Tensor& tensor : received) EXPECT_TRUE(HasPattern(tensor, 0.5f));
  EXPECT_GT(arena->held_bytes(), 3 * sent.TotalBytes());

  // The receiver's tensor and every copy of it hold the block.
  Tensor copy = received[1];
  received.erase(received.begin() + 1);
  EXPECT_FALSE(arena->Place(sent.raw_data(), sent.TotalBytes()).has_value());
  copy = Tensor();
  std::optional<ShmRef> reused = arena->Place(sent.raw_data(), sent.TotalBytes());
  ASSERT_TRUE(reused.has_value());
  EXPECT_EQ(reused->offset(), offsets[1]);
  ASSERT_OK_AND_ASSIGN(Tensor again, Borrow(peer, *reused, sent.NumElements()));
  received.clear();
  again = Tensor();
  EXPECT_EQ(arena->held_bytes(), 0u);
  // Freed blocks coalesce: the whole arena is one block again.
  const Tensor large = Pattern(200 << 10, 1.0f);  // 800 KiB.
  EXPECT_TRUE(arena->Place(large.raw_data(), large.TotalBytes()).has_value());
}

// Senders on several threads, each block given back as soon as it is
// claimed: no two live blocks ever overlap (a block being filled is not
// free, though its state from its last use said so).
TEST(ShmArena, ConcurrentSendersNeverShareABlock) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShmArena> arena, ShmArena::Create(kMiB, 1));
  ShmPeer peer(getpid());
  absl::Mutex mu;
  std::set<uint64_t> live;
  std::atomic<int> shared = 0;
  std::atomic<int> failed_claims = 0;
  std::vector<std::thread> senders;
  for (int t = 0; t < 4; ++t) {
    senders.emplace_back([&, t] {
      const Tensor sent = Pattern(16 << 10, static_cast<float>(t + 1));  // 64 KiB.
      for (int i = 0; i < 2000; ++i) {
        std::optional<ShmRef> ref = arena->Place(sent.raw_data(), sent.TotalBytes());
        if (!ref) continue;
        {
          absl::MutexLock lock(&mu);
          if (!live.insert(ref->offset()).second) ++shared;
        }
        absl::StatusOr<Tensor> received = Borrow(peer, *ref, sent.NumElements());
        if (!received.ok() || !HasPattern(*received, static_cast<float>(t + 1))) ++failed_claims;
        {
          absl::MutexLock lock(&mu);
          live.erase(ref->offset());
        }
      }
    });
  }
  for (std::thread& sender : senders) sender.join();
  EXPECT_EQ(shared.load(), 0);
  EXPECT_EQ(failed_claims.load(), 0);
}

TEST(ShmArena, AClaimNamesWhatIsWrongWithABlock) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<ShmArena> arena, ShmArena::Create(kMiB, 1));
  ShmPeer peer(getpid());
  const Tensor sent = Pattern(1024, 2.0f);
  std::optional<ShmRef> ref = arena->Place(sent.raw_data(), sent.TotalBytes());
  ASSERT_TRUE(ref.has_value());

  EXPECT_THAT(Borrow(peer, *ref, 1000), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("holds no block of 4000 bytes")));
  ShmRef outside = *ref;
  outside.set_offset(kMiB - 64);
  EXPECT_THAT(Borrow(peer, outside, 1024),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("lies outside its")));
  ShmRef other = *ref;
  other.set_arena(ref->arena() + 1);
  EXPECT_THAT(Borrow(peer, other, 1024), StatusIs(absl::StatusCode::kInvalidArgument,
                                                  HasSubstr("the descriptor is not that arena")));
  ShmRef no_fd = *ref;
  no_fd.set_arena(ref->arena() + 2);
  no_fd.set_fd(1 << 20);
  EXPECT_THAT(Borrow(peer, no_fd, 1024),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("cannot open /proc/")));
  // A file that is not a sealed arena is refused before it is mapped.
  const std::string path = testing::MakeTempDir() + "/plain";
  std::ofstream(path) << std::string(4096, 'x');
  const int plain = open(path.c_str(), O_RDWR | O_CLOEXEC);
  ASSERT_GE(plain, 0);
  ShmRef file = *ref;
  file.set_arena(ref->arena() + 3);
  file.set_fd(plain);
  EXPECT_THAT(Borrow(peer, file, 1024), StatusIs(absl::StatusCode::kInvalidArgument,
                                                 HasSubstr("not a sealed shared-memory arena")));
  close(plain);

  ASSERT_OK_AND_ASSIGN(Tensor tensor, Borrow(peer, *ref, 1024));
  EXPECT_TRUE(HasPattern(tensor, 2.0f));
  // A block is claimed once: a second message naming it is refused.
  EXPECT_THAT(Borrow(peer, *ref, 1024),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("holds no block")));
  // So is a shared-memory tensor from a connection that may not name one.
  RpcHeader header;
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_FLOAT);
  TensorShape({1024}).AsProto(meta->mutable_shape());
  *meta->mutable_shm() = *ref;
  std::vector<zmq::message_t> frames(1);
  EXPECT_THAT(DecodeTensors(header, frames, 0, nullptr),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shared memory")));
}

std::unique_ptr<RpcServer> StartServer(std::vector<RpcMethod> methods) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(options, std::move(methods));
  EXPECT_OK(server);
  return server.ok() ? *std::move(server) : nullptr;
}

// Calls go by tcp until the peer's answer to the client's _hello says it is on this machine, and
// through shared memory once the peer has mapped the client's arena.
absl::Status SettlePath(RpcClient& client) {
  RETURN_IF_ERROR(client.CallSync("Keep", {}, absl::Now() + absl::Seconds(10)).status());
  if (!WaitFor([&] { return client.shared_memory(); })) {
    return absl::DeadlineExceededError("the peer never mapped the client's arena");
  }
  return absl::OkStatus();
}

RpcClientOptions ClientOptions(int port, bool prefer_ipc) {
  RpcClientOptions options;
  options.address = "127.0.0.1:" + std::to_string(port);
  options.prefer_ipc = prefer_ipc;
  options.shm_capacity = 16 * kMiB;
  return options;
}

// Replies with the sum of every float it was sent, and keeps the tensors.
struct Keeper {
  absl::Mutex mu;
  std::vector<Tensor> kept ABSL_GUARDED_BY(mu);
  RpcMethod Method() {
    return {"Keep", [this](RpcMessage request, RpcDone done) {
              double sum = 0;
              for (const Tensor& tensor : request.tensors) {
                for (int64_t i = 0; i < tensor.NumElements(); ++i) sum += tensor.data<float>()[i];
              }
              {
                absl::MutexLock lock(&mu);
                kept.insert(kept.end(), request.tensors.begin(), request.tensors.end());
              }
              done(absl::OkStatus(), {"", {Tensor::Scalar<double>(sum)}});
            }};
  }
  size_t size() {
    absl::MutexLock lock(&mu);
    return kept.size();
  }
  void Clear() {
    absl::MutexLock lock(&mu);
    kept.clear();
  }
};

double Sum(const Tensor& tensor) {
  double sum = 0;
  for (int64_t i = 0; i < tensor.NumElements(); ++i) sum += tensor.data<float>()[i];
  return sum;
}

TEST(ShmTransport, LargeTensorsToAPeerOnThisMachineTravelThroughSharedMemory) {
  Keeper keeper;
  auto server = StartServer({keeper.Method()});
  ASSERT_NE(server, nullptr);
  const int before = ArenaMappings();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> client,
                       RpcClient::Connect(ClientOptions(server->port(), true)));
  const Tensor large = Pattern(kMiB / 4, 0.25f);
  const Tensor small = Pattern(100, 1.0f);
  ASSERT_OK(SettlePath(*client));
  ASSERT_OK_AND_ASSIGN(RpcMessage reply, client->CallSync("Keep", {"", {large, small}},
                                                          absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(client->transport(), "ipc");
  EXPECT_EQ(reply.tensors[0].scalar<double>(), Sum(large) + Sum(small));
  // The client's arena and the server's views of it, one per connection (the I/O thread's, which
  // carried the probe, and CallSync's).
  EXPECT_EQ(ArenaMappings(), before + 3);

  // Through the I/O thread as well, with the arena's blocks reused once let go.
  for (int i = 0; i < 40; ++i) {
    absl::Notification done;
    absl::Status status;
    client->Call("Keep", {"", {large}}, absl::Now() + absl::Seconds(10),
                 [&](absl::Status s, RpcMessage) {
                   status = s;
                   done.Notify();
                 });
    done.WaitForNotification();
    ASSERT_OK(status);
    keeper.Clear();  // 40 MiB in all pass through a 16 MiB arena.
  }
  ASSERT_OK_AND_ASSIGN(reply,
                       client->CallSync("Keep", {"", {large}}, absl::Now() + absl::Seconds(10)));
  {
    absl::MutexLock lock(&keeper.mu);
    ASSERT_EQ(keeper.kept.size(), 1u);
    EXPECT_TRUE(HasPattern(keeper.kept[0], 0.25f));
  }
  keeper.Clear();
  client.reset();
  // The server drops its view with the connection.
  EXPECT_TRUE(WaitFor([&] { return ArenaMappings() == before; })) << ArenaMappings();
}

TEST(ShmTransport, AFullArenaAndATcpPeerGetFrames) {
  Keeper keeper;
  auto server = StartServer({keeper.Method()});
  ASSERT_NE(server, nullptr);
  // Kept tensors fill the 16 MiB arena; the rest go as frames, whole.
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> client,
                       RpcClient::Connect(ClientOptions(server->port(), true)));
  const Tensor large = Pattern(kMiB, 1.5f);  // 4 MiB.
  ASSERT_OK(SettlePath(*client));
  for (int i = 0; i < 6; ++i) {
    ASSERT_OK_AND_ASSIGN(RpcMessage reply,
                         client->CallSync("Keep", {"", {large}}, absl::Now() + absl::Seconds(10)));
    EXPECT_EQ(reply.tensors[0].scalar<double>(), Sum(large));
  }
  {
    absl::MutexLock lock(&keeper.mu);
    for (const Tensor& tensor : keeper.kept) EXPECT_TRUE(HasPattern(tensor, 1.5f));
  }
  keeper.Clear();
  // A server that maps no client's memory gets frames over ipc.
  RpcServerOptions refusing;
  refusing.bind_address = "tcp://127.0.0.1:0";
  refusing.accept_shared_memory = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcServer> frames_only,
                       RpcServer::Start(refusing, {keeper.Method()}));
  const int before_refused = ArenaMappings();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> refused,
                       RpcClient::Connect(ClientOptions(frames_only->port(), true)));
  ASSERT_OK(refused->CallSync("Keep", {}, absl::Now() + absl::Seconds(10)));
  EXPECT_FALSE(WaitFor([&] { return refused->shared_memory(); }, absl::Seconds(1)));
  EXPECT_EQ(refused->transport(), "ipc");
  ASSERT_OK_AND_ASSIGN(RpcMessage refused_reply,
                       refused->CallSync("Keep", {"", {large}}, absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(refused_reply.tensors[0].scalar<double>(), Sum(large));
  EXPECT_EQ(ArenaMappings(), before_refused + 1);  // The client's own, unused.
  keeper.Clear();

  const int before = ArenaMappings();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> tcp,
                       RpcClient::Connect(ClientOptions(server->port(), false)));
  ASSERT_OK_AND_ASSIGN(RpcMessage reply,
                       tcp->CallSync("Keep", {"", {large}}, absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(tcp->transport(), "tcp");
  EXPECT_EQ(reply.tensors[0].scalar<double>(), Sum(large));
  EXPECT_EQ(ArenaMappings(), before);
}

// A server restarted at the same address has another ipc socket, and no view of the client's
// arena: a call whose tensors wait in shared memory goes by tcp as frames instead.
TEST(ShmTransport, ACallReachesAServerRestartedAtTheSameAddress) {
  Keeper keeper;
  auto first = StartServer({keeper.Method()});
  ASSERT_NE(first, nullptr);
  const int port = first->port();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcClient> client,
                       RpcClient::Connect(ClientOptions(port, true)));
  ASSERT_OK(SettlePath(*client));
  ASSERT_EQ(client->transport(), "ipc");
  first.reset();

  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:" + std::to_string(port);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<RpcServer> second,
                       RpcServer::Start(options, {keeper.Method()}));
  const Tensor large = Pattern(kMiB / 4, 0.75f);
  absl::Status status;
  // One call sent before the old connection is seen closed may be lost with it.
  for (int attempt = 0; attempt < 20; ++attempt) {
    absl::Notification done;
    double sum = 0;
    client->Call("Keep", {"", {large}}, absl::Now() + absl::Milliseconds(500),
                 [&](absl::Status s, RpcMessage reply) {
                   status = s;
                   if (s.ok()) sum = reply.tensors[0].scalar<double>();
                   done.Notify();
                 });
    done.WaitForNotification();
    if (status.ok()) {
      EXPECT_EQ(sum, Sum(large));
      break;
    }
  }
  ASSERT_OK(status);
}

// A child process (this program, run with --send_and_wait=PORT) sends a
// tensor through shared memory, says so on stdout and waits to be killed.
int SendAndWait(int port) {
  absl::StatusOr<std::unique_ptr<RpcClient>> client = RpcClient::Connect(ClientOptions(port, true));
  if (!client.ok() || !SettlePath(**client).ok()) return 1;
  absl::StatusOr<RpcMessage> reply =
      (*client)->CallSync("Keep", {"", {Pattern(kMiB / 4, 3.0f)}}, absl::Now() + absl::Seconds(30));
  if (!reply.ok() || (*client)->transport() != "ipc") return 2;
  std::printf("sent\n");
  std::fflush(stdout);
  for (;;) pause();
}

// A sender killed while the receiver holds its tensor: the tensor stays whole, and once it goes
// nothing of the sender's memory is left here, and nothing anywhere has a name.
TEST(ShmTransport, AKilledSenderLeaksNoSegment) {
  Keeper keeper;
  auto server = StartServer({keeper.Method()});
  ASSERT_NE(server, nullptr);
  const int shm_entries = DevShmEntries();
  const int before = ArenaMappings();
  int out[2];
  ASSERT_EQ(pipe(out), 0);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    dup2(out[1], STDOUT_FILENO);
    const std::string flag = absl::StrFormat("--send_and_wait=%d", server->port());
    execl("/proc/self/exe", "shm_arena_test", flag.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(out[1]);
  char said[16] = {};
  ASSERT_GT(read(out[0], said, sizeof(said) - 1), 0);
  close(out[0]);
  EXPECT_STREQ(said, "sent\n");
  ASSERT_EQ(keeper.size(), 1u);
  // A view per connection of the child's (its probe's and its call's).
  const int mapped = ArenaMappings();
  EXPECT_EQ(mapped, before + 2);

  kill(child, SIGKILL);
  waitpid(child, nullptr, 0);
  {
    absl::MutexLock lock(&keeper.mu);
    EXPECT_TRUE(HasPattern(keeper.kept[0], 3.0f));
  }
  // The kept tensor holds its view.
  EXPECT_TRUE(WaitFor([&] { return ArenaMappings() == before + 1; })) << ArenaMappings();
  keeper.Clear();
  EXPECT_TRUE(WaitFor([&] { return ArenaMappings() == before; })) << ArenaMappings();
  EXPECT_EQ(DevShmEntries(), shm_entries);
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  constexpr std::string_view kChild = "--send_and_wait=";
  if (argc == 2 && std::string_view(argv[1]).starts_with(kChild)) {
    return rill::SendAndWait(std::atoi(argv[1] + kChild.size()));
  }
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
