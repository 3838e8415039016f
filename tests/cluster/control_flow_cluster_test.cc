// Loops and conds split across tasks of real `rill server` processes (1 ps
// + 1 worker): each graph gives, in one Session::Run, the numbers it gives
// in one local process, dead branches crossing the wire as dead values.
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/cond.h"
#include "graph/while_loop.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/session.h"
#include "tests/cluster/server_process.h"
#include "tests/placement/control_flow_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::RandomTensor;
using ::rill::testing::Values;
using ::testing::Contains;

constexpr char kPs[] = "/job:ps/task:0";
constexpr char kWorker[] = "/job:worker/task:0";

// The placement tests' graphs name /cpu:0 and /cpu:1 of one process; here
// cpu:0 (the loops' state, the cond's predicate) becomes the ps task and
// cpu:1 (the bodies, one branch) the worker task. Without `split`, no node
// asks for a device: the local reference.
GraphDef OnTasks(const std::vector<NodeDef>& nodes, bool split) {
  GraphDef def;
  for (const NodeDef& node : nodes) {
    NodeDef* added = def.add_node();
    *added = node;
    if (!split) {
      added->clear_device();
    } else {
      added->set_device(node.device() == control_flow_graphs::kCpu0 ? kPs : kWorker);
    }
  }
  return def;
}

// Builds a graph with ops; `ps` and `worker` are the scopes whose nodes go
// to those tasks, or the root scope itself for the local reference.
using GraphFn = std::function<void(const Scope& root, const Scope& ps, const Scope& worker)>;

GraphDef Build(const GraphFn& build, bool split) {
  const Scope root = ops::NewRootScope();
  build(root, split ? root.WithDevice(kPs) : root, split ? root.WithDevice(kWorker) : root);
  absl::StatusOr<GraphDef> def = root.ToGraphDef();
  EXPECT_OK(def);
  return def.ok() ? *def : GraphDef();
}

class ControlFlowClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    absl::StatusOr<testing::Cluster> cluster = testing::StartCluster(1, 1);
    ASSERT_OK(cluster);
    cluster_ = *std::move(cluster);
  }

  // A session on the worker's master; `init` run first when not empty.
  std::unique_ptr<Session> Connect(const GraphDef& graph, const std::string& init = "") {
    SessionOptions options;
    options.target = cluster_.Target("worker", 0);
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
    EXPECT_OK(session);
    if (!session.ok()) return nullptr;
    if (!init.empty()) {
      absl::Status status = (*session)->Run({}, {}, {init}).status();
      EXPECT_OK(status);
      if (!status.ok()) return nullptr;
    }
    return *std::move(session);
  }

  // Runs `fetches` on the cluster in one Session::Run, and the same graph
  // without devices locally; expects equal bytes, tensors received across
  // the tasks, and the node whose name ends in `worker_node` run
  // `worker_runs` times on the worker (once per iteration in a loop's body;
  // never when its branch is dead).
  void ExpectSameAsLocal(const std::function<GraphDef(bool split)>& graph,
                         const std::vector<std::pair<std::string, Tensor>>& feeds,
                         const std::vector<std::string>& fetches, const std::string& worker_node,
                         int worker_runs, const std::string& init = "") {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> local,
                         NewSession(SessionOptions(), graph(/*split=*/false)));
    if (!init.empty()) {
      ASSERT_OK(local->Run({}, {}, {init}).status());
    }
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> expected, local->Run(feeds, fetches));

    std::unique_ptr<Session> remote = Connect(graph(/*split=*/true), init);
    ASSERT_NE(remote, nullptr);
    RunOptions options;
    options.trace = true;
    RunMetadata metadata;
    absl::StatusOr<std::vector<Tensor>> got = remote->Run(options, feeds, fetches, {}, &metadata);
    ASSERT_OK(got) << "worker log:\n"
                   << cluster_.Task("worker", 0).Log() << "\nps log:\n"
                   << cluster_.Task("ps", 0).Log();
    ASSERT_EQ(got->size(), expected.size());
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ((*got)[i].dtype(), expected[i].dtype()) << fetches[i];
      EXPECT_EQ((*got)[i].shape(), expected[i].shape()) << fetches[i];
      EXPECT_EQ(Bytes((*got)[i]), Bytes(expected[i])) << fetches[i];
    }
    std::set<std::string> tasks;
    int cross_task_recvs = 0;
    int runs_on_worker = 0;
    for (const NodeExecStats& node : metadata.step_stats) {
      const std::string task = TaskOf(node.device);
      tasks.insert(task);
      if (node.op == "_Recv" && TaskOf(node.peer_device) != task) ++cross_task_recvs;
      if (node.node_name.ends_with(worker_node) && task == "worker") ++runs_on_worker;
    }
    EXPECT_THAT(tasks, Contains("ps"));
    EXPECT_THAT(tasks, Contains("worker"));
    EXPECT_GT(cross_task_recvs, 0);
    EXPECT_EQ(runs_on_worker, worker_runs) << worker_node;

    // A second Run reuses the registered partitions and their frames.
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> again, remote->Run(feeds, fetches));
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(Bytes(again[i]), Bytes(expected[i])) << fetches[i];
    }
  }

  static std::string TaskOf(const std::string& device) {
    if (device.find("/job:ps/") != std::string::npos) return "ps";
    if (device.find("/job:worker/") != std::string::npos) return "worker";
    return device;
  }

  static std::string Bytes(const Tensor& t) {
    return std::string(static_cast<const char*>(t.raw_data()), t.TotalBytes());
  }

  testing::Cluster cluster_;
};

