// What goes wrong around `rill server` processes: a worker dying in the
// middle of a step, garbage on the server's port, stop signals, and bad
// start-up flags.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/proto/rpc.pb.h"
#include "transport/rpc.h"
#include "zmq.hpp"

namespace rill {
namespace {

using ::rill::testing::Cluster;
using ::rill::testing::ExitStatus;
using ::rill::testing::ServerProcess;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::AnyOf;
using ::testing::HasSubstr;

absl::StatusOr<std::unique_ptr<Session>> Connect(const std::string& target, const GraphDef& graph) {
  SessionOptions options;
  options.target = target;
  return NewSession(options, graph);
}

// x * x + 1 on `device`, fed x.
GraphDef SmallGraph(const std::string& device) {
  const Scope root = ops::NewRootScope().WithDevice(device);
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Add(root.WithOpName("y"), ops::Square(root, x),
           ops::Const(root, Tensor::Scalar<float>(1), DT_FLOAT));
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

// The server at `target` still opens sessions and runs steps on `device`.
void ExpectServes(const std::string& target, const std::string& device) {
  ASSERT_OK_AND_ASSIGN(auto session, Connect(target, SmallGraph(device)));
  ASSERT_OK_AND_ASSIGN(auto out, session->Run({{"x", Tensor::Scalar<float>(3)}}, {"y"}));
  EXPECT_EQ(out[0].data<float>()[0], 10);
}

// Forty 2048x2048 matmuls on worker 1 (0.7 TFLOP: seconds of work even on
// many cores) whose result worker 0 waits for.
GraphDef SlowOnWorkerOne() {
  const Scope root = ops::NewRootScope();
  const Scope far = root.WithDevice("/job:worker/task:1");
  constexpr int kSize = 2048;
  const Output dims =
      ops::Const(far, Tensor::FromVector<int32_t>({kSize, kSize}, TensorShape({2})), DT_INT32);
  const Output m = ops::Fill(far.WithOpName("m"), dims,
                             ops::Const(far, Tensor::Scalar<float>(1.0f / kSize), DT_FLOAT));
  Output chain = m;
  for (int i = 0; i < 40; ++i) {
    chain = ops::MatMul(far.WithOpName(absl::StrFormat("chain%d", i)), chain, m);
  }
  const Scope near = root.WithDevice("/job:worker/task:0");
  ops::Sum(near.WithOpName("total"), chain,
           ops::Const(near, Tensor::FromVector<int32_t>({0, 1}, TensorShape({2})), DT_INT32));
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

TEST(Faults, WorkerKilledMidStepFailsTheStepAsUnavailable) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 2));
  ASSERT_OK_AND_ASSIGN(auto session, Connect(cluster.Target("worker", 0), SlowOnWorkerOne()));
  absl::StatusOr<std::vector<Tensor>> result;
  absl::Notification finished;
  std::thread step([&] {
    result = session->Run({}, {"total"});
    finished.Notify();
  });
  absl::SleepFor(absl::Milliseconds(300));
  cluster.Task("worker", 1).Kill(SIGKILL);
  EXPECT_EQ(cluster.Task("worker", 1).WaitExit().signal, SIGKILL);
  const bool ended = finished.WaitForNotificationWithTimeout(absl::Seconds(20));
  EXPECT_TRUE(ended) << "the step still runs 20 s after its worker died";
  if (!ended) cluster.Task("worker", 0).Kill(SIGKILL);  // Ends the step so the thread joins.
  step.join();
  const std::string dead_address = cluster.worker_hosts[1];
  EXPECT_THAT(result,
              StatusIs(absl::StatusCode::kUnavailable,
                       AnyOf(HasSubstr(dead_address), HasSubstr("/job:worker/replica:0/task:1"))));
  if (!ended) return;
  ExpectServes(cluster.Target("worker", 0), "/job:worker/task:0");
}

// Worker 1 squares what worker 0 dequeues from a queue nobody fills: the
// step waits on worker 1 for a tensor that never comes.
GraphDef WaitsOnWorkerOne() {
  const Scope root = ops::NewRootScope();
  const Scope near = root.WithDevice("/job:worker/task:0");
  const ops::FIFOQueueV2 queue(near.WithOpName("empty"), {DT_FLOAT});
  const ops::QueueDequeueV2 value(near.WithOpName("never"), queue.handle, {DT_FLOAT});
  ops::Square(root.WithDevice("/job:worker/task:1").WithOpName("squared"), value.components[0]);
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

// How many RunGraph calls the worker at `address` runs now.
absl::StatusOr<int> RunningSteps(const std::string& address) {
  RpcClientOptions options;
  options.address = address;
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> client, RpcClient::Connect(options));
  ASSIGN_OR_RETURN(RpcMessage reply,
                   client->CallSync("GetStatus", RpcMessage(), absl::Now() + absl::Seconds(10)));
  GetStatusReply status;
  if (!status.ParseFromString(reply.body)) return absl::DataLossError("GetStatus: bad reply");
  return status.running_steps();
}

// A master that dies mid-step leaves its steps on other workers waiting
// for tensors it would have sent; the worker ends them when the master's
// connection closes, not when the worker stops.
TEST(Faults, MasterKilledMidStepEndsItsStepsOnTheLiveWorker) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 2));
  ASSERT_OK_AND_ASSIGN(auto session, Connect(cluster.Target("worker", 0), WaitsOnWorkerOne()));
  absl::StatusOr<std::vector<Tensor>> result;
  std::thread step([&] { result = session->Run({}, {"squared"}); });
  const std::string live = cluster.worker_hosts[1];
  absl::StatusOr<int> running = 0;
  for (int i = 0; i < 200 && running.ok() && *running == 0; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    running = RunningSteps(live);
  }
  ASSERT_OK(running);
  ASSERT_EQ(*running, 1) << "the step never started on worker 1";

  cluster.Task("worker", 0).Kill(SIGKILL);
  EXPECT_EQ(cluster.Task("worker", 0).WaitExit().signal, SIGKILL);
  for (int i = 0; i < 400 && running.ok() && *running > 0; ++i) {
    absl::SleepFor(absl::Milliseconds(50));
    running = RunningSteps(live);
  }
  EXPECT_OK(running);
  EXPECT_EQ(running.value_or(-1), 0) << "worker 1 still runs the dead master's step";
  EXPECT_THAT(cluster.Task("worker", 1).Log(),
              HasSubstr("a master's connection closed mid-step: cancelled 1 of its steps"));
  step.join();
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kUnavailable, ::testing::_));
  ExpectServes(cluster.Target("worker", 1), "/job:worker/task:1");
}

