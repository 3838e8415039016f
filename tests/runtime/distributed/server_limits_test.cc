// What a server's limits do to peers that never close, never run and
// never stop: sessions and registered graphs expire (renewed ones stay),
// sessions, graphs and pushes for steps not begun are capped, and the
// server keeps serving.
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "tests/test_util.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/rpc.h"

namespace rill {
namespace {

using ::rill::testing::CapturedLog;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ContainsRegex;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ServerLimitsTest : public ::testing::Test {
 protected:
  void Start(const ServerLimits& limits) {
    ServerOptions options;
    options.log = log_.sink();
    options.limits = limits;
    server_limits_ = limits;
    ASSERT_OK_AND_ASSIGN(auto servers, Server::CreateLocalCluster({{"localhost", 1}}, options));
    server_ = std::move(servers[0]);
    RpcClientOptions client;
    client.address = server_->target().substr(6);
    ASSERT_OK_AND_ASSIGN(client_, RpcClient::Connect(client));
  }

  absl::StatusOr<RpcMessage> Call(const std::string& method, RpcMessage request) {
    return client_->CallSync(method, std::move(request), absl::Now() + absl::Seconds(20));
  }

  static GraphDef Doubling() {
    const Scope root = ops::NewRootScope();
    const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
    ops::Add(root.WithOpName("twice"), x, x);
    return *root.ToGraphDef();
  }

  // A session the way a client that never renews it opens one.
  std::string CreateRawSession() {
    CreateSessionRequest request;
    *request.mutable_graph() = Doubling();
    absl::StatusOr<RpcMessage> reply = Call("CreateSession", {request.SerializeAsString(), {}});
    EXPECT_OK(reply);
    CreateSessionReply created;
    if (reply.ok()) {
      EXPECT_TRUE(created.ParseFromString(reply->body));
    }
    return created.session_handle();
  }

  absl::Status RunRaw(const std::string& handle) {
    RunStepRequest request;
    request.set_session_handle(handle);
    request.add_feeds("x");
    request.add_fetches("twice");
    return Call("RunStep", {request.SerializeAsString(), {Tensor::Scalar<float>(2)}}).status();
  }

  absl::Status Push(uint64_t step_id) {
    PushTensorRequest request;
    request.set_step_id(step_id);
    request.set_key(
        "/job:localhost/replica:0/task:0/device:CPU:0;1;/job:localhost/replica:0/task:0/"
        "device:CPU:0;edge");
    return Call("PushTensor", {request.SerializeAsString(), {Tensor(DT_FLOAT, TensorShape({256}))}})
        .status();
  }

  // A graph registered the way a peer that never runs it registers one.
  absl::StatusOr<std::string> RegisterRaw() {
    RegisterGraphRequest request;
    const std::string here = "/job:localhost/replica:0/task:0/device:CPU:0";
    NodeDef* node = (*request.mutable_partitions())[here].add_node();
    node->set_name("nothing");
    node->set_op("NoOp");
    node->set_device(here);
    ASSIGN_OR_RETURN(RpcMessage reply, Call("RegisterGraph", {request.SerializeAsString(), {}}));
    RegisterGraphReply registered;
    if (!registered.ParseFromString(reply.body)) return absl::InternalError("bad reply");
    EXPECT_EQ(registered.idle_timeout_ms(),
              absl::ToInt64Milliseconds(server_limits_.graphs.idle_timeout));
    return registered.graph_handle();
  }

  absl::Status RunRawGraph(const std::string& handle) {
    RunGraphRequest request;
    request.set_graph_handle(handle);
    request.set_step_id(++raw_step_);
    return Call("RunGraph", {request.SerializeAsString(), {}}).status();
  }

  std::unique_ptr<Session> Connect() {
    SessionOptions options;
    options.target = server_->target();
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, Doubling());
    EXPECT_OK(session);
    return session.ok() ? *std::move(session) : nullptr;
  }

