// Fused loops (runtime/exec/fused_loop.h): a loop run as one program gives
// what the frames path gives, names the node, frame and iteration of an
// error, ends when its step is cancelled, holds one iteration's values, and
// leaves loops it cannot express to the frames path.
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph.h"
#include "graph/status_macros.h"
#include "graph/while_loop.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/registry.h"
#include "runtime/device/caching_allocator.h"
#include "runtime/device/device.h"
#include "runtime/exec/executor.h"
#include "runtime/session.h"
#include "tests/runtime/exec/control_flow_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GraphDefBuilder;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

struct Result {
  absl::Status status;
  std::vector<Tensor> fetched;
  std::vector<NodeExecStats> stats;
};

// Runs `graph` once on a one-thread CPU device, fused or not, with stats.
Result RunOnce(const Graph& graph, const std::vector<TensorEndpoint>& fetches, bool fuse,
               const std::vector<std::pair<TensorEndpoint, Tensor>>& feeds = {}) {
  Result result;
  CpuDevice device(1);
  Eigen::ThreadPool pool(2);
  Executor::Params params;
  params.graph = &graph;
  params.fetches = fetches;
  params.device = &device;
  params.inter_op_pool = &pool;
  params.fuse_loops = fuse;
  std::vector<Tensor> fed;
  for (const auto& [endpoint, value] : feeds) {
    params.feeds.push_back(endpoint);
    fed.push_back(value);
  }
  absl::StatusOr<std::unique_ptr<Executor>> executor = Executor::Create(params);
  if (!executor.ok()) {
    result.status = executor.status();
    return result;
  }
  Executor::Args args;
  args.feeds = fed;
  args.stats = &result.stats;
  result.status = (*executor)->Run(args, &result.fetched);
  return result;
}

// The loop ran as one program: none of its skeleton's kernels ran.
bool RanFused(const Result& result) {
  for (const NodeExecStats& s : result.stats) {
    if (s.op == "Merge" || s.op == "Switch" || s.op == "LoopCond" || s.op == "NextIteration") {
      return false;
    }
  }
  return true;
}

int CountOp(const Result& result, const std::string& op) {
  int n = 0;
  for (const NodeExecStats& s : result.stats) n += s.op == op ? 1 : 0;
  return n;
}

// Runs fused and not, expects both to succeed with equal fetches, and
// returns the fused run.
Result RunBothWays(const Graph& graph, const std::vector<TensorEndpoint>& fetches) {
  Result frames = RunOnce(graph, fetches, /*fuse=*/false);
  Result fused = RunOnce(graph, fetches, /*fuse=*/true);
  EXPECT_OK(frames.status);
  EXPECT_OK(fused.status);
  EXPECT_FALSE(RanFused(frames));
  EXPECT_TRUE(RanFused(fused));
  EXPECT_EQ(frames.fetched.size(), fused.fetched.size());
  for (size_t f = 0; f < frames.fetched.size() && f < fused.fetched.size(); ++f) {
    EXPECT_TRUE(TensorsEqual(frames.fetched[f], fused.fetched[f])) << "fetch " << f;
  }
  return fused;
}

std::vector<TensorEndpoint> Endpoints(const std::vector<Output>& outputs) {
  std::vector<TensorEndpoint> endpoints;
  for (const Output& o : outputs) endpoints.push_back({o.node(), o.index()});
  return endpoints;
}

// i < n: i += 1, s += i * k, t += m; n, k and m from outside (invariants).
TEST(FusedLoop, SeveralVariablesAndInvariantsMatchTheFramesPath) {
  const Scope root = ops::NewRootScope();
  const Output n = ops::Const(root, 7);
  const Output k = ops::Const(root, 3);
  const Output m = ops::Const(root, 0.5f);
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 0), ops::Const(root, 1.f)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], n);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], ops::Const(s, 1)));
        out->push_back(ops::Add(s, in[1], ops::Mul(s, in[0], k)));
        out->push_back(ops::Add(s, in[2], m));
        return s.status();
      },
      &outputs));
  const Result fused = RunBothWays(*root.graph(), Endpoints(outputs));
  ASSERT_EQ(fused.fetched.size(), 3u);
  EXPECT_EQ(fused.fetched[0].scalar<int32_t>(), 7);
  EXPECT_EQ(fused.fetched[1].scalar<int32_t>(), 3 * (0 + 1 + 2 + 3 + 4 + 5 + 6));
  EXPECT_EQ(fused.fetched[2].scalar<float>(), 4.5f);
  // Per iteration its kernels: the Less, and the body's Const, two Adds,
  // a Mul and an Add; the Less once more when the loop ends.
  EXPECT_EQ(CountOp(fused, "Less"), 8);
  EXPECT_EQ(CountOp(fused, "Mul"), 7);
}