int ConnectTcp(int port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = htons(static_cast<uint16_t>(port));
  if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

void SendRaw(int port, const std::string& bytes) {
  const int fd = ConnectTcp(port);
  ASSERT_GE(fd, 0) << "connect to port " << port;
  size_t sent = 0;
  while (sent < bytes.size()) {
    const ssize_t n = send(fd, bytes.data() + sent, bytes.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) break;  // The server may hang up on garbage: that is fine.
    sent += static_cast<size_t>(n);
  }
  // Give the server time to read before the connection goes.
  absl::SleepFor(absl::Milliseconds(100));
  close(fd);
}

std::string RandomBytes(size_t n, int seed) {
  std::mt19937 random(seed);
  std::string bytes(n, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  return bytes;
}

// A ZMTP 3.0 greeting as a client sends it (NULL mechanism).
std::string ZmtpGreeting() {
  std::string greeting = {'\xff', 0, 0, 0, 0, 0, 0, 0, 1, '\x7f', 3, 0};
  std::string mechanism = "NULL";
  mechanism.resize(20, '\0');
  greeting += mechanism;
  greeting.push_back(0);  // as-server
  greeting.resize(64, '\0');
  return greeting;
}

std::string Header(const std::string& method, uint64_t request_id, const std::string& body,
                   int tensors) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(request_id);
  header.set_body(body);
  for (int i = 0; i < tensors; ++i) {
    TensorMeta* meta = header.add_tensors();
    meta->set_dtype(DT_FLOAT);
    meta->mutable_shape()->add_dim()->set_size(1 << 18);
    meta->set_bytes(uint64_t{1} << 20);
  }
  return header.SerializeAsString();
}

void SendFrames(zmq::socket_t& socket, const std::vector<std::string>& frames) {
  for (size_t i = 0; i < frames.size(); ++i) {
    socket.send(zmq::buffer(frames[i]),
                i + 1 < frames.size() ? zmq::send_flags::sndmore : zmq::send_flags::none);
  }
}

// The replies to `request_ids` by id, gathered for at most 10 s.
std::map<uint64_t, RpcHeader> AwaitReplies(zmq::socket_t& socket,
                                           const std::set<uint64_t>& request_ids) {
  std::map<uint64_t, RpcHeader> replies;
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (replies.size() < request_ids.size() && absl::Now() < deadline) {
    zmq::pollitem_t item{static_cast<void*>(socket), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    if ((item.revents & ZMQ_POLLIN) == 0) continue;
    std::vector<zmq::message_t> frames;
    do {
      frames.emplace_back();
      if (!socket.recv(frames.back())) return replies;
    } while (frames.back().more());
    RpcHeader header;
    if (header.ParseFromArray(frames[0].data(), static_cast<int>(frames[0].size())) &&
        request_ids.contains(header.request_id())) {
      replies[header.request_id()] = header;
    }
  }
  return replies;
}

TEST(Faults, GarbageOnTheServerPortLeavesItServing) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 1));
  ServerProcess& server = cluster.Task("worker", 0);
  const int port =
      std::stoi(cluster.worker_hosts[0].substr(cluster.worker_hosts[0].rfind(':') + 1));

  SendRaw(port, RandomBytes(8192, 1));
  // A long frame that claims 2^62 bytes right after a valid greeting.
  SendRaw(port, ZmtpGreeting() + std::string("\x06\x40\0\0\0\0\0\0\0", 9) + RandomBytes(4096, 2));
  SendRaw(port, ZmtpGreeting() + RandomBytes(4096, 3));
  SendRaw(port, "");

  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect("tcp://127.0.0.1:" + std::to_string(port));
  SendFrames(dealer, {RandomBytes(100, 4)});
  SendFrames(dealer, {""});
  SendFrames(dealer, {"", "", ""});
  // A request whose tensor frames never come, one with a short frame, one
  // whose body is not its method's message, one for no method.
  SendFrames(dealer, {Header("RunStep", 1, "", 2)});
  SendFrames(dealer, {Header("PushTensor", 2, "", 1), "short"});
  SendFrames(dealer, {Header("CreateSession", 3, RandomBytes(64, 5), 0)});
  SendFrames(dealer, {Header("NoSuchMethod", 4, "", 0)});

  std::map<uint64_t, RpcHeader> replies = AwaitReplies(dealer, {1, 2, 3, 4});
  ASSERT_TRUE(replies.contains(1)) << "no reply to the request without its tensors";
  EXPECT_EQ(replies[1].status_code(), static_cast<int>(absl::StatusCode::kInvalidArgument))
      << replies[1].status_message();
  ASSERT_TRUE(replies.contains(2)) << "no reply to the request with a short tensor";
  EXPECT_EQ(replies[2].status_code(), static_cast<int>(absl::StatusCode::kInvalidArgument))
      << replies[2].status_message();
  ASSERT_TRUE(replies.contains(3)) << "no reply to the request with a garbage body";
  EXPECT_EQ(replies[3].status_code(), static_cast<int>(absl::StatusCode::kInvalidArgument))
      << replies[3].status_message();
  ASSERT_TRUE(replies.contains(4)) << "no reply to the unknown method";
  EXPECT_EQ(replies[4].status_code(), static_cast<int>(absl::StatusCode::kUnimplemented));
  EXPECT_THAT(replies[4].status_message(), HasSubstr("NoSuchMethod"));

  EXPECT_TRUE(server.Running()) << server.Log();
  ExpectServes(cluster.Target("worker", 0), "/job:worker/task:0");
  EXPECT_TRUE(server.Running()) << server.Log();
}

