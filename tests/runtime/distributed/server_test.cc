// Servers in this process: sessions with a zmq:// target against one or
// two servers, and the master's and worker's answers to bad requests.
#include "runtime/distributed/server.h"

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "graph/tensor_list.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/remote_session.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/rpc.h"

namespace rill {
namespace {

using ::rill::testing::LineXs;
using ::rill::testing::LineYs;
using ::rill::testing::QuietLog;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Session> Connect(const std::string& target, const GraphDef& graph) {
  SessionOptions options;
  options.target = target;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

// ZeroMQ's own words for a bind to a host name are "No such device"; the
// server names the task, its address and the host instead.
TEST(Server, AHostThatCannotResolveIsNamedWithTheTask) {
  ServerOptions options;
  options.log = QuietLog();
  options.bind_ipc = false;
  ASSERT_OK_AND_ASSIGN(
      options.config.cluster,
      ClusterSpec::FromJobs(
          {{"ps", {"127.0.0.1:1"}}, {"worker", {"127.0.0.1:2", "nosuchhost.invalid:2222"}}}));
  options.config.task = TaskId{"worker", 1};
  EXPECT_THAT(Server::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("job 'worker' task 1 at 'nosuchhost.invalid:2222'"),
                             HasSubstr("cannot resolve host 'nosuchhost.invalid'"))));
  options.config.task = TaskId{"ps", 0};
  options.bind = "nosuchhost.invalid";
  EXPECT_THAT(Server::Create(options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("--bind 'nosuchhost.invalid': cannot resolve host")));
}

// Without keys anyone who reaches the port can read and change every
// variable: beyond loopback a server needs them, or to be told the network
// is trusted.
TEST(Server, WithoutKeysANonLoopbackAddressNeedsInsecure) {
  ServerOptions options;
  options.log = QuietLog();
  options.bind_ipc = false;
  ASSERT_OK_AND_ASSIGN(options.config.cluster,
                       ClusterSpec::FromJobs({{"worker", {"127.0.0.1:1"}}}));
  options.config.task = TaskId{"worker", 0};
  options.bind = "0.0.0.0:0";
  EXPECT_THAT(Server::Create(options),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       AllOf(HasSubstr("refusing to serve 0.0.0.0:0 without CURVE keys"),
                             HasSubstr("--curve_keys"), HasSubstr("--insecure"))));
  options.config.insecure = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> server, Server::Create(options));
  server->Stop();
  // Loopback needs neither.
  options.config.insecure = false;
  options.bind = "127.0.0.1:0";
  EXPECT_OK(Server::Create(options).status());
}

TEST(Server, LocalServerRunsASessionLikeThisProcess) {
  ASSERT_OK_AND_ASSIGN(auto server, Server::CreateLocal(QuietLog()));
  EXPECT_EQ(server->target(), absl::StrFormat("zmq://127.0.0.1:%d", server->port()));
  const Scope root = ops::NewRootScope();
  const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  ops::MatMul(root.WithOpName("product"), a, a, ops::MatMul::TransposeB(true));
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  auto session = Connect(server->target(), graph);
  ASSERT_NE(session, nullptr);
  const Tensor value = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  ASSERT_OK_AND_ASSIGN(auto out, session->Run({{"a", value}}, {"product", "a"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(5, 11, 11, 25));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(1, 2, 3, 4));  // A fed tensor fetched back.
  ASSERT_OK(session->Close());
  EXPECT_THAT(session->Run({{"a", value}}, {"product"}),
              StatusIs(absl::StatusCode::kCancelled, HasSubstr("closed")));
}

TEST(Server, KernelErrorsArriveWithTheNodeName) {
  ASSERT_OK_AND_ASSIGN(auto server, Server::CreateLocal(QuietLog()));
  const Scope root = ops::NewRootScope();
  const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  ops::MatMul(root.WithOpName("product"), a, a);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  auto session = Connect(server->target(), graph);
  ASSERT_NE(session, nullptr);
  const Tensor wide = Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3}));
  EXPECT_THAT(session->Run({{"a", wide}}, {"product"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("product")));
  EXPECT_THAT(session->Run({}, {"nope"}), StatusIs(absl::StatusCode::kNotFound, HasSubstr("nope")));
  // The session still works.
  const Tensor square = Tensor::FromVector<float>({1, 0, 0, 1}, TensorShape({2, 2}));
  EXPECT_OK(session->Run({{"a", square}}, {"product"}).status());
}