TEST(FusedLoop, ALoopThatNeverRunsItsBodyReturnsItsInputs) {
  const Scope root = ops::NewRootScope();
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 5), ops::Const(root, 2.f)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], ops::Const(s, 3));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], ops::Const(s, 1)));
        out->push_back(ops::Mul(s, in[1], in[1]));
        return s.status();
      },
      &outputs));
  const Result fused = RunBothWays(*root.graph(), Endpoints(outputs));
  ASSERT_EQ(fused.fetched.size(), 2u);
  EXPECT_EQ(fused.fetched[0].scalar<int32_t>(), 5);
  EXPECT_EQ(fused.fetched[1].scalar<float>(), 2.f);
  EXPECT_EQ(CountOp(fused, "Add"), 0);
}

// for i in 0..3: ta[i] = i * i, the array's flow a loop variable.
TEST(FusedLoop, ABodyThatWritesATensorArray) {
  const Scope root = ops::NewRootScope();
  const ops::TensorArrayV3 ta(root, 4, DT_FLOAT);
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 0), ta.flow},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], ops::Const(s, 4));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        const Output value = ops::Cast(s, ops::Mul(s, in[0], in[0]), DT_FLOAT);
        out->push_back(ops::Add(s, in[0], ops::Const(s, 1)));
        out->push_back(ops::TensorArrayWriteV3(s, ta.handle, in[0], value, in[1]).flow_out);
        return s.status();
      },
      &outputs));
  const ops::TensorArrayGatherV3 gathered(root, ta.handle, ops::Const(root, {0, 1, 2, 3}),
                                          outputs[1], DT_FLOAT);
  const Result fused = RunBothWays(*root.graph(), Endpoints({gathered.value}));
  ASSERT_EQ(fused.fetched.size(), 1u);
  EXPECT_TRUE(TensorsEqual(fused.fetched[0],
                           Tensor::FromVector<float>({0.f, 1.f, 4.f, 9.f}, TensorShape({4}))));
  EXPECT_EQ(CountOp(fused, "TensorArrayWriteV3"), 4);
}

// The gather reads a 3-element table at the counter: iteration 3 fails.
GraphDefBuilder GatherPastTheEnd() {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("ten", 10);
  b.Const("one", 1);
  b.Const("table", Tensor::FromVector<float>({1, 2, 3}, TensorShape({3})));
  b.CountingLoop("while", "zero", "ten", "one");
  b.Enter("while/table", "table", DT_FLOAT, "while", true);
  b.Add("while/gather", "GatherV2", {"while/table", "while/body", "while/axis"},
        {{"Tparams", MakeAttr(DT_FLOAT)}, {"Tindices", MakeAttr(DT_INT32)},
         {"Taxis", MakeAttr(DT_INT32)}});
  b.Add("while/axis", "Const", {"^while/body"},
        {{"dtype", MakeAttr(DT_INT32)},
         {"value", MakeAttr(TensorToProto(Tensor::Scalar<int32_t>(0)))}});
  for (NodeDef& node : *b.def().mutable_node()) {
    if (node.name() == "while/add") node.add_input("^while/gather");
  }
  return b;
}

TEST(FusedLoop, AnErrorNamesTheNodeFrameAndIteration) {
  GraphDefBuilder b = GatherPastTheEnd();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Graph> graph, ImportGraphDef(b.def(), StandardOps()));
  const std::vector<TensorEndpoint> fetches = {{graph->FindNode("while/exit"), 0}};
  for (bool fuse : {false, true}) {
    const Result result = RunOnce(*graph, fetches, fuse);
    EXPECT_THAT(result.status, StatusIs(absl::StatusCode::kInvalidArgument,
                                        HasSubstr("node 'while/gather' (GatherV2)")));
    EXPECT_THAT(result.status.message(), HasSubstr("(in frame 'while', iteration 3)"));
    EXPECT_EQ(RanFused(result), fuse);
  }
}

