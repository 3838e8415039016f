// What strangers on a `rill server`'s port could make it do, reproduced
// against real server processes: one message of empty frames, idle
// connections holding every place, senders of gigabytes, and cluster specs
// of a thousand tasks. The server must stay up, serve a real client, and
// keep its memory and threads bounded.
#include <sys/resource.h>
#include <sys/types.h>

#include <algorithm>
#include <cstdint>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "runtime/distributed/remote_session.h"
#include "runtime/session.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"
#include "tests/transport/raw_zmtp_peer.h"
#include "transport/proto/rpc.pb.h"
#include "transport/zmtp/protocol.h"

namespace rill {
namespace {

using ::rill::testing::Cluster;
using ::rill::testing::RawZmtpPeer;
using ::rill::testing::ServerProcess;
using ::testing::HasSubstr;

int PortOf(const std::string& host_port) {
  return std::stoi(host_port.substr(host_port.rfind(':') + 1));
}

// A field of /proc/PID/status ("VmHWM" in KiB, "Threads").
int64_t ProcStatus(pid_t pid, const std::string& field) {
  std::ifstream status(absl::StrFormat("/proc/%d/status", pid));
  std::string line;
  while (std::getline(status, line)) {
    if (!line.starts_with(field + ":")) continue;
    std::vector<std::string> parts =
        absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    int64_t value = 0;
    if (parts.size() >= 2 && absl::SimpleAtoi(parts[1], &value)) return value;
  }
  return -1;
}

int64_t PeakResidentBytes(pid_t pid) { return ProcStatus(pid, "VmHWM") << 10; }

// y = x^2 + 1, its parts on `devices` in turn.
GraphDef StepOver(const std::vector<std::string>& devices) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x").WithDevice(devices.front()), DT_FLOAT);
  const Output square = ops::Square(root.WithDevice(devices[1 % devices.size()]), x);
  ops::Add(root.WithOpName("y").WithDevice(devices.front()), square,
           ops::Const(root.WithDevice(devices.front()), Tensor::Scalar<float>(1), DT_FLOAT));
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

// A real client: a session on `target` runs one step over `devices`.
absl::Status RealStep(const std::string& target, const std::vector<std::string>& devices) {
  SessionOptions options;
  options.target = target;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(options, StepOver(devices)));
  ASSIGN_OR_RETURN(std::vector<Tensor> out, session->Run({{"x", Tensor::Scalar<float>(3)}}, {"y"}));
  if (out[0].data<float>()[0] != 10) return absl::InternalError("a wrong result");
  return session->Close();
}

TEST(Strangers, OneMessageOfEmptyFramesLeavesTheServerServing) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 1));
  ServerProcess& server = cluster.Task("worker", 0);
  const int64_t before = PeakResidentBytes(server.pid());
  ASSERT_OK_AND_ASSIGN(auto stranger, RawZmtpPeer::Connect(PortOf(cluster.worker_hosts[0])));
  // 40 million empty frames, 80 MB on the wire.
  EXPECT_LT(stranger->SendEmptyFrames("RunGraph", 40'000'000), 40'000'000);
  EXPECT_TRUE(stranger->ClosedWithin(absl::Seconds(10)));
  EXPECT_TRUE(server.Running()) << server.Log();
  EXPECT_LT(PeakResidentBytes(server.pid()) - before, int64_t{64} << 20);
  EXPECT_THAT(server.Log(), HasSubstr("more than 64 frames past the 0 tensors"));
  EXPECT_OK(RealStep(cluster.Target("worker", 0), {"/job:worker/task:0"}));
}

TEST(Strangers, IdleConnectionsGiveTheirPlacesToARealClient) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 1));
  ServerProcess& server = cluster.Task("worker", 0);
  std::vector<std::unique_ptr<RawZmtpPeer>> idle;
  for (int i = 0; i < 1030; ++i) {
    ASSERT_OK_AND_ASSIGN(auto peer, RawZmtpPeer::Connect(PortOf(cluster.worker_hosts[0])));
    idle.push_back(std::move(peer));
  }
  absl::SleepFor(absl::Milliseconds(1200));
  EXPECT_OK(RealStep(cluster.Target("worker", 0), {"/job:worker/task:0"}));
  EXPECT_TRUE(server.Running()) << server.Log();
  // Whether the last idle ones were refused first depends on how fast
  // they came (a connection that never sent a request may lose its place
  // after a second); rpc_server_limits_test pins the refusal.
  EXPECT_THAT(server.Log(), HasSubstr("gives its place to a new one"));
}

