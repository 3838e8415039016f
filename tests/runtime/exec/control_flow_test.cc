// The executor's control flow on one device: loops, conds, dead values,
// nesting, parallel iterations, errors, cancellation and malformed loops.
// Expected numbers are TensorFlow's (control_flow_ops_py_test.py and
// executor_test.cc cases).
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "runtime/device/caching_allocator.h"
#include "runtime/device/device_factory.h"
#include "runtime/exec/executor.h"
#include "runtime/session.h"
#include "tests/runtime/exec/control_flow_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GraphDefBuilder;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<std::vector<Tensor>> RunGraph(
    const GraphDef& def, const std::vector<std::string>& fetches,
    const std::vector<std::pair<std::string, Tensor>>& feeds = {}, const RunOptions& options = {},
    int inter_op_threads = 2) {
  SessionOptions session_options;
  session_options.inter_op_threads = inter_op_threads;
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(session_options, def));
  return session->Run(options, feeds, fetches, {}, nullptr);
}

int32_t IntOf(const Tensor& t) { return t.scalar<int32_t>(); }

TEST(ControlFlowTest, WhileLoopCountsToItsLimit) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("ten", 10);
  b.Const("one", 1);
  const std::string exit = b.CountingLoop("while", "zero", "ten", "one");
  auto out = RunGraph(b.def(), {exit});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(IntOf((*out)[0]), 10);
}