// A condition that turns out to have shape [1] (its limit fed without a
// known shape) is refused as the LoopCond kernel refuses it.
TEST(FusedLoop, AConditionThatIsNotAScalarFailsAsTheLoopCondDoes) {
  const Scope root = ops::NewRootScope();
  const Output limit = ops::Placeholder(root, DT_INT32);
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 0)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], limit);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], ops::Const(s, 1)));
        return s.status();
      },
      &outputs, {.frame_name = "w"}));
  const Tensor one_limit = Tensor::FromVector<int32_t>({3}, TensorShape({1}));
  for (bool fuse : {false, true}) {
    const Result result = RunOnce(*root.graph(), Endpoints(outputs), fuse,
                                  {{{limit.node(), 0}, one_limit}});
    EXPECT_THAT(result.status,
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("the loop condition must be a bool scalar, but has shape [1] "
                                   "(in frame 'w', iteration 0)")));
    EXPECT_THAT(result.status.message(), HasSubstr("(LoopCond)"));
  }
}

// 0 + 0 < 1 forever, with a second variable and an invariant; only the
// step's deadline ends it.
TEST(FusedLoop, ADeadlineEndsALoopThatNeverStops) {
  const Scope root = ops::NewRootScope();
  const Output zero = ops::Const(root, 0);
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {zero, ops::Const(root, 1.f)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], ops::Const(s, 1));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], zero));
        out->push_back(ops::Mul(s, in[1], ops::Const(s, 1.f)));
        return s.status();
      },
      &outputs));
  ASSERT_OK_AND_ASSIGN(const GraphDef def, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  RunOptions options;
  options.timeout_in_ms = 100;
  EXPECT_THAT(session->Run(options, {}, {outputs[0].name()}, {}, nullptr),
              StatusIs(absl::StatusCode::kDeadlineExceeded, ::testing::_));
}

// The step's cancellation, from another thread, ends it: before the loop
// starts or while it runs, Run returns the cancellation's status.
TEST(FusedLoop, CancellingTheStepEndsALoopThatNeverStops) {
  const Scope root = ops::NewRootScope();
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 0)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], ops::Const(s, 1));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Mul(s, in[0], ops::Const(s, 0)));
        return s.status();
      },
      &outputs));
  CpuDevice device(1);
  Eigen::ThreadPool pool(2);
  Executor::Params params;
  params.graph = root.graph();
  params.fetches = Endpoints(outputs);
  params.device = &device;
  params.inter_op_pool = &pool;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Executor> executor, Executor::Create(params));
  StepCancellation cancellation;
  Executor::Args args;
  args.cancellation = &cancellation;
  std::vector<Tensor> fetched;
  absl::Status status;
  std::thread step([&] { status = executor->Run(args, &fetched); });
  cancellation.Cancel(absl::CancelledError("stopped by the test"));
  step.join();
  EXPECT_THAT(status, StatusIs(absl::StatusCode::kCancelled, HasSubstr("stopped by the test")));
}

// Each iteration makes a 64 KiB tensor: a fused loop holds one at a time.
int64_t PeakBytesOfFusedLoop(int iterations) {
  GraphDefBuilder b;
  b.Const("zero", 0);
  b.Const("limit", iterations);
  b.Const("one", 1);
  b.Const("block", Tensor::FromVector<float>(std::vector<float>(16384, 1.f), TensorShape({16384})));
  const std::string exit = b.CountingLoop("while", "zero", "limit", "one");
  b.Enter("while/block", "block", DT_FLOAT, "while", true);
  b.Binary("while/scaled", "Mul", "while/block", "while/block", DT_FLOAT);
  b.Add("while/sum", "Sum", {"while/scaled", "while/axis"},
        {{"T", MakeAttr(DT_FLOAT)}, {"Tidx", MakeAttr(DT_INT32)}});
  b.Add("while/axis", "Const", {"^while/body"},
        {{"dtype", MakeAttr(DT_INT32)},
         {"value", MakeAttr(TensorToProto(Tensor::Scalar<int32_t>(0)))}});
  for (NodeDef& node : *b.def().mutable_node()) {
    if (node.name() == "while/add") node.add_input("^while/sum");
  }
  absl::StatusOr<std::unique_ptr<Graph>> graph = ImportGraphDef(b.def(), StandardOps());
  EXPECT_OK(graph);
  if (!graph.ok()) return -1;
  CpuCachingAllocator()->ResetPeak();
  const Result result = RunOnce(**graph, {{(*graph)->FindNode(exit), 0}}, /*fuse=*/true);
  EXPECT_OK(result.status);
  EXPECT_TRUE(RanFused(result));
  if (!result.status.ok()) return -1;
  EXPECT_EQ(result.fetched[0].scalar<int32_t>(), iterations);
  return CpuCachingAllocator()->Stats().peak_bytes_in_use;
}

