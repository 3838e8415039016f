#include "placement/replication.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatNear;
using ::testing::HasSubstr;
using ::testing::Pointwise;

constexpr char kCpu0[] = "/device:CPU:0";
constexpr char kCpu1[] = "/device:CPU:1";

std::map<std::string, const NodeDef*> ByName(const GraphDef& graph) {
  std::map<std::string, const NodeDef*> nodes;
  for (const NodeDef& node : graph.node()) nodes[node.name()] = &node;
  return nodes;
}

// Each tower doubles its slice: a tower whose output depends only on its
// own rows, so the gathered result shows that every row went through one.
TowerFn DoubleTower() {
  return [](const Scope& scope, const std::vector<Output>& inputs,
            int) -> absl::StatusOr<std::vector<Output>> {
    return std::vector<Output>{ops::Mul(scope.WithOpName("double"), inputs[0], 2.f)};
  };
}

TEST(ReplicateTowers, SplitsAndGathersOnTheClientAndBuildsTowersOnTheirDevices) {
  const Scope root = ops::NewRootScope();
  const Output x =
      ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({4, 3}));
  std::vector<int> seen_towers;
  std::vector<std::string> seen_inputs;
  const TowerFn tower = [&](const Scope& scope, const std::vector<Output>& inputs,
                            int t) -> absl::StatusOr<std::vector<Output>> {
    seen_towers.push_back(t);
    seen_inputs.push_back(inputs[0].name());
    return std::vector<Output>{ops::Square(scope.WithOpName("square"), inputs[0])};
  };
  ASSERT_OK_AND_ASSIGN(const std::vector<Output> outputs,
                       ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:1"}, "/cpu:0", tower));
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  const auto nodes = ByName(graph);

  EXPECT_THAT(seen_towers, ElementsAre(0, 1));
  ASSERT_EQ(outputs.size(), 1u);
  const NodeDef& concat = *nodes.at(outputs[0].node()->name());
  EXPECT_EQ(concat.op(), "ConcatV2");
  EXPECT_EQ(concat.device(), kCpu0);
  EXPECT_THAT(concat.input(), ElementsAre("tower_0/square", "tower_1/square", ::testing::_));

  ASSERT_EQ(seen_inputs.size(), 2u);
  const std::string split_name = seen_inputs[0];
  EXPECT_EQ(seen_inputs[1], split_name + ":1");
  const NodeDef& split = *nodes.at(split_name);
  EXPECT_EQ(split.op(), "Split");
  EXPECT_EQ(split.device(), kCpu0);
  EXPECT_EQ(split.input(1), "x");
  EXPECT_EQ(split.attr().at("num_split").i(), 2);

  EXPECT_EQ(nodes.at("tower_0/square")->device(), kCpu0);
  EXPECT_EQ(nodes.at("tower_1/square")->device(), kCpu1);
  EXPECT_EQ(nodes.at("tower_0/square")->input(0), split_name);
  EXPECT_EQ(nodes.at("tower_1/square")->input(0), split_name + ":1");
}

TEST(ReplicateTowers, SplitsEveryInputAndGathersEveryOutput) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT);
  const TowerFn tower = [](const Scope& scope, const std::vector<Output>& inputs,
                           int) -> absl::StatusOr<std::vector<Output>> {
    EXPECT_EQ(inputs.size(), 2u);
    return std::vector<Output>{ops::Add(scope, inputs[0], inputs[1]),
                               ops::Sub(scope, inputs[0], inputs[1]),
                               ops::Mul(scope, inputs[0], inputs[1])};
  };
  ASSERT_OK_AND_ASSIGN(
      const std::vector<Output> outputs,
      ReplicateTowers(root, {x, y}, {"/cpu:0", "/cpu:1", "/cpu:2"}, "/cpu:0", tower));
  EXPECT_EQ(outputs.size(), 3u);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  int splits = 0, concats = 0;
  for (const NodeDef& node : graph.node()) {
    if (node.op() == "Split") {
      ++splits;
      EXPECT_EQ(node.attr().at("num_split").i(), 3);
    }
    if (node.op() == "ConcatV2") {
      ++concats;
      EXPECT_EQ(node.attr().at("N").i(), 3);
    }
  }
  EXPECT_EQ(splits, 2);
  EXPECT_EQ(concats, 3);
}