TEST(Strangers, SendersOfGigabytesAreRefusedWithoutTheServerHoldingThem) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 1));
  ServerProcess& server = cluster.Task("worker", 0);
  const int port = PortOf(cluster.worker_hosts[0]);
  const int64_t before = PeakResidentBytes(server.pid());
  constexpr int64_t kDeclared = int64_t{1} << 30;
  std::vector<std::string> answers(3);
  std::vector<std::thread> senders;
  for (int s = 0; s < 3; ++s) {
    senders.emplace_back([&, s] {
      absl::StatusOr<std::unique_ptr<RawZmtpPeer>> stranger = RawZmtpPeer::Connect(port);
      if (!stranger.ok() || !(*stranger)->SendTensorRequest("PushTensor", 1, kDeclared)) return;
      std::optional<RpcHeader> reply = (*stranger)->ReadReply(absl::Seconds(60));
      if (reply.has_value()) answers[s] = reply->status_message();
    });
  }
  // A real client is served while they send.
  EXPECT_OK(RealStep(cluster.Target("worker", 0), {"/job:worker/task:0"}));
  for (std::thread& sender : senders) sender.join();
  for (const std::string& answer : answers) EXPECT_THAT(answer, HasSubstr("per connection"));
  EXPECT_TRUE(server.Running()) << server.Log();
  EXPECT_LT(PeakResidentBytes(server.pid()) - before, int64_t{256} << 20);
}

// A cluster spec of `tasks` tasks in which only ps 0 and worker 0 run;
// the other workers are listed at addresses where nothing listens.
struct SparseCluster {
  explicit SparseCluster(int tasks) {
    workers.push_back(absl::StrFormat("127.0.0.1:%d", testing::FreePort()));
    for (int i = 0; static_cast<int>(workers.size()) + 1 < tasks; ++i) {
      // Distinct loopback addresses on port 1: refused at once, if ever tried.
      workers.push_back(absl::StrFormat("127.0.%d.%d:1", 1 + i / 250, 1 + i % 250));
    }
  }
  absl::StatusOr<std::unique_ptr<ServerProcess>> Start(const std::string& job) const {
    return ServerProcess::Start({"--ps_hosts=" + ps,
                                 "--worker_hosts=" + absl::StrJoin(workers, ","),
                                 "--job_name=" + job, "--task_index=0"});
  }
  std::string WorkerTarget() const { return "zmq://" + workers[0]; }

  const std::string ps = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  std::vector<std::string> workers;
};

// The threads of both live servers of a SparseCluster of `tasks` after a
// step between them.
std::pair<int64_t, int64_t> ThreadsWithClusterOf(int tasks) {
  const SparseCluster cluster(tasks);
  absl::StatusOr<std::unique_ptr<ServerProcess>> ps = cluster.Start("ps");
  absl::StatusOr<std::unique_ptr<ServerProcess>> worker = cluster.Start("worker");
  EXPECT_OK(ps);
  EXPECT_OK(worker);
  if (!ps.ok() || !worker.ok()) return {-1, -1};
  EXPECT_OK(RealStep(cluster.WorkerTarget(), {"/job:worker/task:0", "/job:ps/task:0"}))
      << (*worker)->Log();
  EXPECT_TRUE((*worker)->Running()) << (*worker)->Log();
  return {ProcStatus((*ps)->pid(), "Threads"), ProcStatus((*worker)->pid(), "Threads")};
}

TEST(Strangers, ThreadsDoNotGrowWithTheClusterSpec) {
  const auto ten = ThreadsWithClusterOf(10);
  const auto three_hundred = ThreadsWithClusterOf(300);
  const auto thousand = ThreadsWithClusterOf(1000);
  std::printf("threads (ps, worker) with 10 / 300 / 1000 tasks: (%ld, %ld) (%ld, %ld) (%ld, %ld)\n",
              ten.first, ten.second, three_hundred.first, three_hundred.second, thousand.first,
              thousand.second);
  EXPECT_GT(ten.first, 0);
  EXPECT_EQ(thousand.first, ten.first);
  EXPECT_EQ(thousand.second, ten.second);
  EXPECT_EQ(three_hundred.second, ten.second);
}

int64_t ResidentBytes(pid_t pid) { return ProcStatus(pid, "VmRSS") << 10; }

