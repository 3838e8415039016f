// Loops and conds split over /cpu:0 and /cpu:1 run, through the control
// loops the partitioner adds, to the numbers they give on one device.
#include <filesystem>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "graph/graph_io.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/placement/control_flow_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::Values;
using ::testing::Contains;

// The graph as written (split over two devices), or with every device
// request dropped (all on /cpu:0, the reference).
GraphDef GraphOf(const std::vector<NodeDef>& nodes, bool split) {
  GraphDef def;
  for (const NodeDef& node : nodes) {
    NodeDef* added = def.add_node();
    *added = node;
    if (!split) added->clear_device();
  }
  return def;
}

// Runs `fetch` twice on a two-CPU session (the second run reuses the
// partitions) and returns the value; with `split`, checks that both devices
// ran and that tensors crossed between them.
int Evaluate(const std::vector<NodeDef>& nodes, const std::string& fetch, bool split) {
  SessionOptions options;
  options.device_count["CPU"] = 2;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, GraphOf(nodes, split));
  EXPECT_OK(session);
  if (!session.ok()) return -1;
  RunOptions run_options;
  run_options.trace = true;
  RunMetadata metadata;
  absl::StatusOr<std::vector<Tensor>> first =
      (*session)->Run(run_options, {}, {fetch}, {}, &metadata);
  EXPECT_OK(first);
  absl::StatusOr<std::vector<Tensor>> second = (*session)->Run({}, {fetch});
  EXPECT_OK(second);
  if (!first.ok() || !second.ok()) return -1;
  EXPECT_EQ(Values<int32_t>((*first)[0]), Values<int32_t>((*second)[0]));
  if (split) {
    std::set<std::string> devices, ops;
    for (const NodeExecStats& node : metadata.step_stats) {
      devices.insert(node.device);
      ops.insert(node.op);
    }
    EXPECT_THAT(devices, Contains(control_flow_graphs::kCpu1));
    EXPECT_THAT(ops, Contains("_Recv"));
  }
  return Values<int32_t>((*first)[0]).at(0);
}

TEST(ControlFlowSession, LoopWithItsBodyOnAnotherDevice) {
  const std::vector<NodeDef> nodes = control_flow_graphs::SplitLoop();
  EXPECT_EQ(Evaluate(nodes, "out", /*split=*/false), 11);
  EXPECT_EQ(Evaluate(nodes, "out", /*split=*/true), 11);
}

TEST(ControlFlowSession, NestedLoopSplitOverTwoDevices) {
  const std::vector<NodeDef> nodes = control_flow_graphs::NestedLoop();
  EXPECT_EQ(Evaluate(nodes, "result", /*split=*/false), 30);
  EXPECT_EQ(Evaluate(nodes, "result", /*split=*/true), 30);
}

TEST(ControlFlowSession, CondWithABranchOnAnotherDevice) {
  const std::vector<NodeDef> nodes = control_flow_graphs::SplitCond(5, 7);
  EXPECT_EQ(Evaluate(nodes, "merge", /*split=*/false), 10);
  EXPECT_EQ(Evaluate(nodes, "merge", /*split=*/true), 10);
}

// The branch on the other device is not taken: dead values cross.
TEST(ControlFlowSession, CondWhoseRemoteBranchIsDead) {
  const std::vector<NodeDef> nodes = control_flow_graphs::SplitCond(9, 7);
  EXPECT_EQ(Evaluate(nodes, "merge", /*split=*/false), -9);
  EXPECT_EQ(Evaluate(nodes, "merge", /*split=*/true), -9);
}

// A loop and its gradient loop, with the stacks that carry the forward
// values on one device and the rest on the other, as soft placement puts
// them when the loop runs on a GPU and the stacks have only CPU kernels:
// the gradient loop's pops follow the other device's LoopCond.
TEST(ControlFlowSession, LoopGradientWithItsStacksOnAnotherDevice) {
  const Scope s = ops::NewRootScope();
  const Output w = ops::Const(s.WithOpName("w"),
                              Tensor::FromVector<float>({0.5f, -0.25f, 0.75f}, TensorShape({3})));
  const Output zero = ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32);
  std::vector<Output> outputs;
  ASSERT_OK(ops::WhileLoop(
      s, {zero, w},
      [](const Scope& cs, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(cs, in[0], 7);
        return cs.status();
      },
      [&](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(bs, in[0], 1));
        out->push_back(ops::Tanh(bs, ops::Add(bs, ops::Mul(bs, in[1], w), 0.5f)));
        return bs.status();
      },
      &outputs));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> grads,
                       AddGradients(s, {ops::Sum(s, outputs[1], 0)}, {w}));
  ops::Identity(s.WithOpName("dw"), grads[0]);
  ASSERT_OK_AND_ASSIGN(GraphDef def, s.ToGraphDef());
  for (NodeDef& node : *def.mutable_node()) node.mutable_attr()->erase("_class");

  SessionOptions options;
  options.device_count["CPU"] = 2;
  const auto run = [&](const GraphDef& graph) -> std::vector<float> {
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
    EXPECT_OK(session);
    if (!session.ok()) return {};
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run({}, {"dw"});
    EXPECT_OK(out);
    return out.ok() ? Values<float>((*out)[0]) : std::vector<float>();
  };
  const std::vector<float> expected = run(def);
  ASSERT_EQ(expected.size(), 3u);
  for (const int stacks_on : {0, 1}) {
    GraphDef split = def;
    for (NodeDef& node : *split.mutable_node()) {
      const bool stack = node.op().starts_with("Stack");
      node.set_device(absl::StrFormat("/cpu:%d", stack ? stacks_on : 1 - stacks_on));
    }
    EXPECT_EQ(run(split), expected) << "stacks on /cpu:" << stacks_on;
  }
}