TEST(ReplicateTowers, RejectsNoDevices) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  EXPECT_THAT(ReplicateTowers(root, {x}, {}, "/cpu:0", DoubleTower()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("device")));
}

TEST(ReplicateTowers, RejectsNoInputs) {
  const Scope root = ops::NewRootScope();
  EXPECT_THAT(ReplicateTowers(root, {}, {"/cpu:0"}, "/cpu:0", DoubleTower()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input")));
}

TEST(ReplicateTowers, TowerErrorNamesTheTower) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const TowerFn tower = [](const Scope& scope, const std::vector<Output>& inputs,
                           int t) -> absl::StatusOr<std::vector<Output>> {
    if (t == 1) return absl::FailedPreconditionError("no weights for this tower");
    return std::vector<Output>{ops::Identity(scope, inputs[0])};
  };
  EXPECT_THAT(ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:1"}, "/cpu:0", tower),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       ::testing::AllOf(HasSubstr("tower 1"), HasSubstr("/cpu:1"),
                                        HasSubstr("no weights for this tower"))));
}

TEST(ReplicateTowers, BuildingErrorInsideATowerNamesTheTower) {
  const Scope root = ops::NewRootScope();
  const Output x =
      ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({4, 3}));
  const TowerFn tower = [](const Scope& scope, const std::vector<Output>& inputs,
                           int) -> absl::StatusOr<std::vector<Output>> {
    // [2,3] x [2,3]: the inner dimensions disagree.
    return std::vector<Output>{ops::MatMul(scope, inputs[0], inputs[0])};
  };
  const auto outputs = ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:1"}, "/cpu:0", tower);
  EXPECT_THAT(outputs, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tower 0")));
}

TEST(ReplicateTowers, MalformedTowerDeviceNamesTheTower) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  EXPECT_THAT(ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:one"}, "/cpu:0", DoubleTower()),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tower 1")));
}

TEST(ReplicateTowers, RejectsTowersWithDifferentOutputCounts) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  const TowerFn tower = [](const Scope& scope, const std::vector<Output>& inputs,
                           int t) -> absl::StatusOr<std::vector<Output>> {
    std::vector<Output> outputs{ops::Identity(scope, inputs[0])};
    if (t == 1) outputs.push_back(ops::Identity(scope, inputs[0]));
    return outputs;
  };
  EXPECT_THAT(ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:1"}, "/cpu:0", tower),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("tower 1"), HasSubstr("2 outputs"))));
}

TEST(ReplicateTowers, GatheredOutputMatchesTheUnsplitComputation) {
  const Scope root = ops::NewRootScope();
  const Output x =
      ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({4, 2}));
  const Output w =
      ops::Const(root.WithOpName("w"),
                 Tensor::FromVector<float>({1, 2, 3, 4, 5, 6}, TensorShape({2, 3})), DT_FLOAT);
  const TowerFn tower = [&](const Scope& scope, const std::vector<Output>& inputs,
                            int) -> absl::StatusOr<std::vector<Output>> {
    return std::vector<Output>{ops::MatMul(scope, inputs[0], w)};
  };
  ASSERT_OK_AND_ASSIGN(const std::vector<Output> outputs,
                       ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:0"}, "/cpu:0", tower));
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(auto session, NewSession(SessionOptions(), graph));
  const Tensor xs = Tensor::FromVector<float>({1, 0, 0, 1, 1, 1, 2, -1}, TensorShape({4, 2}));
  ASSERT_OK_AND_ASSIGN(auto result, session->Run({{"x", xs}}, {outputs[0].name()}));
  EXPECT_EQ(result[0].shape(), TensorShape({4, 3}));
  EXPECT_THAT(Values<float>(result[0]), ElementsAre(1, 2, 3, 4, 5, 6, 5, 7, 9, -2, -1, 0));
}

TEST(ReplicateTowers, UnevenBatchFailsWhenRun) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(const std::vector<Output> outputs,
                       ReplicateTowers(root, {x}, {"/cpu:0", "/cpu:0"}, "/cpu:0", DoubleTower()));
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(auto session, NewSession(SessionOptions(), graph));
  const Tensor xs = Tensor::FromVector<float>({1, 2, 3}, TensorShape({3}));
  EXPECT_FALSE(session->Run({{"x", xs}}, {outputs[0].name()}).ok());
}