TEST(ControlFlowTest, WhileLoopThatNeverRunsItsBody) {
  GraphDefBuilder b;
  b.Const("start", 7);
  b.Const("limit", 3);
  b.Const("one", 1);
  auto out = RunGraph(b.def(), {b.CountingLoop("while", "start", "limit", "one")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(IntOf((*out)[0]), 7);
}

TEST(ControlFlowTest, LoopLimitFedFromOutside) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Add("n", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  b.Const("three", 3);
  const std::string exit = b.CountingLoop("while", "zero", "n", "three");
  for (int n : {0, 1, 3, 10, 1000}) {
    auto out = RunGraph(b.def(), {exit}, {{"n", Tensor::Scalar<int32_t>(n)}});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(IntOf((*out)[0]), (n + 2) / 3 * 3) << n;
  }
}

TEST(ControlFlowTest, SameResultForEveryParallelIterations) {
  for (int parallel : {1, 2, 10, 32}) {
    GraphDefBuilder b;
    b.Const("zero", 0);
    b.Const("limit", 5000);
    b.Const("one", 1);
    auto out = RunGraph(b.def(), {b.CountingLoop("while", "zero", "limit", "one", parallel)});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_EQ(IntOf((*out)[0]), 5000) << parallel;
  }
}

// tf.cond(x < 5, lambda: x * 2, lambda: -x).
GraphDefBuilder CondGraph() {
  GraphDefBuilder b;
  b.Add("x", "Placeholder", {}, {{"dtype", MakeAttr(DT_INT32)}});
  b.Const("five", 5);
  b.Binary("pred", "Less", "x", "five", DT_INT32);
  b.Binary("switch", "Switch", "x", "pred", DT_INT32);
  b.Const("two", 2);
  b.Add("two_in_branch", "Identity", {"two", "^switch"}, {{"T", MakeAttr(DT_INT32)}});
  b.Binary("then", "Mul", "switch:1", "two", DT_INT32);
  b.Unary("else", "Neg", "switch:0", DT_INT32);
  b.Merge("merge", {"else", "then"}, DT_INT32);
  return b;
}

TEST(ControlFlowTest, CondTakesOneBranch) {
  GraphDefBuilder b = CondGraph();
  auto taken = RunGraph(b.def(), {"merge:0", "merge:1"}, {{"x", Tensor::Scalar<int32_t>(3)}});
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(IntOf((*taken)[0]), 6);
  EXPECT_EQ(IntOf((*taken)[1]), 1);
  auto other = RunGraph(b.def(), {"merge:0", "merge:1"}, {{"x", Tensor::Scalar<int32_t>(8)}});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(IntOf((*other)[0]), -8);
  EXPECT_EQ(IntOf((*other)[1]), 0);
}

TEST(ControlFlowTest, FetchingTheUntakenBranchFails) {
  GraphDefBuilder b = CondGraph();
  auto out = RunGraph(b.def(), {"else"}, {{"x", Tensor::Scalar<int32_t>(3)}});
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node 'else' (Neg)")));
  EXPECT_THAT(out.status().message(), HasSubstr("is dead"));
}

// A loop over i < 3 around a loop over j < 4, each inner iteration adding
// 1 to a total the outer loop carries: 12.
TEST(ControlFlowTest, NestedLoops) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("three", 3);
  b.Const("four", 4);
  b.Const("one", 1);
  // Outer loop variables: i and total.
  b.Enter("outer/i_enter", "zero", DT_INT32, "outer");
  b.Enter("outer/total_enter", "zero", DT_INT32, "outer");
  b.Enter("outer/limit", "three", DT_INT32, "outer", true);
  b.Enter("outer/one", "one", DT_INT32, "outer", true);
  b.Enter("outer/four", "four", DT_INT32, "outer", true);
  b.Enter("outer/zero", "zero", DT_INT32, "outer", true);
  b.Merge("outer/i", {"outer/i_enter", "outer/i_next"}, DT_INT32);
  b.Merge("outer/total", {"outer/total_enter", "outer/total_next"}, DT_INT32);
  b.Binary("outer/less", "Less", "outer/i", "outer/limit", DT_INT32);
  b.Add("outer/cond", "LoopCond", {"outer/less"});
  b.Binary("outer/i_switch", "Switch", "outer/i", "outer/cond", DT_INT32);
  b.Binary("outer/total_switch", "Switch", "outer/total", "outer/cond", DT_INT32);
  b.Unary("outer/total_exit", "Exit", "outer/total_switch:0", DT_INT32);
  b.Unary("outer/i_exit", "Exit", "outer/i_switch:0", DT_INT32);
  b.Unary("outer/i_body", "Identity", "outer/i_switch:1", DT_INT32);
  b.Unary("outer/total_body", "Identity", "outer/total_switch:1", DT_INT32);
  // Inner loop: j from 0 to 4 adding one to the total.
  b.Enter("inner/j_enter", "outer/zero", DT_INT32, "inner");
  b.Enter("inner/t_enter", "outer/total_body", DT_INT32, "inner");
  b.Enter("inner/limit", "outer/four", DT_INT32, "inner", true);
  b.Enter("inner/one", "outer/one", DT_INT32, "inner", true);
  b.Merge("inner/j", {"inner/j_enter", "inner/j_next"}, DT_INT32);
  b.Merge("inner/t", {"inner/t_enter", "inner/t_next"}, DT_INT32);
  b.Binary("inner/less", "Less", "inner/j", "inner/limit", DT_INT32);
  b.Add("inner/cond", "LoopCond", {"inner/less"});
  b.Binary("inner/j_switch", "Switch", "inner/j", "inner/cond", DT_INT32);
  b.Binary("inner/t_switch", "Switch", "inner/t", "inner/cond", DT_INT32);
  b.Unary("inner/t_exit", "Exit", "inner/t_switch:0", DT_INT32);
  b.Unary("inner/j_exit", "Exit", "inner/j_switch:0", DT_INT32);
  b.Binary("inner/j_add", "Add", "inner/j_switch:1", "inner/one", DT_INT32);
  b.Binary("inner/t_add", "Add", "inner/t_switch:1", "inner/one", DT_INT32);
  b.Unary("inner/j_next", "NextIteration", "inner/j_add", DT_INT32);
  b.Unary("inner/t_next", "NextIteration", "inner/t_add", DT_INT32);
  b.Binary("outer/i_add", "Add", "outer/i_body", "outer/one", DT_INT32);
  b.Unary("outer/i_next", "NextIteration", "outer/i_add", DT_INT32);
  b.Unary("outer/total_next", "NextIteration", "inner/t_exit", DT_INT32);
  auto out = RunGraph(b.def(), {"outer/total_exit", "outer/i_exit"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(IntOf((*out)[0]), 12);
  EXPECT_EQ(IntOf((*out)[1]), 3);
}

// tf.cond(p, lambda: while_loop(...), lambda: 100): the loop in the branch
// not taken is dead as a whole, and the Merge takes the other branch.
TEST(ControlFlowTest, LoopInsideACond) {
  GraphDefBuilder b;
  b.Add("p", "Placeholder", {}, {{"dtype", MakeAttr(DT_BOOL)}});
  b.Const("zero", 0);
  b.Const("ten", 10);
  b.Const("one", 1);
  b.Const("hundred", 100);
  b.Binary("sw", "Switch", "zero", "p", DT_INT32);
  b.Unary("start", "Identity", "sw:1", DT_INT32);
  const std::string exit = b.CountingLoop("while", "start", "ten", "one");
  b.Binary("sw_else", "Switch", "hundred", "p", DT_INT32);
  b.Merge("merge", {"sw_else:0", exit}, DT_INT32);
  auto taken = RunGraph(b.def(), {"merge"}, {{"p", Tensor::Scalar<bool>(true)}});
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ(IntOf((*taken)[0]), 10);
  auto untaken = RunGraph(b.def(), {"merge"}, {{"p", Tensor::Scalar<bool>(false)}});
  ASSERT_TRUE(untaken.ok()) << untaken.status();
  EXPECT_EQ(IntOf((*untaken)[0]), 100);
}

// i = 0, s = 0; while i < 10: s += (i odd ? 2 : 1); i += 1  ->  15.
TEST(ControlFlowTest, CondInsideALoop) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("ten", 10);
  b.Const("one", 1);
  b.Const("two", 2);
  b.Enter("w/i_enter", "zero", DT_INT32, "w");
  b.Enter("w/s_enter", "zero", DT_INT32, "w");
  b.Enter("w/limit", "ten", DT_INT32, "w", true);
  b.Enter("w/one", "one", DT_INT32, "w", true);
  b.Enter("w/two", "two", DT_INT32, "w", true);
  b.Merge("w/i", {"w/i_enter", "w/i_next"}, DT_INT32);
  b.Merge("w/s", {"w/s_enter", "w/s_next"}, DT_INT32);
  b.Binary("w/less", "Less", "w/i", "w/limit", DT_INT32);
  b.Add("w/cond", "LoopCond", {"w/less"});
  b.Binary("w/i_sw", "Switch", "w/i", "w/cond", DT_INT32);
  b.Binary("w/s_sw", "Switch", "w/s", "w/cond", DT_INT32);
  b.Unary("w/s_exit", "Exit", "w/s_sw:0", DT_INT32);
  b.Unary("w/i_exit", "Exit", "w/i_sw:0", DT_INT32);
  b.Unary("w/i_body", "Identity", "w/i_sw:1", DT_INT32);
  b.Unary("w/s_body", "Identity", "w/s_sw:1", DT_INT32);
  b.Binary("w/mod", "FloorMod", "w/i_body", "w/two", DT_INT32);
  b.Binary("w/odd", "Equal", "w/mod", "w/one", DT_INT32);
  b.Binary("w/c_sw", "Switch", "w/s_body", "w/odd", DT_INT32);
  b.Binary("w/c_then", "Add", "w/c_sw:1", "w/two", DT_INT32);
  b.Binary("w/c_else", "Add", "w/c_sw:0", "w/one", DT_INT32);
  b.Merge("w/c_merge", {"w/c_else", "w/c_then"}, DT_INT32);
  b.Binary("w/i_add", "Add", "w/i_body", "w/one", DT_INT32);
  b.Unary("w/i_next", "NextIteration", "w/i_add", DT_INT32);
  b.Unary("w/s_next", "NextIteration", "w/c_merge", DT_INT32);
  auto out = RunGraph(b.def(), {"w/s_exit", "w/i_exit"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(IntOf((*out)[0]), 15);
  EXPECT_EQ(IntOf((*out)[1]), 10);
}

TEST(ControlFlowTest, AnErrorInAnIterationNamesTheNodeFrameAndIteration) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("ten", 10);
  b.Const("one", 1);
  b.Const("table", Tensor::FromVector<float>({1, 2, 3}, TensorShape({3})));
  const std::string exit = b.CountingLoop("while", "zero", "ten", "one");
  b.Enter("while/table", "table", DT_FLOAT, "while", true);
  b.Add("while/gather", "GatherV2", {"while/table", "while/body", "while/axis"},
        {{"Tparams", MakeAttr(DT_FLOAT)},
         {"Tindices", MakeAttr(DT_INT32)},
         {"Taxis", MakeAttr(DT_INT32)}});
  b.Add("while/axis", "Const", {"^while/body"},
        {{"dtype", MakeAttr(DT_INT32)},
         {"value", MakeAttr(TensorToProto(Tensor::Scalar<int32_t>(0)))}});
  // Each add waits for the gather, which reads the table at the counter.
  for (NodeDef& node : *b.def().mutable_node()) {
    if (node.name() == "while/add") node.add_input("^while/gather");
  }
  auto out = RunGraph(b.def(), {exit});
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node 'while/gather'")));
  EXPECT_THAT(out.status().message(), HasSubstr("in frame 'while', iteration 3"));
}

TEST(ControlFlowTest, ATimeoutEndsALoopThatNeverStops) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("big", 1);
  b.Const("nothing", 0);
  // 0 + 0 < 1 forever.
  const std::string exit = b.CountingLoop("forever", "zero", "big", "nothing");
  RunOptions options;
  options.timeout_in_ms = 200;
  auto out = RunGraph(b.def(), {exit}, {}, options);
  EXPECT_THAT(out, StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
}

TEST(ControlFlowTest, ALongLoopRunsInAFewIterationsOfState) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("limit", 100000);
  b.Const("one", 1);
  auto out = RunGraph(b.def(), {b.CountingLoop("while", "zero", "limit", "one")});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(IntOf((*out)[0]), 100000);
}

// The memory figure: a loop whose every iteration makes a 64 KiB tensor
// peaks at the same bytes for 100 and for 20,000 iterations, because an
// iteration's values are freed when it ends.
int64_t PeakBytesOfLoop(int iterations) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("limit", iterations);
  b.Const("one", 1);
  b.Const("block", Tensor::FromVector<float>(std::vector<float>(16384, 1.f), TensorShape({16384})));
  const std::string exit = b.CountingLoop("while", "zero", "limit", "one");
  b.Enter("while/block", "block", DT_FLOAT, "while", true);
  b.Binary("while/scaled", "Mul", "while/block", "while/block", DT_FLOAT);
  for (NodeDef& node : *b.def().mutable_node()) {
    if (node.name() == "while/add") node.add_input("^while/scaled");
  }
  auto graph = ImportGraphDef(b.def(), StandardOps());
  EXPECT_TRUE(graph.ok()) << graph.status();
  auto devices = CreateDevices("/job:localhost/replica:0/task:0", {{"CPU", 1}}, 1);
  EXPECT_TRUE(devices.ok()) << devices.status();
  if (!graph.ok() || !devices.ok()) return -1;
  Device* device = devices->front().get();
  auto* allocator = dynamic_cast<CachingAllocator*>(device->allocator());
  EXPECT_NE(allocator, nullptr);
  if (allocator == nullptr) return -1;
  Executor::Params params;
  params.graph = graph->get();
  params.device = device;
  params.fetches = {TensorEndpoint{(*graph)->FindNode(exit), 0}};
  auto executor = Executor::Create(params);
  EXPECT_TRUE(executor.ok()) << executor.status();
  if (!executor.ok()) return -1;
  allocator->ResetPeak();
  std::vector<Tensor> fetched;
  const absl::Status status = (*executor)->Run(Executor::Args{}, &fetched);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_EQ(fetched[0].scalar<int32_t>(), iterations);
  return allocator->Stats().peak_bytes_in_use;
}

TEST(ControlFlowTest, AnIterationsValuesAreFreedWhenItEnds) {
  const int64_t short_loop = PeakBytesOfLoop(100);
  const int64_t long_loop = PeakBytesOfLoop(20000);
  // parallel_iterations (10) + 1 iterations of 64 KiB at most, whatever
  // the count; 20,000 kept would be 1.3 GB.
  EXPECT_GT(short_loop, 0);
  EXPECT_LE(long_loop, 11 * 65536 + 65536);
  EXPECT_LE(long_loop, short_loop + 65536);
}

TEST(ControlFlowTest, OneThreadRunsLoopsToo) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("limit", 1000);
  b.Const("one", 1);
  auto out = RunGraph(b.def(), {b.CountingLoop("while", "zero", "limit", "one")}, {}, {}, 1);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(IntOf((*out)[0]), 1000);
}