// Two servers: variables on /job:ps/task:0, the computation on
// /job:worker/task:0; the trained values equal a local session's.
TEST(Server, TrainingAcrossTwoTasksEqualsThisProcess) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"ps", 1}, {"worker", 1}}, QuietLog()));
  const auto build = [](const std::string& ps, const std::string& worker) {
    const Scope root = ops::NewRootScope();
    const Scope on_worker = root.WithDevice(worker);
    const Output x = ops::Placeholder(on_worker.WithOpName("x"), DT_FLOAT);
    const Output y = ops::Placeholder(on_worker.WithOpName("y"), DT_FLOAT);
    const Variable w(root.WithDevice(ps), "w", Tensor::FromVector<float>({0.5f}, TensorShape({1})));
    const Variable b(root.WithDevice(ps), "b", Tensor::FromVector<float>({0.f}, TensorShape({1})));
    const Output error = ops::Sub(on_worker, ops::Add(on_worker, ops::Mul(on_worker, x, w), b), y);
    const Output loss = ops::Mean(on_worker, ops::Square(on_worker, error), 0);
    GradientDescentOptimizer optimizer(0.05);
    EXPECT_OK(optimizer.Minimize(on_worker, loss, {w, b}, nullptr, "train").status());
    GlobalVariablesInitializer(root);
    absl::StatusOr<GraphDef> graph = root.ToGraphDef();
    EXPECT_OK(graph);
    return graph.ok() ? *graph : GraphDef();
  };
  const auto train = [](Session& session) -> std::vector<float> {
    EXPECT_OK(session.Run({}, {}, {"init"}).status());
    const Tensor x = LineXs();
    const Tensor y = LineYs();
    for (int step = 0; step < 100; ++step) {
      EXPECT_OK(session.Run({{"x", x}, {"y", y}}, {}, {"train"}).status());
    }
    absl::StatusOr<std::vector<Tensor>> out = session.Run({}, {"w/read", "b/read"});
    EXPECT_OK(out);
    return out.ok() ? std::vector<float>{(*out)[0].data<float>()[0], (*out)[1].data<float>()[0]}
                    : std::vector<float>();
  };
  auto remote = Connect(servers[1]->target(), build("/job:ps/task:0", "/job:worker/task:0"));
  ASSERT_NE(remote, nullptr);
  ASSERT_OK_AND_ASSIGN(auto local, NewSession(SessionOptions(), build("", "")));
  EXPECT_EQ(train(*remote), train(*local));
}

// A TensorList made on one task, changed on another, stacked on the first
// and fetched by the client: the variant crosses tasks in TensorFlow's
// wire form, both ways, and reaches the client as a list.
TEST(Server, TensorListsCrossTasks) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"ps", 1}, {"worker", 1}}, QuietLog()));
  const Scope root = ops::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  const Scope worker = root.WithDevice("/job:worker/task:0");
  const Output shape = ops::Const(ps, Tensor::FromVector<int32_t>({2}, {1}), DT_INT32);
  const Output list = ops::TensorListFromTensor(
      ps, ops::Const(ps, Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, {3, 2}), DT_FLOAT), shape);
  const Output changed = ops::TensorListSetItem(
      worker.WithOpName("changed"), list, ops::Const(worker, Tensor::Scalar<int32_t>(1), DT_INT32),
      ops::Const(worker, Tensor::FromVector<float>({9, 9}, {2}), DT_FLOAT));
  ops::TensorListStack(ps.WithOpName("stacked"), changed, shape, DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(GraphDef graph, root.ToGraphDef());
  auto session = Connect(servers[1]->target(), graph);
  ASSERT_NE(session, nullptr);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"stacked", "changed"}));
  EXPECT_THAT(Values<float>(out[0]), ::testing::ElementsAre(1, 2, 9, 9, 5, 6));
  ASSERT_EQ(out[1].dtype(), DT_VARIANT);
  const TensorList* fetched = out[1].scalar<Variant>().get<TensorList>();
  ASSERT_NE(fetched, nullptr);
  ASSERT_EQ(fetched->tensors.size(), 3u);
  EXPECT_THAT(Values<float>(fetched->tensors[1]), ::testing::ElementsAre(9, 9));
}

