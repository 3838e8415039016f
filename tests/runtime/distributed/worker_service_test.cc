// WorkerService and a peer that goes away: a task whose connection (the one
// it pushed tensors on) closes is reached by a new client from then on, so
// that once it is started again this task finds its new ipc endpoint and
// shared memory instead of sending it every tensor by tcp.
#include "runtime/distributed/worker_service.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/channel_cache.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr char kPs[] = "/job:ps/replica:0/task:0";
constexpr char kChief[] = "/job:worker/replica:0/task:0";
constexpr char kWorker1[] = "/job:worker/replica:0/task:1";

ClusterSpec PsAndTwoWorkers() {
  // Nobody listens there: clients connect lazily, and these send nothing.
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::FromJobs(
      {{"ps", {"127.0.0.1:2222"}}, {"worker", {"127.0.0.1:2223", "127.0.0.1:2224"}}});
  EXPECT_OK(cluster);
  return cluster.ok() ? *cluster : ClusterSpec();
}

// The ps of PsAndTwoWorkers, its services called as its server would.
class PsService : public ::testing::Test {
 protected:
  void SetUp() override {
    WorkerOptions options;
    options.task = kPs;
    options.log = log_.sink();
    ASSERT_OK_AND_ASSIGN(worker_, Worker::Create(options));
    service_ = std::make_unique<WorkerService>(worker_.get(), &channels_, log_.sink());
    for (RpcMethod& method : service_->Methods()) {
      if (method.name == "PushTensor") push_ = std::move(method.handler);
    }
    ASSERT_NE(push_, nullptr);
  }

  // `from`'s tensor for this ps, pushed on `connection`.
  absl::Status Push(uint64_t connection, const std::string& from, uint64_t step_id) {
    PushTensorRequest request;
    request.set_step_id(step_id);
    request.set_key(absl::StrFormat("%s/device:CPU:0;0000000000000001;%s/device:CPU:0;w;0:0", from,
                                    kPs));
    return PushRaw(connection, request);
  }

  absl::Status PushRaw(uint64_t connection, const PushTensorRequest& request) {
    absl::Status status = absl::InternalError("no answer");
    RpcMessage message{request.SerializeAsString(), {Tensor::FromVector<float>({1.f}, TensorShape({1}))}};
    message.connection = connection;
    push_(std::move(message), [&status](absl::Status done, RpcMessage) { status = done; });
    return status;
  }

  testing::CapturedLog log_;
  ChannelCache channels_{PsAndTwoWorkers()};
  std::unique_ptr<Worker> worker_;
  std::unique_ptr<WorkerService> service_;
  RpcHandler push_;
};

TEST_F(PsService, ATaskWhoseConnectionClosedIsReachedByANewClient) {
  ASSERT_OK_AND_ASSIGN(RpcClient* const chief, channels_.Get(kChief));
  ASSERT_OK_AND_ASSIGN(RpcClient* const worker1, channels_.Get(kWorker1));
  ASSERT_OK(Push(7, kChief, 1));
  ASSERT_OK(Push(7, kChief, 2));
  ASSERT_OK(Push(9, kWorker1, 3));
  // A connection that pushed nothing changes nothing.
  EXPECT_EQ(service_->ConnectionClosed(8), 0);
  EXPECT_EQ(channels_.reconnects(), 0);
  EXPECT_EQ(*channels_.Get(kChief), chief);

  // The chief was killed: its connection closed, and the ps's pushes to it
  // (and to its successor at the same address) go over a new client. The
  // old one lives on for whatever still holds it.
  EXPECT_EQ(service_->ConnectionClosed(7), 0);
  EXPECT_EQ(channels_.reconnects(), 1);
  ASSERT_OK_AND_ASSIGN(RpcClient* const chief_again, channels_.Get(kChief));
  EXPECT_NE(chief_again, chief);
  EXPECT_EQ(chief->address(), chief_again->address());
  EXPECT_EQ(*channels_.Get(kWorker1), worker1);
  EXPECT_THAT(log_.Read(),
              HasSubstr(absl::StrFormat("the connection %s pushed tensors on closed", kChief)));

  // Once: the connection is forgotten with its close.
  EXPECT_EQ(service_->ConnectionClosed(7), 0);
  EXPECT_EQ(channels_.reconnects(), 1);
  EXPECT_EQ(*channels_.Get(kChief), chief_again);
}