TEST(Faults, StopSignalsEndTheServerCleanly) {
  for (const int signal : {SIGTERM, SIGINT}) {
    ASSERT_OK_AND_ASSIGN(Cluster cluster, testing::StartCluster(0, 1));
    ServerProcess& server = cluster.Task("worker", 0);
    ExpectServes(cluster.Target("worker", 0), "/job:worker/task:0");
    server.Kill(signal);
    const ExitStatus exit = server.WaitExit();
    EXPECT_FALSE(exit.timed_out) << "signal " << signal;
    EXPECT_TRUE(exit.exited) << "signal " << signal << " killed it: " << exit.signal;
    EXPECT_EQ(exit.code, 0) << server.Log();
    EXPECT_THAT(server.Log(), HasSubstr(signal == SIGINT ? "SIGINT received, stopping"
                                                         : "SIGTERM received, stopping"));
  }
}

struct Outcome {
  ExitStatus exit;
  std::string log;
};

Outcome RunServer(const std::vector<std::string>& args,
                  const std::map<std::string, std::string>& env = {}) {
  std::vector<std::string> server_args = {"server"};
  server_args.insert(server_args.end(), args.begin(), args.end());
  const testing::BoundedRun run = testing::RunRill(server_args, env, absl::Seconds(20));
  return {run.exit, run.out + run.err};
}