// TensorFlow's own loop and cond graphs with every node put on /cpu:0 or
// /cpu:1 by a hash of its name and a seed (colocation hints dropped), so
// that loops, their invariants, conds and nested frames are cut in many
// places: the outputs stay those of one device.
struct TfGraphCase {
  const char* file;
  std::vector<std::pair<std::string, Tensor>> feeds;
};

std::string Bytes(const Tensor& t) {
  return std::string(static_cast<const char*>(t.raw_data()), t.TotalBytes());
}

std::vector<Tensor> RunTfGraph(const GraphDef& def, const TfGraphCase& c) {
  SessionOptions options;
  options.device_count["CPU"] = 2;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, def);
  EXPECT_OK(session);
  if (!session.ok()) return {};
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(c.feeds, {"output:0"});
  EXPECT_OK(out) << c.file;
  return out.ok() ? *out : std::vector<Tensor>();
}

TEST(ControlFlowSession, TensorFlowGraphsSplitAnywhereGiveTheSameOutputs) {
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({2, 2}));
  const Tensor ones = Tensor::FromVector<float>(std::vector<float>(9, 1.f), TensorShape({3, 3}));
  const std::vector<TfGraphCase> cases = {
      {"dl4j_simple_while.pb", {}},
      {"dl4j_simplewhile_1.pb", {{"input_0", x}, {"input_1", Tensor::Scalar<float>(40)}}},
      {"dl4j_simplewhile_nested.pb", {{"input_0", x}, {"input_1", ones}}},
      {"dl4j_simpleif_0.pb", {{"input_0", x}, {"input_1", Tensor::Scalar<float>(11)}}},
      {"dl4j_simpleif_0.pb", {{"input_0", x}, {"input_1", Tensor::Scalar<float>(10)}}},
      {"dl4j_simple_cond.pb", {}},
      {"dl4j_primitive_gru_dynamic.pb",
       {{"input", Tensor::FromVector<double>(
                      {0.1, -0.2, 0.3, 0.4,  -0.5, 0.6, 0.7, 0.8, -0.9, 1.0, 1.1, 1.2,
                       0.5, 0.4,  0.3, -0.2, 0.1,  0.0, 0.9, 0.8, 0.7,  0.6, 0.5, 0.4},
                      TensorShape({2, 2, 6}))}}},
  };
  const std::string dir = ::rill::testing::TestDataDir() + "/control_flow/";
  for (const TfGraphCase& c : cases) {
    SCOPED_TRACE(c.file);
    if (!std::filesystem::exists(dir + c.file)) GTEST_SKIP() << "missing " << dir << c.file;
    ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(dir + c.file));
    for (NodeDef& node : *def.mutable_node()) node.mutable_attr()->erase("_class");
    const std::vector<Tensor> expected = RunTfGraph(def, c);
    ASSERT_EQ(expected.size(), 1u);
    for (int seed = 0; seed < 12; ++seed) {
      GraphDef split = def;
      for (NodeDef& node : *split.mutable_node()) {
        const size_t h = std::hash<std::string>()(absl::StrFormat("%s#%d", node.name(), seed));
        node.set_device(absl::StrFormat("/cpu:%d", (h >> 7) % 2));
      }
      const std::vector<Tensor> got = RunTfGraph(split, c);
      ASSERT_EQ(got.size(), 1u) << "seed " << seed;
      EXPECT_EQ(got[0].DebugString(), expected[0].DebugString()) << "seed " << seed;
      EXPECT_EQ(Bytes(got[0]), Bytes(expected[0])) << "seed " << seed;
    }
  }
}

}  // namespace
}  // namespace rill
