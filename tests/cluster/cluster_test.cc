// Client sessions on clusters of real `rill server` processes: training
// with the variables on a worker, a matmul split over two tasks, variables
// on a ps task shared by two clients, and errors that cross the network.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::LineXs;
using ::rill::testing::LineYs;
using ::rill::testing::RandomTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::AllOf;
using ::testing::HasSubstr;

// Builds a graph whose nodes ask for the devices `on` names: tasks of the
// cluster, or nothing (the local reference).
using GraphFn = std::function<void(const Scope& root, const std::function<Scope(int)>& on)>;

GraphDef Build(const GraphFn& build, const std::string& job) {
  const Scope root = ops::NewRootScope();
  build(root, [&](int task) {
    return job.empty() ? root : root.WithDevice(absl::StrFormat("/job:%s/task:%d", job, task));
  });
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

std::unique_ptr<Session> Connect(const std::string& target, const GraphDef& graph,
                                 SessionOptions options = {}) {
  options.target = target;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

class ClusterTest : public ::testing::Test {
 protected:
  void StartServers(int ps, int workers) {
    absl::StatusOr<testing::Cluster> cluster = testing::StartCluster(ps, workers);
    ASSERT_OK(cluster);
    cluster_ = *std::move(cluster);
  }

  testing::Cluster cluster_;
};

// The seed's example: y = 2x + 10 learnt with every node on worker 0, the
// client talking to worker 1's master.
TEST_F(ClusterTest, TrainsARegressionOnAWorkerTask) {
  ASSERT_NO_FATAL_FAILURE(StartServers(0, 2));
  const GraphDef graph = Build(
      [](const Scope& root, const std::function<Scope(int)>& on) {
        const Scope worker = on(0);
        const Output x = ops::Placeholder(worker.WithOpName("x"), DT_FLOAT);
        const Output y = ops::Placeholder(worker.WithOpName("y"), DT_FLOAT);
        Variable w(worker, "w", Tensor::FromVector<float>({0.5f}, TensorShape({1})));
        Variable b(worker, "b", Tensor::FromVector<float>({0.0f}, TensorShape({1})));
        const Output prediction = ops::Add(worker, ops::Mul(worker, x, w), b);
        const Output loss = ops::Mean(worker.WithOpName("loss"),
                                      ops::Square(worker, ops::Sub(worker, prediction, y)), 0);
        GradientDescentOptimizer optimizer(0.05);
        ASSERT_OK(optimizer.Minimize(worker, loss, {w, b}, nullptr, "train").status());
        GlobalVariablesInitializer(root);
      },
      "worker");
  auto session = Connect(cluster_.Target("worker", 1), graph);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init"}).status());
  const Tensor x = LineXs();
  const Tensor y = LineYs();
  for (int step = 0; step < 300; ++step) {
    ASSERT_OK(session->Run({{"x", x}, {"y", y}}, {}, {"train"}).status()) << "step " << step;
  }
  ASSERT_OK_AND_ASSIGN(auto out, session->Run({{"x", x}, {"y", y}}, {"w/read", "b/read", "loss"}));
  EXPECT_NEAR(out[0].data<float>()[0], 2, 1e-2);
  EXPECT_NEAR(out[1].data<float>()[0], 10, 1e-1);
  EXPECT_LT(out[2].data<float>()[0], 1e-2);
}

// The seed's in-graph example: the rows of `a` split over two tasks, each
// half multiplied there, the halves joined on the master's task.
void SplitMatMul(const Scope& root, const std::function<Scope(int)>& on) {
  const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  const Output b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
  const ops::Split halves(root.WithOpName("split"),
                          ops::Const(root, Tensor::Scalar<int32_t>(0), DT_INT32), a, 2);
  const Output top = ops::MatMul(on(0).WithOpName("top"), halves.output[0], b);
  const Output bottom = ops::MatMul(on(1).WithOpName("bottom"), halves.output[1], b);
  ops::ConcatV2(root.WithOpName("product"), {top, bottom},
                ops::Const(root, Tensor::Scalar<int32_t>(0), DT_INT32));
}

TEST_F(ClusterTest, MatMulSplitOverTwoTasksEqualsLocal) {
  ASSERT_NO_FATAL_FAILURE(StartServers(0, 2));
  const Tensor a = RandomTensor(TensorShape({64, 48}), 1);
  const Tensor b = RandomTensor(TensorShape({48, 32}), 2);
  ASSERT_OK_AND_ASSIGN(auto local, NewSession(SessionOptions(), Build(SplitMatMul, "")));
  ASSERT_OK_AND_ASSIGN(auto expected, local->Run({{"a", a}, {"b", b}}, {"product"}));
  SessionOptions options;
  options.log_device_placement = true;
  auto remote = Connect(cluster_.Target("worker", 0), Build(SplitMatMul, "worker"), options);
  ASSERT_NE(remote, nullptr);
  ASSERT_OK_AND_ASSIGN(auto got, remote->Run({{"a", a}, {"b", b}}, {"product", "bottom"}));
  EXPECT_EQ(got[0].shape(), TensorShape({64, 32}));
  EXPECT_EQ(Values<float>(got[0]), Values<float>(expected[0]));
  EXPECT_EQ(got[1].shape(), TensorShape({32, 32}));
  const std::string master_log = cluster_.Task("worker", 0).Log();
  EXPECT_THAT(master_log,
              AllOf(HasSubstr("top: (MatMul): /job:worker/replica:0/task:0/device:CPU:0"),
                    HasSubstr("bottom: (MatMul): /job:worker/replica:0/task:1/device:CPU:0"),
                    HasSubstr("product: (ConcatV2): /job:worker/replica:0/task:0/device:CPU:0")));
}

// Two clients, each through its own master, build the same graph: `v` on
// the ps task is one variable, shared by name.
void Counter(const Scope& root, const std::function<Scope(int)>& on) {
  Variable v(on(0), "v", Tensor::Scalar<float>(0));
  ops::AssignAdd(on(0).WithOpName("increment"), v.ref(),
                 ops::Const(root, Tensor::Scalar<float>(1), DT_FLOAT));
  GlobalVariablesInitializer(root);
}

TEST_F(ClusterTest, TwoClientsShareAVariableOnThePsTask) {
  ASSERT_NO_FATAL_FAILURE(StartServers(1, 1));
  const GraphDef graph = Build(Counter, "ps");
  auto first = Connect(cluster_.Target("ps", 0), graph);
  auto second = Connect(cluster_.Target("worker", 0), graph);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_OK(first->Run({}, {}, {"init"}).status());
  for (int i = 0; i < 5; ++i) {
    ASSERT_OK(first->Run({}, {}, {"increment"}).status());
    ASSERT_OK(second->Run({}, {}, {"increment"}).status());
  }
  ASSERT_OK(second->Run({}, {}, {"increment"}).status());
  ASSERT_OK_AND_ASSIGN(auto seen_by_first, first->Run({}, {"v/read"}));
  ASSERT_OK_AND_ASSIGN(auto seen_by_second, second->Run({}, {"v/read"}));
  EXPECT_EQ(seen_by_first[0].data<float>()[0], 11);
  EXPECT_EQ(seen_by_second[0].data<float>()[0], 11);
}

// A kernel error on worker 1 reaches the client (through worker 0's
// master) with its code and the node's name.
TEST_F(ClusterTest, KernelErrorOnAnotherTaskNamesTheNode) {
  ASSERT_NO_FATAL_FAILURE(StartServers(0, 2));
  const GraphDef graph = Build(
      [](const Scope& root, const std::function<Scope(int)>& on) {
        const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
        const Output b = ops::Placeholder(root.WithOpName("b"), DT_FLOAT);
        const Output product = ops::MatMul(on(1).WithOpName("remote_matmul"), a, b);
        ops::Neg(on(0).WithOpName("result"), product);
      },
      "worker");
  auto session = Connect(cluster_.Target("worker", 0), graph);
  ASSERT_NE(session, nullptr);
  const Tensor wide = RandomTensor(TensorShape({2, 3}), 1);
  const Tensor square = RandomTensor(TensorShape({3, 3}), 2);
  EXPECT_THAT(session->Run({{"a", wide}, {"b", wide}}, {"result"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("remote_matmul")));
  ASSERT_OK_AND_ASSIGN(auto out, session->Run({{"a", wide}, {"b", square}}, {"result"}));
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3}));
}