TEST(Faults, BadFlagsExitWithUsageErrors) {
  const std::string hosts = absl::StrFormat("--worker_hosts=127.0.0.1:%d,127.0.0.1:%d",
                                            testing::FreePort(), testing::FreePort());
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  const std::vector<Case> cases = {
      {{hosts, "--task_index=0"}, "job_name"},
      {{hosts, "--job_name=worker", "--task_index=2"}, "task_index"},
      {{hosts, "--job_name=worker", "--task_index=-1"}, "task_index"},
      {{"--worker_hosts=127.0.0.1", "--job_name=worker", "--task_index=0"}, "worker_hosts"},
      {{"--worker_hosts=127.0.0.1:99999", "--job_name=worker", "--task_index=0"}, "99999"},
      {{hosts, "--job_name=ps", "--task_index=0"}, "ps"},
      {{hosts, "--job_name=worker", "--task_index=0", "--frobnicate"}, "frobnicate"},
      {{hosts, "--job_name=worker", "--task_index=0", "--device_count=CPU=0"}, "CPU=0"},
      {{hosts, "--job_name=worker", "--task_index=0", "--device_count", "TPU=2"}, "TPU"},
      {{hosts, "--job_name=worker", "--task_index=0", "--max_sessions=0"}, "--max_sessions"},
      {{hosts, "--job_name=worker", "--task_index=0", "--max_connections=2147483648"},
       "--max_connections must be a number in 1..2147483647"},
      {{hosts, "--job_name=worker", "--task_index=0", "--pending_step_timeout=0"},
       "--pending_step_timeout must be a positive number of seconds"},
      {{hosts, "--job_name=worker", "--task_index=0", "--session_idle_timeout=-1"},
       "--session_idle_timeout"},
      {{hosts, "--job_name=worker", "--task_index=0", "--max_bytes_per_connection=lots"}, "lots"},
      {{hosts, "--job_name=worker", "--task_index=0", "--max_buffered_bytes=0"},
       "--max_buffered_bytes must be a number in 1.."},
      {{hosts, "--job_name=worker", "--task_index=0", "--connection_idle_timeout=0"},
       "--connection_idle_timeout must be a positive number of seconds"},
      {{hosts, "--job_name=worker", "--task_index=0", "--max_graphs=0"}, "--max_graphs"},
      {{hosts, "--job_name=worker", "--task_index=0", "--graph_idle_timeout=soon"},
       "--graph_idle_timeout must be a non-negative number of seconds"},
  };
  for (const Case& c : cases) {
    const Outcome outcome = RunServer(c.args);
    EXPECT_TRUE(outcome.exit.exited && outcome.exit.code == 2)
        << c.names << ": code " << outcome.exit.code << "\n"
        << outcome.log;
    EXPECT_THAT(outcome.log, HasSubstr(c.names));
  }
}