  CapturedLog log_;
  ServerLimits server_limits_;
  uint64_t raw_step_ = 1000;
  std::unique_ptr<Server> server_;
  std::unique_ptr<RpcClient> client_;
};

TEST_F(ServerLimitsTest, AnUnusedSessionExpiresWhileARenewedOneStays) {
  ServerLimits limits;
  limits.session_idle_timeout = absl::Seconds(1);
  Start(limits);
  const std::string forgotten = CreateRawSession();
  auto renewed = Connect();
  ASSERT_NE(renewed, nullptr);
  ASSERT_OK(RunRaw(forgotten));

  absl::SleepFor(absl::Seconds(3));
  EXPECT_THAT(RunRaw(forgotten), StatusIs(absl::StatusCode::kFailedPrecondition,
                                          HasSubstr("expired after 1s without use")));
  EXPECT_THAT(log_.Read(), HasSubstr("Closed master session " + forgotten + ": unused for 1s"));
  ASSERT_OK_AND_ASSIGN(auto out, renewed->Run({{"x", Tensor::Scalar<float>(4)}}, {"twice"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(8));
}

TEST_F(ServerLimitsTest, SessionsBeyondTheCapAreRefusedUntilOneCloses) {
  ServerLimits limits;
  limits.max_sessions = 2;
  Start(limits);
  auto first = Connect();
  auto second = Connect();
  ASSERT_NE(second, nullptr);
  SessionOptions options;
  options.target = server_->target();
  EXPECT_THAT(NewSession(options, Doubling()),
              StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("holds 2 sessions")));
  EXPECT_THAT(log_.Read(), HasSubstr("refuses a session: 2 are open, the limit"));
  ASSERT_OK(first->Close());
  auto third = Connect();
  ASSERT_NE(third, nullptr);
  EXPECT_OK(third->Run({{"x", Tensor::Scalar<float>(1)}}, {"twice"}).status());
}

TEST_F(ServerLimitsTest, PushesForStepsThatNeverRunAreCappedAndExpire) {
  ServerLimits limits;
  limits.pending_pushes.deadline = absl::Milliseconds(500);
  limits.pending_pushes.max_steps = 3;
  Start(limits);
  for (uint64_t step = 1; step <= 3; ++step) ASSERT_OK(Push(step));
  EXPECT_THAT(Push(4), StatusIs(absl::StatusCode::kResourceExhausted,
                                HasSubstr("3 steps that have not begun hold")));
  // Once the deadline drops them, pushes are taken again.
  absl::Status pushed = Push(5);
  for (int i = 0; i < 100 && !pushed.ok(); ++i) {
    absl::SleepFor(absl::Milliseconds(100));
    pushed = Push(5);
  }
  EXPECT_OK(pushed);
  EXPECT_THAT(log_.Read(), HasSubstr("steps that did not begin within 500ms"));
  auto session = Connect();
  ASSERT_NE(session, nullptr);
  EXPECT_OK(session->Run({{"x", Tensor::Scalar<float>(1)}}, {"twice"}).status());
}

// A peer that registers graphs and never runs them, or a master that
// died, leaves nothing behind; a session that idles past the timeout
// registers its plan again and runs on.
TEST_F(ServerLimitsTest, GraphsNoStepRunsAreForgottenWhileALiveSessionRunsOn) {
  ServerLimits limits;
  limits.graphs.idle_timeout = absl::Seconds(1);
  Start(limits);
  ASSERT_OK_AND_ASSIGN(const std::string forgotten, RegisterRaw());
  ASSERT_OK(RunRawGraph(forgotten));
  auto session = Connect();
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({{"x", Tensor::Scalar<float>(1)}}, {"twice"}).status());

  absl::SleepFor(absl::Seconds(3));
  EXPECT_THAT(RunRawGraph(forgotten),
              StatusIs(absl::StatusCode::kAborted, HasSubstr("no graph '" + forgotten)));
  EXPECT_THAT(log_.Read(),
              ContainsRegex("forgot [0-9]+ registered graphs that no step ran for 1s"));
  ASSERT_OK_AND_ASSIGN(auto out, session->Run({{"x", Tensor::Scalar<float>(4)}}, {"twice"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(8));
}

TEST_F(ServerLimitsTest, RegistrationsBeyondTheCapAreRefusedUntilOneGoes) {
  ServerLimits limits;
  limits.graphs.max_graphs = 2;
  Start(limits);
  ASSERT_OK_AND_ASSIGN(const std::string first, RegisterRaw());
  ASSERT_OK(RegisterRaw().status());
  EXPECT_THAT(RegisterRaw(), StatusIs(absl::StatusCode::kResourceExhausted,
                                      HasSubstr("holds 2 registered graphs")));
  EXPECT_THAT(log_.Read(), HasSubstr("refusing registrations"));
  DeregisterGraphRequest deregister;
  deregister.add_graph_handles(first);
  ASSERT_OK(Call("DeregisterGraph", {deregister.SerializeAsString(), {}}).status());
  ASSERT_OK(RegisterRaw().status());
  EXPECT_THAT(log_.Read(), HasSubstr("room for graphs again (1 registrations refused)"));
}

}  // namespace
}  // namespace rill