TEST(AverageGradients, AddsAndDividesOnTheClientDevice) {
  const Scope root = ops::NewRootScope();
  const Scope tower1 = root.WithDevice("/cpu:1");
  const std::vector<std::vector<Output>> grads = {
      {ops::Const(root, Tensor::FromVector<float>({1, 2}, TensorShape({2})), DT_FLOAT)},
      {ops::Const(tower1, Tensor::FromVector<float>({3, 4}, TensorShape({2})), DT_FLOAT)}};
  ASSERT_OK_AND_ASSIGN(const std::vector<Output> averages, AverageGradients(root, grads, "/cpu:0"));
  ASSERT_EQ(averages.size(), 1u);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  const auto nodes = ByName(graph);
  const NodeDef& div = *nodes.at(averages[0].node()->name());
  EXPECT_EQ(div.op(), "Div");
  EXPECT_EQ(div.device(), kCpu0);
  const NodeDef& sum = *nodes.at(std::string(div.input(0)));
  EXPECT_EQ(sum.op(), "AddN");
  EXPECT_EQ(sum.device(), kCpu0);
  EXPECT_EQ(sum.attr().at("N").i(), 2);
}

TEST(AverageGradients, ComputesTheMeanOverTowersPerVariable) {
  const Scope root = ops::NewRootScope();
  auto constant = [&](std::initializer_list<float> values) -> Output {
    return ops::Const(root, Tensor::FromVector<float>(values, TensorShape({2})), DT_FLOAT);
  };
  const std::vector<std::vector<Output>> grads = {{constant({1, 2}), constant({0, 0})},
                                                  {constant({3, 4}), constant({3, 6})},
                                                  {constant({5, 9}), constant({-3, 3})}};
  ASSERT_OK_AND_ASSIGN(const std::vector<Output> averages, AverageGradients(root, grads, "/cpu:0"));
  ASSERT_EQ(averages.size(), 2u);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(auto session, NewSession(SessionOptions(), graph));
  ASSERT_OK_AND_ASSIGN(auto result, session->Run({}, {averages[0].name(), averages[1].name()}));
  EXPECT_THAT(Values<float>(result[0]), ElementsAre(3, 5));
  EXPECT_THAT(Values<float>(result[1]), ElementsAre(0, 3));
}

TEST(AverageGradients, RejectsTowersWithDifferentGradientCounts) {
  const Scope root = ops::NewRootScope();
  const Output g = ops::Const(root, Tensor::Scalar<float>(1), DT_FLOAT);
  EXPECT_THAT(AverageGradients(root, {{g, g}, {g}}, "/cpu:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tower 1")));
}