TEST(FusedLoop, HoldsOneIterationsValues) {
  const int64_t short_loop = PeakBytesOfFusedLoop(10);
  const int64_t long_loop = PeakBytesOfFusedLoop(5000);
  EXPECT_GT(short_loop, 0);
  EXPECT_LE(long_loop, short_loop + 65536);
}

// for i < 3: for j < 4: total += 1. The inner loop runs fused in each
// outer iteration; the outer one, which holds it, frame by frame.
TEST(FusedLoop, TheInnerLoopOfANestRunsFused) {
  const Scope root = ops::NewRootScope();
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 0)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], ops::Const(s, 3));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        std::vector<Output> inner;
        RETURN_IF_ERROR(ops::WhileLoop(
            s, {ops::Const(s, 0), in[1]},
            [&](const Scope& t, const std::vector<Output>& v, Output* o) {
              *o = ops::Less(t, v[0], ops::Const(t, 4));
              return t.status();
            },
            [&](const Scope& t, const std::vector<Output>& v, std::vector<Output>* o) {
              o->push_back(ops::Add(t, v[0], ops::Const(t, 1)));
              o->push_back(ops::Add(t, v[1], ops::Const(t, 1)));
              return t.status();
            },
            &inner, {.frame_name = "inner"}));
        out->push_back(ops::Add(s, in[0], ops::Const(s, 1)));
        out->push_back(inner[1]);
        return s.status();
      },
      &outputs, {.frame_name = "outer"}));
  const std::vector<TensorEndpoint> fetches = Endpoints(outputs);
  const Result frames = RunOnce(*root.graph(), fetches, /*fuse=*/false);
  const Result fused = RunOnce(*root.graph(), fetches, /*fuse=*/true);
  ASSERT_OK(frames.status);
  ASSERT_OK(fused.status);
  EXPECT_EQ(fused.fetched[1].scalar<int32_t>(), 12);
  EXPECT_TRUE(TensorsEqual(frames.fetched[1], fused.fetched[1]));
  // The outer loop's two Merges run 4 times each; the inner ones not at all.
  EXPECT_EQ(CountOp(frames, "Merge"), 2 * 4 + 2 * 5 * 3);
  EXPECT_EQ(CountOp(fused, "Merge"), 2 * 4);
}

// A cond inside the body is not the loop's own Switch and Merge: the frames
// path runs it, with the same numbers.
TEST(FusedLoop, ACondInTheBodyRunsOnTheFramesPath) {
  const Scope root = ops::NewRootScope();
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      root, {ops::Const(root, 0), ops::Const(root, 0)},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], ops::Const(s, 10));
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        const Output odd = ops::Equal(s, ops::FloorMod(s, in[0], ops::Const(s, 2)),
                                      ops::Const(s, 1));
        const ops::Switch sw(s, in[1], odd);
        const Output merged = ops::Merge(s, {ops::Add(s, sw.output_false, ops::Const(s, 1)),
                                             ops::Add(s, sw.output_true, ops::Const(s, 2))})
                                   .output;
        out->push_back(ops::Add(s, in[0], ops::Const(s, 1)));
        out->push_back(merged);
        return s.status();
      },
      &outputs));
  const Result result = RunOnce(*root.graph(), Endpoints(outputs), /*fuse=*/true);
  ASSERT_OK(result.status);
  EXPECT_FALSE(RanFused(result));
  EXPECT_EQ(result.fetched[1].scalar<int32_t>(), 15);
}

}  // namespace
}  // namespace rill