// Malformed loops: clear errors naming the nodes, never a hang.
TEST(ControlFlowTest, ExitOutsideALoop) {
  GraphDefBuilder b;
  b.Const("x", 1);
  b.Unary("exit", "Exit", "x", DT_INT32);
  EXPECT_THAT(RunGraph(b.def(), {"exit"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'exit' (Exit): is not inside a loop")));
}

TEST(ControlFlowTest, NextIterationThatFeedsNoMerge) {
  GraphDefBuilder b;
  b.Const("x", 1);
  b.Enter("enter", "x", DT_INT32, "f");
  b.Unary("next", "NextIteration", "enter", DT_INT32);
  b.Unary("use", "Identity", "next", DT_INT32);
  EXPECT_THAT(RunGraph(b.def(), {"use"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("node 'next'")));
}

// A loop invariant fed straight back would be live in the last iteration
// too and start iterations forever: refused, naming the node.
TEST(ControlFlowTest, NextIterationOfALoopInvariantIsRefused) {
  GraphDefBuilder b;
  b.Const("x", 1);
  b.Const("c", 5);
  b.Enter("enter", "x", DT_INT32, "f");
  b.Enter("invariant", "c", DT_INT32, "f", /*constant=*/true);
  b.Merge("merge", {"enter", "next"}, DT_INT32);
  b.Unary("next", "NextIteration", "invariant", DT_INT32);
  EXPECT_THAT(RunGraph(b.def(), {"merge"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'next' (NextIteration): reads the loop invariant "
                                 "'invariant'")));
}

// The builder's way: a body returning a value from outside the loop as it
// entered. The loop ends (TensorFlow's testWhileGrad_Const loop: 1.0).
TEST(ControlFlowTest, ABodyReturningAnOutsideValueEnds) {
  const Scope root = ops::NewRootScope();
  const Output c1 = ops::Const(root.WithOpName("c1"), Tensor::Scalar<float>(1), DT_FLOAT);
  std::vector<Output> out;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, Tensor::Scalar<int32_t>(0), DT_INT32), ops::Const(root, 0.0f)},
      [](const Scope& s, const std::vector<Output>& in, Output* o) {
        *o = ops::Less(s, in[0], 3);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* o) {
        *o = {ops::Add(s, in[0], 1), c1};
        return s.status();
      },
      &out));
  ops::Identity(root.WithOpName("result"), out[1]);
  ASSERT_OK_AND_ASSIGN(GraphDef def, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> result, RunGraph(def, {"result"}));
  EXPECT_EQ(result[0].scalar<float>(), 1.0f);
}

TEST(ControlFlowTest, InputsFromTwoFrames) {
  GraphDefBuilder b;
  b.Const("x", 1);
  b.Enter("a", "x", DT_INT32, "f1");
  b.Enter("b", "x", DT_INT32, "f2");
  b.Binary("sum", "Add", "a", "b", DT_INT32);
  EXPECT_THAT(RunGraph(b.def(), {"sum"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("node 'sum' (Add): has inputs from different frames")));
}

TEST(ControlFlowTest, ACycleThatIsNotALoop) {
  GraphDefBuilder b;
  b.Const("x", 1);
  b.Merge("m", {"x", "n"}, DT_INT32);
  b.Unary("n", "Identity", "m", DT_INT32);
  EXPECT_THAT(RunGraph(b.def(), {"m"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("graph has a cycle")));
}

TEST(ControlFlowTest, FetchingInsideALoopIsRefused) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("ten", 10);
  b.Const("one", 1);
  b.CountingLoop("while", "zero", "ten", "one");
  EXPECT_THAT(RunGraph(b.def(), {"while/add"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("frame 'while'")));
}

}  // namespace
}  // namespace rill
