// A cluster whose tasks share CURVE keys: it trains across its tasks for
// sessions that hold the keys, and refuses everyone else.
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/remote_session.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"
#include "transport/curve.h"

namespace rill {
namespace {

using ::rill::testing::QuietLog;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::HasSubstr;

class CurveCluster : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!CurveAvailable()) GTEST_SKIP() << "this libzmq was built without CURVE";
    dir_ = std::filesystem::path(::testing::TempDir()) /
           ("curve_cluster_" + std::to_string(getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    ASSERT_OK(WriteCurveKeys(Dir("cluster"), "").status());
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::string Dir(const std::string& name) const { return (dir_ / name).string(); }

  // 1 ps + 1 worker started as `rill server --curve_keys` starts them.
  std::vector<std::unique_ptr<Server>> StartCluster() {
    ServerOptions options;
    options.log = QuietLog();
    options.config.curve_keys = Dir("cluster");
    absl::StatusOr<std::vector<std::unique_ptr<Server>>> servers =
        Server::CreateLocalCluster({{"ps", 1}, {"worker", 1}}, options);
    EXPECT_OK(servers);
    return servers.ok() ? *std::move(servers) : std::vector<std::unique_ptr<Server>>();
  }

  std::filesystem::path dir_;
};

// w on the ps, one gradient step of (w * x - 2)^2 on the worker.
GraphDef TrainingGraph() {
  const Scope root = ops::NewRootScope();
  const Scope worker = root.WithDevice("/job:worker/task:0");
  const Variable w(root.WithDevice("/job:ps/task:0"), "w",
                   Tensor::FromVector<float>({0.5f}, TensorShape({1})));
  const Output x = ops::Placeholder(worker.WithOpName("x"), DT_FLOAT);
  const Output loss =
      ops::Mean(worker, ops::Square(worker, ops::Sub(worker, ops::Mul(worker, x, w), 2.f)), 0);
  GradientDescentOptimizer optimizer(0.1);
  EXPECT_OK(optimizer.Minimize(worker, loss, {w}, nullptr, "train").status());
  GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  EXPECT_OK(graph);
  return graph.ok() ? *graph : GraphDef();
}

TEST_F(CurveCluster, SessionsWithTheKeysTrainAcrossTheTasks) {
  std::vector<std::unique_ptr<Server>> servers = StartCluster();
  ASSERT_EQ(servers.size(), 2u);
  ASSERT_NE(servers[1]->curve(), nullptr);
  SessionOptions options;
  options.target = servers[1]->target();
  options.curve = servers[1]->curve();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, TrainingGraph()));
  ASSERT_OK(session->Run({}, {}, {"init"}).status());
  const Tensor x = Tensor::FromVector<float>({1.f}, TensorShape({1}));
  ASSERT_OK(session->Run({{"x", x}}, {}, {"train"}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> w, session->Run({}, {"w"}));
  // w - 0.1 * 2 * (w - 2) from 0.5.
  EXPECT_FLOAT_EQ(Values<float>(w[0])[0], 0.8f);
}

TEST_F(CurveCluster, AClientOfTheClusterGetsInAndStrangersDoNot) {
  ASSERT_OK(WriteCurveKeys(Dir("client"), Dir("cluster")).status());
  ASSERT_OK(WriteCurveKeys(Dir("stranger"), "").status());
  std::vector<std::unique_ptr<Server>> servers = StartCluster();
  ASSERT_EQ(servers.size(), 2u);
  const std::string& target = servers[0]->target();
  ASSERT_OK_AND_ASSIGN(const CurveKeys client, LoadCurveKeys(Dir("client")));
  EXPECT_OK(ListRemoteDevices(target, absl::Seconds(20), std::make_shared<const CurveKeys>(client))
                .status());
  EXPECT_FALSE(ListRemoteDevices(target, absl::Seconds(1)).ok());
  ASSERT_OK_AND_ASSIGN(const CurveKeys stranger, LoadCurveKeys(Dir("stranger")));
  EXPECT_FALSE(
      ListRemoteDevices(target, absl::Seconds(1), std::make_shared<const CurveKeys>(stranger))
          .ok());
  // The tasks still talk to each other and to their clients.
  EXPECT_OK(ListRemoteDevices(target, absl::Seconds(20), servers[0]->curve()).status());
}

TEST_F(CurveCluster, AServerWithABadKeyDirectorySaysWhichFile) {
  ServerOptions options;
  options.log = QuietLog();
  options.config.curve_keys = Dir("nowhere");
  EXPECT_THAT(Server::CreateLocalCluster({{"worker", 1}}, options).status(),
              StatusIs(absl::StatusCode::kNotFound, HasSubstr("nowhere/public.key")));
}

}  // namespace
}  // namespace rill