TEST_F(PsService, PushesThatNameNoOtherTaskAreNotRemembered) {
  ASSERT_OK_AND_ASSIGN(RpcClient* const chief, channels_.Get(kChief));
  // Not from a connection, from this task itself, a malformed key, a task
  // that this ps never called: none makes a new client.
  ASSERT_OK(Push(0, kChief, 1));
  ASSERT_OK(Push(11, kPs, 2));
  PushTensorRequest garbage;
  garbage.set_step_id(3);
  garbage.set_key("not a key");
  (void)PushRaw(12, garbage);  // Refused or not, it names no task.
  ASSERT_OK(Push(13, kWorker1, 4));
  for (uint64_t connection : {0, 11, 12, 13}) service_->ConnectionClosed(connection);
  EXPECT_EQ(channels_.reconnects(), 0);
  EXPECT_EQ(*channels_.Get(kChief), chief);
  EXPECT_THAT(log_.Read(), Not(HasSubstr("pushed tensors on closed")));
}

TEST(ChannelCache, ReconnectRetiresAtMostItsBoundOfClients) {
  ChannelCache channels(PsAndTwoWorkers());
  EXPECT_FALSE(channels.Reconnect(kChief));  // No client yet.
  for (int i = 0; i < ChannelCache::kMaxRetired; ++i) {
    ASSERT_OK(channels.Get(kChief).status());
    ASSERT_TRUE(channels.Reconnect(kChief)) << i;
  }
  ASSERT_OK_AND_ASSIGN(RpcClient* const last, channels.Get(kChief));
  EXPECT_FALSE(channels.Reconnect(kChief));
  EXPECT_EQ(*channels.Get(kChief), last);
  EXPECT_EQ(channels.reconnects(), ChannelCache::kMaxRetired);
}

// The regression: x on the worker, w on the ps, trained from the worker's
// master (the ps pushes w to the worker, the worker its gradient to the ps).
GraphDef Regression() {
  const Scope root = ops::NewRootScope();
  const Scope on_worker = root.WithDevice(kChief);
  const Output x = ops::Placeholder(on_worker.WithOpName("x"), DT_FLOAT);
  const Variable w(root.WithDevice(kPs), "w", Tensor::FromVector<float>({0.5f}, TensorShape({1})));
  const Output loss =
      ops::Mean(on_worker, ops::Square(on_worker, ops::Sub(on_worker, ops::Mul(on_worker, x, w),
                                                           ops::Mul(on_worker, x, x))),
                0);
  GradientDescentOptimizer optimizer(0.01);
  EXPECT_OK(optimizer.Minimize(on_worker, loss, {w}, nullptr, "train").status());
  GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  EXPECT_OK(graph);
  return graph.ok() ? *graph : GraphDef();
}

void Train(const std::string& target, int steps) {
  SessionOptions options;
  options.target = target;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, Regression()));
  ASSERT_OK(session->Run({}, {}, {"init"}).status());
  const Tensor x = testing::LineXs();
  for (int step = 0; step < steps; ++step) {
    ASSERT_OK(session->Run({{"x", x}}, {}, {"train"}).status());
  }
}

// Real servers: the chief's goes away (as a killed process's would) and
// comes back at its address; the ps retires its client of the chief when
// the chief's connection closes, and trains with the new chief.
TEST(Server, APsReachesARestartedChiefOverANewConnection) {
  testing::CapturedLog log;
  ServerOptions options;
  options.log = log.sink();
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"ps", 1}, {"worker", 1}}, options));
  ASSERT_OK_AND_ASSIGN(
      options.config.cluster,
      ClusterSpec::FromJobs({{"ps", {servers[0]->target().substr(6)}},
                             {"worker", {servers[1]->target().substr(6)}}}));
  options.config.task = {"worker", 0};
  Train(servers[1]->target(), 5);
  servers[1].reset();
  // The ps hears of the close on a handler thread of its own.
  const absl::Time give_up = absl::Now() + absl::Seconds(30);
  while (log.Read().find("pushed tensors on closed") == std::string::npos &&
         absl::Now() < give_up) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  EXPECT_THAT(log.Read(),
              HasSubstr(absl::StrFormat("%s: the connection %s pushed tensors on closed", kPs,
                                        kChief)));
  ASSERT_OK_AND_ASSIGN(servers[1], Server::Create(options));
  Train(servers[1]->target(), 5);
}

}  // namespace
}  // namespace rill