// `tensors` empty TensorMeta entries after a request's method and id: two
// bytes each on the wire.
std::string HeaderOfEmptyTensors(const std::string& method, uint64_t id, int64_t tensors) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(id);
  std::string bytes = header.SerializeAsString();
  for (int64_t i = 0; i < tensors; ++i) bytes.append("\x3a\x00", 2);
  return bytes;
}

// One message declaring ten million tensors (20 MB) made a server parse it
// into 1.5 GB, and 50 million killed it (std::bad_alloc).
TEST(Strangers, HeadersDeclaringMillionsOfTensorsAreRefusedUnparsed) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster,
                       testing::StartCluster(0, 1, {"--max_bytes_per_connection", "67108864"}));
  ServerProcess& server = cluster.Task("worker", 0);
  const int64_t before = PeakResidentBytes(server.pid());
  const int64_t resident_before = ResidentBytes(server.pid());
  ASSERT_OK_AND_ASSIGN(auto stranger, RawZmtpPeer::Connect(PortOf(cluster.worker_hosts[0])));
  const std::string header = HeaderOfEmptyTensors("RunGraph", 1, 10'000'000);
  // Without its frames, then with them.
  ASSERT_TRUE(stranger->SendFrame(0, header));
  std::optional<RpcHeader> reply = stranger->ReadReply(absl::Seconds(30));
  ASSERT_TRUE(reply.has_value());
  EXPECT_THAT(reply->status_message(), HasSubstr("max_tensors_per_message"));
  ASSERT_TRUE(stranger->SendFrame(zmtp::kMore, HeaderOfEmptyTensors("RunGraph", 2, 1'000'000)));
  std::string frames;
  for (int i = 0; i < 1'000'000; ++i) frames.append(i + 1 < 1'000'000 ? "\x01\x00" : "\x00\x00", 2);
  ASSERT_TRUE(stranger->Send(frames));
  reply = stranger->ReadReply(absl::Seconds(30));
  ASSERT_TRUE(reply.has_value());
  EXPECT_EQ(reply->request_id(), 2u);
  EXPECT_THAT(reply->status_message(), HasSubstr("max_tensors_per_message"));
  // A 200 MB body on the same connection, past its 64 MiB: read, not kept.
  RpcHeader large;
  large.set_method("RegisterGraph");
  large.set_request_id(3);
  large.set_body(std::string(200 << 20, 'b'));
  ASSERT_TRUE(stranger->SendFrame(0, large.SerializeAsString()));
  reply = stranger->ReadReply(absl::Seconds(60));
  ASSERT_TRUE(reply.has_value());
  EXPECT_THAT(reply->status_message(), HasSubstr("max_bytes_per_connection"));
  EXPECT_TRUE(server.Running()) << server.Log();
  EXPECT_LT(PeakResidentBytes(server.pid()) - before, int64_t{128} << 20);
  stranger.reset();
  EXPECT_OK(RealStep(cluster.Target("worker", 0), {"/job:worker/task:0"}));
  EXPECT_LT(ResidentBytes(server.pid()) - resident_before, int64_t{64} << 20);
}

// A peer that never read its replies and sent `00 04 10 01 3A 00` (one
// tensor declared, no frame) over and over made the server queue a
// refusal for each, 2.7 GB for 100 MB sent; PINGs the same with PONGs.
TEST(Strangers, APeerThatNeverReadsCannotMakeTheServerQueue) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster,
                       testing::StartCluster(0, 1, {"--connection_idle_timeout", "2"}));
  ServerProcess& server = cluster.Task("worker", 0);
  const int64_t before = PeakResidentBytes(server.pid());
  const int64_t resident_before = ResidentBytes(server.pid());
  const int port = PortOf(cluster.worker_hosts[0]);
  for (const std::string& message :
       {std::string("\x00\x04\x10\x01\x3a\x00", 6),
        std::string("\x04\x07\x04PING\x00\x0a", 9)}) {
    ASSERT_OK_AND_ASSIGN(auto stranger, RawZmtpPeer::Connect(port));
    std::string burst;
    for (int i = 0; i < (1 << 20) / static_cast<int>(message.size()); ++i) burst += message;
    // 64 MB, or less once the server drops it for output it never reads.
    for (int64_t sent = 0; sent < (int64_t{64} << 20) && stranger->Send(burst);) {
      sent += static_cast<int64_t>(burst.size());
    }
    EXPECT_TRUE(stranger->ClosedUnreadWithin(absl::Seconds(20))) << message.size();
  }
  EXPECT_TRUE(server.Running()) << server.Log();
  EXPECT_LT(PeakResidentBytes(server.pid()) - before, int64_t{64} << 20);
  EXPECT_THAT(server.Log(), HasSubstr("has read none of its replies"));
  EXPECT_OK(RealStep(cluster.Target("worker", 0), {"/job:worker/task:0"}));
  // 300 MB of PINGs left 4.63 GB held after the connection closed.
  EXPECT_LT(ResidentBytes(server.pid()) - resident_before, int64_t{64} << 20);
}