TEST(Server, EveryTaskServesAllItsDevices) {
  ServerOptions options;
  options.log = nullptr;  // Stderr, as SessionOptions::placement_log.
  options.device_count = {{"CPU", 2}};
  ASSERT_OK_AND_ASSIGN(auto servers,
                       Server::CreateLocalCluster({{"worker", 1}, {"ps", 1}}, options));
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> devices,
                       ListRemoteDevices(servers[0]->target(), absl::Seconds(20)));
  EXPECT_THAT(devices, ElementsAre("/job:ps/replica:0/task:0/device:CPU:0",
                                   "/job:ps/replica:0/task:0/device:CPU:1",
                                   "/job:worker/replica:0/task:0/device:CPU:0",
                                   "/job:worker/replica:0/task:0/device:CPU:1"));
  // Between the ps's two CPUs the tensor stays in the ps; then it goes to
  // the worker's second CPU.
  const Scope root = ops::NewRootScope();
  const Output a = ops::Const(root.WithDevice("/job:ps/task:0/device:CPU:0").WithOpName("a"),
                              Tensor::FromVector<float>({1, 2}, TensorShape({2})), DT_FLOAT);
  const Output b = ops::Neg(root.WithDevice("/job:ps/task:0/device:CPU:1").WithOpName("b"), a);
  ops::Square(root.WithDevice("/job:worker/task:0/device:CPU:1").WithOpName("c"), b);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  auto session = Connect(servers[0]->target(), graph);
  ASSERT_NE(session, nullptr);
  RunOptions run;
  run.trace = true;
  RunMetadata metadata;
  ASSERT_OK_AND_ASSIGN(auto out, session->Run(run, {}, {"b", "c"}, {}, &metadata));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(-1, -2));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(1, 4));
  std::vector<std::string> ran_on;
  for (const NodeExecStats& node : metadata.step_stats) {
    if (node.node_name == "b" || node.node_name == "c") ran_on.push_back(node.device);
  }
  EXPECT_THAT(ran_on, ::testing::UnorderedElementsAre("/job:ps/replica:0/task:0/device:CPU:1",
                                                      "/job:worker/replica:0/task:0/device:CPU:1"));
}

TEST(Server, BadDeviceCountsFailToStart) {
  ServerOptions options;
  options.log = QuietLog();
  options.device_count = {{"TPU", 1}};
  EXPECT_THAT(Server::CreateLocalCluster({{"worker", 1}}, options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("TPU")));
}

TEST(Server, LocalClusterHasEveryTaskOnItsOwnPort) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"worker", 2}, {"ps", 1}}, QuietLog()));
  ASSERT_EQ(servers.size(), 3u);
  EXPECT_NE(servers[0]->port(), servers[1]->port());
  EXPECT_NE(servers[1]->port(), servers[2]->port());
  EXPECT_EQ(servers[2]->target(), absl::StrFormat("zmq://127.0.0.1:%d", servers[2]->port()));
  // Any task's master sees the whole cluster.
  ASSERT_OK_AND_ASSIGN(const std::vector<std::string> devices,
                       ListRemoteDevices(servers[1]->target(), absl::Seconds(10)));
  EXPECT_THAT(devices, ElementsAre("/job:ps/replica:0/task:0/device:CPU:0",
                                   "/job:worker/replica:0/task:0/device:CPU:0",
                                   "/job:worker/replica:0/task:1/device:CPU:0"));
}

