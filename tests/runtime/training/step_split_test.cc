#include "runtime/training/step_split.h"

#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

constexpr char kWorker[] = "/job:worker/replica:0/task:0/device:CPU:0";
constexpr char kWorkerGpu[] = "/job:worker/replica:0/task:0/device:GPU:0";
constexpr char kPs[] = "/job:ps/replica:0/task:0/device:CPU:0";

NodeExecStats Node(std::string op, std::string device, int64_t start, int64_t end,
                   std::string peer = "", std::string edge = "") {
  NodeExecStats node;
  node.node_name = op;
  node.op = std::move(op);
  node.device = std::move(device);
  node.start_micros = start;
  node.end_micros = end;
  node.peer_device = std::move(peer);
  node.tensor_name = std::move(edge);
  return node;
}

TEST(StepSplit, SortsEachNodeAndCountsParallelTimeOnce) {
  const std::vector<NodeExecStats> stats = {
      // The ps sends w at 1000; the worker, waiting since 990, has it at 1040.
      Node("_Send", kPs, 1000, 1001, kWorker, "edge_w"),
      Node("_Recv", kWorker, 990, 1040, kPs, "edge_w"), Node("MatMul", kWorker, 1040, 1100),
      Node("Relu", kWorker, 1050, 1150),  // In parallel with the MatMul: 110 us in all.
      // The gradient leaves at 1150 and arrives at 1200; the ps waited
      // for it since 990, which is no transfer.
      Node("_Send", kWorker, 1150, 1152, kPs, "edge_grad"),
      Node("_Recv", kPs, 990, 1200, kWorker, "edge_grad"), Node("ApplyAdam", kPs, 1200, 1260),
      Node("Identity", kWorker, 1300, 1310),  // After 40 us of nothing.
  };
  const StepSplit split = SplitStep(stats);
  EXPECT_DOUBLE_EQ(split.wall_ms, 0.320);
  EXPECT_DOUBLE_EQ(split.worker_compute_ms, 0.120);
  EXPECT_DOUBLE_EQ(split.read_variables_ms, 0.040);
  EXPECT_DOUBLE_EQ(split.push_gradients_ms, 0.050);
  EXPECT_DOUBLE_EQ(split.ps_update_ms, 0.060);
  EXPECT_DOUBLE_EQ(split.waiting_ms, 0.040);
  EXPECT_EQ(StepSplitText(split),
            "wall 0.320 ms: worker compute 0.120, read variables 0.040, push gradients 0.050, ps "
            "update 0.060, waiting 0.040");
}

// Without its send (another task's stats missing) a receive counts whole.
TEST(StepSplit, AnUnmatchedReceiveCountsWhole) {
  const StepSplit split = SplitStep({Node("_Recv", kWorker, 0, 50, kPs, "edge_w")});
  EXPECT_DOUBLE_EQ(split.read_variables_ms, 0.050);
}

TEST(StepSplit, ATransferWithinATaskIsItsCompute) {
  const StepSplit split = SplitStep({Node("_Recv", kWorkerGpu, 0, 30, kWorker)});
  EXPECT_DOUBLE_EQ(split.worker_compute_ms, 0.030);
  EXPECT_DOUBLE_EQ(split.read_variables_ms, 0);
}

TEST(StepSplit, TheMeanIsTakenPartByPart) {
  StepSplit a, b;
  a.wall_ms = 1;
  a.read_variables_ms = 0.5;
  b.wall_ms = 3;
  b.waiting_ms = 1;
  const StepSplit mean = MeanStepSplit({a, b});
  EXPECT_DOUBLE_EQ(mean.wall_ms, 2);
  EXPECT_DOUBLE_EQ(mean.read_variables_ms, 0.25);
  EXPECT_DOUBLE_EQ(mean.waiting_ms, 0.5);
  EXPECT_EQ(MeanStepSplit({}).wall_ms, 0);
}

TEST(StepSplit, NoStatsNoTime) {
  const StepSplit split = SplitStep({});
  EXPECT_EQ(split.wall_ms, 0);
  EXPECT_EQ(split.waiting_ms, 0);
}

// A real step of 1 ps + 1 worker: the worker reads w from the ps and the
// ps receives the update's input, and the stats name both ends.
TEST(StepSplit, AClusterStepsStatsNameEachTransfersPeer) {
  ServerOptions options;
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"worker", 1}, {"ps", 1}}, options));
  const Scope root = ops::NewRootScope();
  const Variable w(root.WithDevice("/job:ps/task:0"), "w", {1.f, 2.f});
  const Output doubled =
      ops::Mul(root.WithDevice("/job:worker/task:0").WithOpName("doubled"), w.value(), 2.f);
  const Output update =
      ops::AssignAdd(root.WithDevice("/job:ps/task:0").WithOpName("update"), w.ref(), doubled);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  SessionOptions session_options;
  session_options.target = servers[0]->target();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(session_options, graph));
  ASSERT_OK(session->Run({}, {}, {w.initializer().name()}).status());
  RunOptions run_options;
  run_options.trace = true;
  RunMetadata metadata;
  ASSERT_OK(session->Run(run_options, {}, {update.name()}, {}, &metadata).status());
  std::vector<std::string> transfers;
  for (const NodeExecStats& node : metadata.step_stats) {
    if (node.op == "_Send" || node.op == "_Recv") {
      EXPECT_FALSE(node.tensor_name.empty()) << node.node_name;
      transfers.push_back(node.op + " on " + node.device + " with " + node.peer_device);
    }
  }
  const std::string ps = "/job:ps/replica:0/task:0/device:CPU:0";
  const std::string worker = "/job:worker/replica:0/task:0/device:CPU:0";
  EXPECT_THAT(transfers,
              ::testing::IsSupersetOf(
                  {"_Send on " + ps + " with " + worker, "_Recv on " + worker + " with " + ps,
                   "_Send on " + worker + " with " + ps, "_Recv on " + ps + " with " + worker}));
  const StepSplit split = SplitStep(metadata.step_stats);
  EXPECT_GT(split.wall_ms, 0);
  EXPECT_GE(split.wall_ms, split.worker_compute_ms);
}

}  // namespace
}  // namespace rill