// With the soft limit of 1,024 descriptors it started with, 1,100
// connections that trickled a byte each locked every real client out
// ("Too many open files"): a server raises its limit as it starts.
TEST(Strangers, TricklingConnectionsCannotTakeEveryDescriptor) {
  rlimit saved{};
  getrlimit(RLIMIT_NOFILE, &saved);
  if (saved.rlim_max < 4096) GTEST_SKIP() << "the hard limit of open files is " << saved.rlim_max;
  rlimit low = saved;
  low.rlim_cur = 1024;
  setrlimit(RLIMIT_NOFILE, &low);
  absl::StatusOr<Cluster> started = testing::StartCluster(0, 1);
  setrlimit(RLIMIT_NOFILE, &saved);
  ASSERT_OK(started);
  Cluster& cluster = *started;
  std::vector<std::unique_ptr<RawZmtpPeer>> trickling;
  for (int i = 0; i < 1100; ++i) {
    ASSERT_OK_AND_ASSIGN(auto peer, RawZmtpPeer::Connect(PortOf(cluster.worker_hosts[0]),
                                                         RawZmtpPeer::Stop::kNothingSent));
    ASSERT_TRUE(peer->Send("\xff"));
    trickling.push_back(std::move(peer));
  }
  EXPECT_OK(RealStep(cluster.Target("worker", 0), {"/job:worker/task:0"}));
  ServerProcess& server = cluster.Task("worker", 0);
  EXPECT_TRUE(server.Running()) << server.Log();
  EXPECT_THAT(server.Log(), ::testing::Not(HasSubstr("Too many open files")));
}

// Sets this process's address-space limit for its lifetime: processes it
// starts meanwhile inherit it.
class ScopedAddressSpaceLimit {
 public:
  explicit ScopedAddressSpaceLimit(rlim_t bytes) {
    getrlimit(RLIMIT_AS, &saved_);
    rlimit limit = saved_;
    limit.rlim_cur = std::min(bytes, saved_.rlim_max);
    setrlimit(RLIMIT_AS, &limit);
  }
  ~ScopedAddressSpaceLimit() { setrlimit(RLIMIT_AS, &saved_); }

 private:
  rlimit saved_{};
};

// Under a 4 GB address space, a worker in a cluster of 300 workers, all
// but itself down, aborted when a client created a session (libzmq could
// not start the threads of 300 connections). Now it takes a session and
// even lists every task's devices, 300 connections, with its threads.
TEST(Strangers, ThreeHundredPeersFitInAFourGigabyteAddressSpace) {
  const SparseCluster cluster(301);
  absl::StatusOr<std::unique_ptr<ServerProcess>> ps;
  absl::StatusOr<std::unique_ptr<ServerProcess>> worker;
  {
    ScopedAddressSpaceLimit limit(rlim_t{4} << 30);
    ps = cluster.Start("ps");
    worker = cluster.Start("worker");
  }
  ASSERT_OK(ps);
  ASSERT_OK(worker);
  EXPECT_THAT(testing::ReadFileOrDie(absl::StrFormat("/proc/%d/limits", (*worker)->pid())),
              ::testing::ContainsRegex("Max address space +4294967296"));
  EXPECT_OK(RealStep(cluster.WorkerTarget(), {"/job:worker/task:0", "/job:ps/task:0"}))
      << (*worker)->Log();
  const int64_t threads = ProcStatus((*worker)->pid(), "Threads");
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> devices,
                       ListRemoteDevices(cluster.WorkerTarget(), absl::Seconds(60)));
  EXPECT_EQ(devices.size(), 301u);
  EXPECT_TRUE((*worker)->Running()) << (*worker)->Log();
  EXPECT_EQ(ProcStatus((*worker)->pid(), "Threads"), threads);
  EXPECT_OK(RealStep(cluster.WorkerTarget(), {"/job:worker/task:0", "/job:ps/task:0"}));
}

}  // namespace
}  // namespace rill