TEST(Server, LocalClusterRejectsEmptyAndRepeatedJobs) {
  EXPECT_THAT(Server::CreateLocalCluster({{"worker", 0}}, QuietLog()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("job 'worker'")));
  EXPECT_THAT(Server::CreateLocalCluster({{"ps", 1}, {"ps", 2}}, QuietLog()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'ps' is named twice")));
}

TEST(Server, RejectsATaskOutsideItsClusterAndATakenPort) {
  ASSERT_OK_AND_ASSIGN(auto first, Server::CreateLocal(QuietLog()));
  ServerOptions options;
  options.log = QuietLog();
  ASSERT_OK_AND_ASSIGN(
      options.config.cluster,
      ClusterSpec::FromJobs({{"worker", {absl::StrFormat("127.0.0.1:%d", first->port())}}}));
  options.config.task = TaskId{"worker", 1};
  EXPECT_THAT(Server::Create(options), StatusIs(absl::StatusCode::kNotFound, HasSubstr("task 1")));
  options.config.task = TaskId{"worker", 0};
  EXPECT_THAT(Server::Create(options),
              StatusIs(absl::StatusCode::kUnavailable,
                       HasSubstr(absl::StrFormat("127.0.0.1:%d", first->port()))));
}

TEST(Server, MalformedTargetsAreRejected) {
  for (const char* target : {"grpc://127.0.0.1:2222", "zmq://127.0.0.1", "zmq://:5",
                             "zmq://127.0.0.1:0", "zmq://127.0.0.1:x"}) {
    SessionOptions options;
    options.target = target;
    EXPECT_THAT(NewSession(options),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(target)))
        << target;
  }
}

// What a misbehaving client gets from the services, straight over RPC.
// A step that waits for what will never come (its master died mid-step;
// here, a dequeue from an empty queue) ends when its server stops: it is
// cancelled, and frees what it holds.
TEST(Server, StoppingCancelsTheStepsItStillRuns) {
  testing::CapturedLog log;
  ServerOptions options;
  options.log = log.sink();
  ASSERT_OK_AND_ASSIGN(auto servers, Server::CreateLocalCluster({{"localhost", 1}}, options));
  const std::string device = "/job:localhost/replica:0/task:0/device:CPU:0";
  const Scope root = ops::NewRootScope().WithDevice(device);
  const ops::FIFOQueueV2 queue(root.WithOpName("queue"), {DT_FLOAT});
  ops::QueueDequeueV2(root.WithOpName("take"), queue, {DT_FLOAT});
  RegisterGraphRequest request;
  (*request.mutable_partitions())[device] = *root.ToGraphDef();
  request.add_fetches("take:0");
  RpcClientOptions client_options;
  client_options.address = servers[0]->target().substr(6);
  // One connection: a client that moves to ipc mid-way could send the two
  // calls below on different sockets, which the server takes in any order.
  client_options.prefer_ipc = false;
  ASSERT_OK_AND_ASSIGN(auto client, RpcClient::Connect(client_options));
  ASSERT_OK_AND_ASSIGN(RpcMessage reply,
                       client->CallSync("RegisterGraph", {request.SerializeAsString(), {}},
                                        absl::Now() + absl::Seconds(20)));
  RegisterGraphReply registered;
  ASSERT_TRUE(registered.ParseFromString(reply.body));
  RunGraphRequest run;
  run.set_graph_handle(registered.graph_handle());
  run.set_step_id(7);
  absl::Notification run_done;
  client->Call("RunGraph", {run.SerializeAsString(), {}}, absl::InfiniteFuture(),
               [&](absl::Status, RpcMessage) { run_done.Notify(); });
  // Calls on one connection are taken in order, and RunGraph starts its
  // step before the server takes the next: once this is answered, the
  // step waits in the dequeue.
  absl::Notification status_done;
  client->Call("GetStatus", {}, absl::Now() + absl::Seconds(20),
               [&](absl::Status, RpcMessage) { status_done.Notify(); });
  status_done.WaitForNotification();
  EXPECT_FALSE(run_done.HasBeenNotified());
  servers[0].reset();
  EXPECT_THAT(log.Read(), HasSubstr("cancelled 1 steps still running"));
  client.reset();
  EXPECT_TRUE(run_done.HasBeenNotified());
}

class ServerRequests : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_OK_AND_ASSIGN(server_, Server::CreateLocal(QuietLog()));
    RpcClientOptions options;
    options.address = server_->target().substr(6);
    ASSERT_OK_AND_ASSIGN(client_, RpcClient::Connect(options));
  }

  absl::StatusOr<RpcMessage> Call(const std::string& method, RpcMessage request) {
    return client_->CallSync(method, std::move(request), absl::Now() + absl::Seconds(20));
  }

  std::unique_ptr<Server> server_;
  std::unique_ptr<RpcClient> client_;
};