// i = 3; while i < 10: i += 2, the loop's state on the ps, the Add on the
// worker.
TEST_F(ControlFlowClusterTest, CountingLoopWithItsBodyOnTheWorker) {
  ExpectSameAsLocal([](bool split) { return OnTasks(control_flow_graphs::SplitLoop(), split); }, {},
                    {"out"}, "while/add", 4);
}

// x = x·w five times: x, the counter and the Variable w on the ps, the
// MatMul on the worker (w crosses as a loop invariant every iteration).
void MatMulLoop(const Scope& root, const Scope& ps, const Scope& worker) {
  const Output x0 = ops::Placeholder(ps.WithOpName("x"), DT_FLOAT);
  const Variable w(ps, "w",
                   Tensor::FromVector<float>({0.5f, -0.25f, 0.75f, 1.f}, TensorShape({2, 2})));
  const Output start = ops::Const(ps.WithOpName("start"), Tensor::Scalar<int32_t>(0), DT_INT32);
  const Output limit = ops::Const(ps.WithOpName("limit"), Tensor::Scalar<int32_t>(5), DT_INT32);
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      ps, {start, x0},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], limit);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], ops::Const(s, Tensor::Scalar<int32_t>(1), DT_INT32)));
        out->push_back(ops::MatMul(s.WithDevice(worker.device()).WithOpName("xw"), in[1], w));
        return s.status();
      },
      &outputs, {.frame_name = "matmul_loop"}));
  ops::Identity(ps.WithOpName("count"), outputs[0]);
  ops::Identity(ps.WithOpName("product"), outputs[1]);
  GlobalVariablesInitializer(root);
}

TEST_F(ControlFlowClusterTest, MatMulLoopWithStateAndVariableOnThePs) {
  const Tensor x = RandomTensor(TensorShape({3, 2}), 7);
  ExpectSameAsLocal([](bool split) { return Build(MatMulLoop, split); }, {{"x", x}},
                    {"count", "product"}, "/xw", 5, "init");
}

// x < y ? x * 2 : -x, the true branch on the worker: taken, then dead.
TEST_F(ControlFlowClusterTest, CondWithTheTakenBranchOnTheWorker) {
  ExpectSameAsLocal([](bool split) { return OnTasks(control_flow_graphs::SplitCond(5, 7), split); },
                    {}, {"merge"}, "double", 1);
}

TEST_F(ControlFlowClusterTest, CondWhoseBranchOnTheWorkerIsDead) {
  ExpectSameAsLocal([](bool split) { return OnTasks(control_flow_graphs::SplitCond(9, 7), split); },
                    {}, {"merge"}, "double", 0);
}

// pred ? x·w (on the worker) : x + 1 (on the ps), the predicate fed, so
// one session runs both ways; the result read on the worker, so the ps
// branch's value (live or dead) crosses too.
void FedCond(const Scope& root, const Scope& ps, const Scope& worker) {
  const Output pred = ops::Placeholder(ps.WithOpName("pred"), DT_BOOL);
  const Output x = ops::Placeholder(ps.WithOpName("x"), DT_FLOAT);
  const Variable w(ps, "w", Tensor::FromVector<float>({2.f, 0.f, 1.f, -1.f}, TensorShape({2, 2})));
  absl::StatusOr<std::vector<Output>> merged = ops::Cond(
      ps, pred,
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::MatMul(s.WithDevice(worker.device()).WithOpName("xw"), x, w));
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Add(s, x, ops::Const(s, 1.f)));
        return s.status();
      });
  ASSERT_OK(merged);
  ops::Identity(worker.WithOpName("result"), (*merged)[0]);
  GlobalVariablesInitializer(root);
}

TEST_F(ControlFlowClusterTest, CondWithBranchesOnTwoTasksBothWays) {
  const Tensor x = RandomTensor(TensorShape({3, 2}), 11);
  for (const bool pred : {true, false}) {
    SCOPED_TRACE(pred ? "pred true" : "pred false");
    ExpectSameAsLocal([](bool split) { return Build(FedCond, split); },
                      {{"pred", Tensor::Scalar<bool>(pred)}, {"x", x}}, {"result"}, "/xw",
                      pred ? 1 : 0, "init");
  }
}

// An outer loop over i < 3 holding an inner loop over j < 4 whose body
// (acc += j + i) runs on the worker, the rest on the ps: 30.
TEST_F(ControlFlowClusterTest, NestedLoopSplitOverTwoTasks) {
  ExpectSameAsLocal([](bool split) { return OnTasks(control_flow_graphs::NestedLoop(), split); },
                    {}, {"result"}, "inner/add_i", 12);
}

}  // namespace
}  // namespace rill