TEST(AverageGradients, RejectsNoTowers) {
  const Scope root = ops::NewRootScope();
  EXPECT_THAT(AverageGradients(root, {}, "/cpu:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("tower")));
}

// A linear model x·w with a mean squared loss, trained on a batch split
// over two towers: the averaged tower gradients must equal the gradient of
// the whole batch's loss, since the towers' batches are the same size.
struct TowerGradientRun {
  std::vector<float> averaged;
  std::vector<float> single;
  std::vector<float> predictions;
  std::vector<float> single_predictions;
  std::set<std::string> tower1_devices;  // Where tower_1's computation ran.
};

absl::StatusOr<TowerGradientRun> RunTowerGradients(const std::vector<std::string>& devices,
                                                   const SessionOptions& options) {
  const Scope root = ops::NewRootScope();
  const Scope client = root.WithDevice("/cpu:0");
  const Output x =
      ops::Placeholder(client.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({4, 2}));
  const Output y =
      ops::Placeholder(client.WithOpName("y"), DT_FLOAT, ops::Placeholder::Shape({4, 1}));
  const Variable w(client, "w", Tensor::FromVector<float>({0.5f, -1.f}, TensorShape({2, 1})));

  std::vector<std::vector<Output>> tower_grads;
  const TowerFn tower = [&](const Scope& scope, const std::vector<Output>& inputs,
                            int) -> absl::StatusOr<std::vector<Output>> {
    const Output prediction = ops::MatMul(scope.WithOpName("prediction"), inputs[0], w);
    const Output loss =
        ops::Mean(scope.WithOpName("loss"),
                  ops::Square(scope, ops::Sub(scope, prediction, inputs[1])), {0, 1});
    ASSIGN_OR_RETURN(std::vector<Output> grads, AddGradients(scope, {loss}, {w.value()}));
    tower_grads.push_back(std::move(grads));
    return std::vector<Output>{prediction};
  };
  ASSIGN_OR_RETURN(const std::vector<Output> predictions,
                   ReplicateTowers(root, {x, y}, devices, "/cpu:0", tower));
  ASSIGN_OR_RETURN(const std::vector<Output> averaged,
                   AverageGradients(root, tower_grads, "/cpu:0"));

  const Scope single = client.NewSubScope("single");
  const Output single_prediction = ops::MatMul(single, x, w);
  const Output single_loss =
      ops::Mean(single, ops::Square(single, ops::Sub(single, single_prediction, y)), {0, 1});
  ASSIGN_OR_RETURN(const std::vector<Output> single_grads,
                   AddGradients(single, {single_loss}, {w.value()}));
  const Operation init = GlobalVariablesInitializer(root);
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());

  ASSIGN_OR_RETURN(auto session, NewSession(options, graph));
  RETURN_IF_ERROR(session->Run({}, {}, {init.name()}).status());
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>({1, 2, 3, 4, -1, 0, 2, 2}, TensorShape({4, 2}))},
      {"y", Tensor::FromVector<float>({1, 0, 2, -1}, TensorShape({4, 1}))}};
  RunOptions run_options;
  run_options.trace = true;
  RunMetadata metadata;
  ASSIGN_OR_RETURN(auto values, session->Run(run_options, feeds,
                                             {averaged[0].name(), single_grads[0].name(),
                                              predictions[0].name(), single_prediction.name()},
                                             {}, &metadata));
  TowerGradientRun run{
      Values<float>(values[0]), Values<float>(values[1]), Values<float>(values[2]), Values<float>(values[3]), {}};
  for (const NodeExecStats& stats : metadata.step_stats) {
    // Transfers out of a tower are received where the consumer is.
    const bool transfer = stats.op == "_Send" || stats.op == "_Recv";
    if (!transfer && stats.node_name.starts_with("tower_1/")) {
      run.tower1_devices.insert(stats.device);
    }
  }
  return run;
}

void ExpectTowerGradientsMatchTheSingleTower(const TowerGradientRun& run) {
  // prediction = x·[0.5, -1]: [-1.5, -2.5, -0.5, -1]; residual
  // [-2.5, -2.5, -2.5, 0]; dL/dw = 2/4 · xᵀ·residual = [-3.75, -7.5].
  EXPECT_THAT(run.single, Pointwise(FloatNear(1e-5), {-3.75f, -7.5f}));
  EXPECT_THAT(run.averaged, Pointwise(FloatNear(1e-5), run.single));
  EXPECT_THAT(run.predictions, ElementsAreArray(run.single_predictions));
  EXPECT_THAT(run.predictions, ElementsAre(-1.5f, -2.5f, -0.5f, -1.f));
}

TEST(ReplicateTowers, AveragedTowerGradientsEqualTheWholeBatchGradient) {
  ASSERT_OK_AND_ASSIGN(const TowerGradientRun run,
                       RunTowerGradients({"/cpu:0", "/cpu:0"}, SessionOptions()));
  ExpectTowerGradientsMatchTheSingleTower(run);
}

TEST(ReplicateTowers, AveragedTowerGradientsOnTwoCpuDevices) {
  SessionOptions options;
  options.device_count = {{"CPU", 2}};
  ASSERT_OK_AND_ASSIGN(const TowerGradientRun run,
                       RunTowerGradients({"/cpu:0", "/cpu:1"}, options));
  ExpectTowerGradientsMatchTheSingleTower(run);
  EXPECT_THAT(run.tower1_devices, ElementsAre("/job:localhost/replica:0/task:0/device:CPU:1"));
}

}  // namespace
}  // namespace rill