TEST_F(ServerRequests, GarbageBodiesAreInvalidArguments) {
  for (const char* method :
       {"CreateSession", "ExtendSession", "RunStep", "RenewSession", "CloseSession",
        "RegisterGraph", "RunGraph", "DeregisterGraph", "PushTensor", "AbortStep"}) {
    EXPECT_THAT(Call(method, RpcMessage{"\xff\xff\xff garbage", {}}),
                StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(method)))
        << method;
  }
}

TEST_F(ServerRequests, UnknownHandlesAndCountMismatchesNameTheProblem) {
  RunStepRequest run;
  run.set_session_handle("feedface");
  run.add_fetches("x");
  EXPECT_THAT(Call("RunStep", RpcMessage{run.SerializeAsString(), {}}),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("feedface")));
  run.add_feeds("a");
  EXPECT_THAT(Call("RunStep", RpcMessage{run.SerializeAsString(), {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("0 tensors for 1 feeds")));
  RunGraphRequest graph;
  graph.set_graph_handle("nope");
  EXPECT_THAT(Call("RunGraph", RpcMessage{graph.SerializeAsString(), {}}),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("nope")));
  PushTensorRequest push;
  push.set_key("k");
  EXPECT_THAT(Call("PushTensor", RpcMessage{push.SerializeAsString(), {}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("expected 1")));
}

TEST_F(ServerRequests, PartitionsForAnotherTaskAreRefused) {
  RegisterGraphRequest request;
  const std::string elsewhere = "/job:worker/replica:0/task:3/device:CPU:0";
  NodeDef* node = (*request.mutable_partitions())[elsewhere].add_node();
  node->set_name("c");
  node->set_op("NoOp");
  node->set_device(elsewhere);
  EXPECT_THAT(Call("RegisterGraph", RpcMessage{request.SerializeAsString(), {}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("no device"), HasSubstr("task:3"))));
  // A node placed elsewhere inside a partition of this task.
  RegisterGraphRequest misplaced;
  const std::string here = "/job:localhost/replica:0/task:0/device:CPU:0";
  node = (*misplaced.mutable_partitions())[here].add_node();
  node->set_name("c");
  node->set_op("NoOp");
  node->set_device(elsewhere);
  EXPECT_THAT(
      Call("RegisterGraph", RpcMessage{misplaced.SerializeAsString(), {}}),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("'c'"), HasSubstr("task:3"))));
}

TEST_F(ServerRequests, AnInvalidGraphFailsCreateSession) {
  CreateSessionRequest request;
  NodeDef* node = request.mutable_graph()->add_node();
  node->set_name("bad");
  node->set_op("NoSuchOp");
  EXPECT_THAT(Call("CreateSession", RpcMessage{request.SerializeAsString(), {}}),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("NoSuchOp")));
}

}  // namespace
}  // namespace rill