// As in TensorFlow, soft placement picks another device of the task asked
// for, never another task: a task the cluster lacks fails either way.
TEST_F(ClusterTest, MissingTaskFailsEvenWithSoftPlacement) {
  ASSERT_NO_FATAL_FAILURE(StartServers(0, 2));
  const GraphDef graph = Build(
      [](const Scope& root, const std::function<Scope(int)>& on) {
        const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
        ops::Square(on(7).WithOpName("far_away"), a);
      },
      "worker");
  const Tensor a = Tensor::FromVector<float>({3}, TensorShape({1}));
  for (const bool soft : {false, true}) {
    SessionOptions options;
    options.allow_soft_placement = soft;
    auto session = Connect(cluster_.Target("worker", 0), graph, options);
    ASSERT_NE(session, nullptr);
    EXPECT_THAT(session->Run({{"a", a}}, {"far_away"}),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("far_away"), HasSubstr("/job:worker/task:7"))))
        << "soft placement " << soft;
  }
}

TEST_F(ClusterTest, MissingDeviceOfATaskNeedsSoftPlacement) {
  ASSERT_NO_FATAL_FAILURE(StartServers(0, 2));
  const Scope root = ops::NewRootScope();
  const Output a = ops::Placeholder(root.WithOpName("a"), DT_FLOAT);
  ops::Square(root.WithOpName("elsewhere").WithDevice("/job:worker/task:1/device:CPU:5"), a);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  const Tensor a_value = Tensor::FromVector<float>({3}, TensorShape({1}));
  auto strict = Connect(cluster_.Target("worker", 0), graph);
  ASSERT_NE(strict, nullptr);
  EXPECT_THAT(strict->Run({{"a", a_value}}, {"elsewhere"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("elsewhere"), HasSubstr("CPU:5"))));
  SessionOptions soft;
  soft.allow_soft_placement = true;
  soft.log_device_placement = true;
  auto fallback = Connect(cluster_.Target("worker", 0), graph, soft);
  ASSERT_NE(fallback, nullptr);
  ASSERT_OK_AND_ASSIGN(auto out, fallback->Run({{"a", a_value}}, {"elsewhere"}));
  EXPECT_EQ(out[0].data<float>()[0], 9);
  EXPECT_THAT(cluster_.Task("worker", 0).Log(),
              HasSubstr("elsewhere: (Square): /job:worker/replica:0/task:1/device:CPU:0"));
}

}  // namespace
}  // namespace rill