// The limit flags reach the server: one session at most here.
TEST(Faults, AServerKeepsTheLimitsItsFlagsSet) {
  ASSERT_OK_AND_ASSIGN(Cluster cluster,
                       testing::StartCluster(0, 1, {"--max_sessions=1", "--max_connections=64"}));
  const std::string target = cluster.Target("worker", 0);
  ASSERT_OK_AND_ASSIGN(auto first, Connect(target, SmallGraph("/job:worker/task:0")));
  EXPECT_THAT(Connect(target, SmallGraph("/job:worker/task:0")),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("holds 1 sessions")));
  ASSERT_OK(first->Close());
  ExpectServes(target, "/job:worker/task:0");
  EXPECT_THAT(cluster.Task("worker", 0).Log(), HasSubstr("refuses a session: 1 are open"));
}

TEST(Faults, PortInUseExitsWithOneNamingTheAddress) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  ASSERT_GE(fd, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  ASSERT_EQ(bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)), 0);
  ASSERT_EQ(listen(fd, 1), 0);
  ASSERT_EQ(getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length), 0);
  const std::string taken = absl::StrFormat("127.0.0.1:%d", ntohs(address.sin_port));
  const Outcome outcome =
      RunServer({"--worker_hosts=" + taken, "--job_name=worker", "--task_index=0", "--no_ipc"});
  close(fd);
  EXPECT_TRUE(outcome.exit.exited) << outcome.log;
  EXPECT_EQ(outcome.exit.code, 1) << outcome.log;
  EXPECT_THAT(outcome.log, HasSubstr(taken));
}

TEST(Faults, TfConfigStartsAServer) {
  // Retried on a fresh port when another process took this one meanwhile.
  for (int attempt = 0; attempt < 3; ++attempt) {
    const std::string address = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
    const std::string tf_config = absl::StrFormat(
        R"({"cluster": {"worker": ["%s"]}, "task": {"type": "worker", "index": 0}})", address);
    absl::StatusOr<std::unique_ptr<ServerProcess>> server =
        ServerProcess::Start({}, {{"TF_CONFIG", tf_config}});
    if (!server.ok() && attempt < 2) continue;
    ASSERT_OK(server);
    EXPECT_THAT((*server)->Log(), HasSubstr("zmq://" + address));
    ExpectServes("zmq://" + address, "/job:worker/task:0");
    return;
  }
}

TEST(Faults, MalformedTfConfigIsAUsageError) {
  for (const std::string& tf_config :
       {std::string(R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": )"),
        std::string(R"({"cluster": {"worker": ["127.0.0.1:1"]}})"),
        std::string(R"({"cluster": {"worker": ["127.0.0.1:1"]}, "task": {"type": "ps"}})")}) {
    const Outcome outcome = RunServer({}, {{"TF_CONFIG", tf_config}});
    EXPECT_TRUE(outcome.exit.exited) << tf_config << "\n" << outcome.log;
    EXPECT_EQ(outcome.exit.code, 2) << tf_config << "\n" << outcome.log;
    EXPECT_THAT(outcome.log, HasSubstr("rill server: ")) << tf_config;
  }
}

TEST(Faults, NoClusterAtAllIsAUsageError) {
  const Outcome outcome = RunServer({});
  EXPECT_EQ(outcome.exit.code, 2) << outcome.log;
  EXPECT_THAT(outcome.log, AllOf(HasSubstr("TF_CONFIG"), HasSubstr("usage: rill server")));
}

}  // namespace
}  // namespace rill
