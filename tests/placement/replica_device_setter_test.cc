#include "placement/replica_device_setter.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/node_def_util.h"
#include "graph/tensor_shape.h"
#include "ops/registry.h"
#include "placement/placer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;
using ::testing::IsSupersetOf;
using ::testing::Pair;
using ::testing::UnorderedElementsAre;

NodeDef* AddNode(GraphDef& graph, const std::string& name, const std::string& op,
                 const std::vector<std::string>& inputs,
                 const std::map<std::string, AttrValue>& attrs, const std::string& device = "") {
  NodeDef* node = graph.add_node();
  node->set_name(name);
  node->set_op(op);
  for (const std::string& input : inputs) node->add_input(input);
  node->set_device(device);
  for (const auto& [key, value] : attrs) (*node->mutable_attr())[key] = value;
  return node;
}

// A variable of `shape` with its initializer (Assign from a Placeholder)
// and its `_class`-colocated read.
void AddVariable(GraphDef& graph, const std::string& name, const PartialTensorShape& shape,
                 const std::string& device = "") {
  AddNode(graph, name, "VariableV2", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(shape)}}, device);
  AddNode(graph, name + "/init", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}});
  AddNode(graph, name + "/Assign", "Assign", {name, name + "/init"}, {{"T", MakeAttr(DT_FLOAT)}});
  AddNode(
      graph, name + "/read", "Identity", {name},
      {{"T", MakeAttr(DT_FLOAT)}, {"_class", MakeAttr(std::vector<std::string>{"loc:@" + name})}});
}

std::map<std::string, std::string> Devices(const GraphDef& graph) {
  std::map<std::string, std::string> out;
  for (const NodeDef& node : graph.node()) out[node.name()] = node.device();
  return out;
}

ReplicaDeviceSetterOptions TwoPs(PsStrategy strategy = PsStrategy::kRoundRobin) {
  ReplicaDeviceSetterOptions options;
  options.ps_devices = {"/job:ps/task:0", "/job:ps/task:1"};
  options.strategy = strategy;
  return options;
}

TEST(ParsePsStrategy, KnowsBothStrategies) {
  EXPECT_THAT(ParsePsStrategy("round_robin"), IsOkAndHolds(PsStrategy::kRoundRobin));
  EXPECT_THAT(ParsePsStrategy("greedy"), IsOkAndHolds(PsStrategy::kGreedy));
}

TEST(ParsePsStrategy, RejectsUnknownNamingIt) {
  EXPECT_THAT(ParsePsStrategy("random"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'random'")));
}

TEST(ReplicaDeviceSetter, RoundRobinPutsVariablesOnDifferentPsTasks) {
  GraphDef graph;
  AddVariable(graph, "w", PartialTensorShape({4}));
  AddVariable(graph, "b", PartialTensorShape({1}));
  AddNode(graph, "out", "Add", {"w/read", "b/read"}, {{"T", MakeAttr(DT_FLOAT)}});
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("w", "/job:ps/task:0"), Pair("w/Assign", "/job:ps/task:0"),
                            Pair("w/read", "/job:ps/task:0"), Pair("b", "/job:ps/task:1"),
                            Pair("b/Assign", "/job:ps/task:1"), Pair("b/read", "/job:ps/task:1"),
                            Pair("w/init", "/job:worker"), Pair("out", "/job:worker")}));
}

TEST(ReplicaDeviceSetter, RoundRobinWrapsAround) {
  GraphDef graph;
  AddVariable(graph, "a", PartialTensorShape({1}));
  AddVariable(graph, "b", PartialTensorShape({1}));
  AddVariable(graph, "c", PartialTensorShape({1}));
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("a", "/job:ps/task:0"), Pair("b", "/job:ps/task:1"),
                            Pair("c", "/job:ps/task:0")}));
}

TEST(ReplicaDeviceSetter, GreedyPutsVariableOnLightestTask) {
  GraphDef graph;
  AddVariable(graph, "big", PartialTensorShape({100, 10}));
  AddVariable(graph, "small1", PartialTensorShape({10}));
  AddVariable(graph, "small2", PartialTensorShape({10}));
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(PsStrategy::kGreedy), &graph));
  EXPECT_THAT(
      Devices(graph),
      IsSupersetOf({Pair("big", "/job:ps/task:0"), Pair("small1", "/job:ps/task:1"),
                    Pair("small2", "/job:ps/task:1"), Pair("small2/Assign", "/job:ps/task:1")}));
}

TEST(ReplicaDeviceSetter, GreedyTieGoesToLowestIndex) {
  GraphDef graph;
  AddVariable(graph, "a", PartialTensorShape({4}));
  AddVariable(graph, "b", PartialTensorShape({4}));
  AddVariable(graph, "c", PartialTensorShape({4}));
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(PsStrategy::kGreedy), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("a", "/job:ps/task:0"), Pair("b", "/job:ps/task:1"),
                            Pair("c", "/job:ps/task:0")}));
}

TEST(ReplicaDeviceSetter, GreedyCountsUnknownDimensionsAsOne) {
  GraphDef graph;
  AddVariable(graph, "a", PartialTensorShape({-1, 10}));  // 40 bytes.
  AddVariable(graph, "b", PartialTensorShape({9}));       // 36 bytes.
  AddVariable(graph, "c", PartialTensorShape({1}));
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(PsStrategy::kGreedy), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("a", "/job:ps/task:0"), Pair("b", "/job:ps/task:1"),
                            Pair("c", "/job:ps/task:1")}));
}

TEST(ReplicaDeviceSetter, NodeRequestedFieldsWin) {
  GraphDef graph;
  AddVariable(graph, "w", PartialTensorShape({1}), "/device:CPU:0");
  AddNode(graph, "x", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}}, "/gpu:0");
  AddNode(graph, "y", "Placeholder", {}, {{"dtype", MakeAttr(DT_FLOAT)}}, "/job:chief");
  ReplicaDeviceSetterOptions options;
  options.ps_devices = {"/job:ps/task:0"};
  options.worker_device = "/job:worker/task:2";
  ASSERT_OK(ApplyReplicaDeviceSetter(options, &graph));
  const auto devices = Devices(graph);
  // Its colocation group (initializer, read) goes with it.
  EXPECT_EQ(devices.at("w"), "/job:ps/task:0/device:CPU:0");
  EXPECT_EQ(devices.at("w/Assign"), "/job:ps/task:0/device:CPU:0");
  EXPECT_EQ(devices.at("w/read"), "/job:ps/task:0/device:CPU:0");
  EXPECT_EQ(devices.at("x"), "/job:worker/task:2/device:GPU:0");
  EXPECT_EQ(devices.at("y"), "/job:chief/task:2");
}

TEST(ReplicaDeviceSetter, WithoutPsDevicesEverythingGoesToWorker) {
  GraphDef graph;
  AddVariable(graph, "w", PartialTensorShape({1}));
  ReplicaDeviceSetterOptions options;
  ASSERT_OK(ApplyReplicaDeviceSetter(options, &graph));
  for (const auto& [name, device] : Devices(graph)) EXPECT_EQ(device, "/job:worker") << name;
}

TEST(ReplicaDeviceSetter, LocalPsDevices) {
  GraphDef graph;
  AddVariable(graph, "w", PartialTensorShape({1}));
  ReplicaDeviceSetterOptions options;
  options.ps_devices = {"/device:CPU:1"};
  options.worker_device = "/device:CPU:0";
  ASSERT_OK(ApplyReplicaDeviceSetter(options, &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("w", "/device:CPU:1"), Pair("w/read", "/device:CPU:1"),
                            Pair("w/init", "/device:CPU:0")}));
}

TEST(ReplicaDeviceSetter, ResourceVariableGroupGoesToOnePsDevice) {
  GraphDef graph;
  AddNode(graph, "other", "VariableV2", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(PartialTensorShape({1}))}});
  AddNode(graph, "h", "VarHandleOp", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(PartialTensorShape({}))}});
  AddNode(graph, "read", "ReadVariableOp", {"h"}, {{"dtype", MakeAttr(DT_FLOAT)}});
  AddNode(graph, "neg", "Neg", {"read"}, {{"T", MakeAttr(DT_FLOAT)}});
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("h", "/job:ps/task:1"), Pair("read", "/job:ps/task:1"),
                            Pair("neg", "/job:worker")}));
}

TEST(ReplicaDeviceSetter, RejectsMalformedPsDeviceNamingOption) {
  GraphDef graph;
  AddVariable(graph, "w", PartialTensorShape({1}));
  ReplicaDeviceSetterOptions options;
  options.ps_devices = {"/job:ps/task:0", "/job:ps/task:x"};
  EXPECT_THAT(ApplyReplicaDeviceSetter(options, &graph),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("ps_devices[1]"), HasSubstr("bad task 'x'"))));
}

TEST(ReplicaDeviceSetter, RejectsMalformedWorkerDevice) {
  GraphDef graph;
  ReplicaDeviceSetterOptions options;
  options.worker_device = "worker";
  EXPECT_THAT(ApplyReplicaDeviceSetter(options, &graph),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("worker_device")));
}

TEST(ReplicaDeviceSetter, RejectsGraphThatDoesNotImport) {
  GraphDef graph;
  AddNode(graph, "x", "NoSuchOp", {}, {});
  EXPECT_THAT(ApplyReplicaDeviceSetter(TwoPs(), &graph),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NoSuchOp")));
}

// TensorFlow's device_setter_test.py, ported: the Python variable's ops
// (VariableV2, its initializer and its read, built in the same device
// scope) are AddVariable's; `a = v + w` is an Add of the reads. Its
// merge_devices=False case has no counterpart: rill always merges, as
// TensorFlow does by default.
GraphDef VariablesAndSum(const std::map<std::string, std::string>& devices,
                         const std::string& sum_device = "") {
  GraphDef graph;
  std::vector<std::string> reads;
  for (const std::string name : {"v", "w", "x"}) {
    if (!devices.contains(name)) continue;
    AddVariable(graph, name, PartialTensorShape({2}), devices.at(name));
    reads.push_back(name + "/read");
  }
  AddNode(graph, "a", "AddN", reads,
          {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(int64_t(reads.size()))}}, sum_device);
  return graph;
}

ReplicaDeviceSetterOptions Setter(std::vector<std::string> ps, std::string worker = "/job:worker") {
  ReplicaDeviceSetterOptions options;
  options.ps_devices = std::move(ps);
  options.worker_device = std::move(worker);
  return options;
}

TEST(TfDeviceSetterCases, CPUOverride) {
  GraphDef graph = VariablesAndSum({{"v", "/cpu:0"}, {"w", ""}}, "/cpu:0");
  ASSERT_OK(ApplyReplicaDeviceSetter(Setter({"/job:ps/task:0", "/job:ps/task:1"}), &graph));
  EXPECT_THAT(
      Devices(graph),
      IsSupersetOf({Pair("v", "/job:ps/task:0/device:CPU:0"),
                    Pair("v/Assign", "/job:ps/task:0/device:CPU:0"), Pair("w", "/job:ps/task:1"),
                    Pair("w/Assign", "/job:ps/task:1"), Pair("a", "/job:worker/device:CPU:0")}));
}

TEST(TfDeviceSetterCases, Resource) {
  GraphDef graph;
  AddNode(graph, "v", "VarHandleOp", {},
          {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(PartialTensorShape({2}))}});
  ASSERT_OK(ApplyReplicaDeviceSetter(Setter({"/job:ps/task:0", "/job:ps/task:1"}), &graph));
  EXPECT_EQ(Devices(graph).at("v"), "/job:ps/task:0");
}

TEST(TfDeviceSetterCases, PS2TasksWithClusterSpec) {
  GraphDef graph = VariablesAndSum({{"v", ""}, {"w", ""}});
  ASSERT_OK(ApplyReplicaDeviceSetter(Setter({"/job:ps/task:0", "/job:ps/task:1"}), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("v", "/job:ps/task:0"), Pair("v/Assign", "/job:ps/task:0"),
                            Pair("w", "/job:ps/task:1"), Pair("w/Assign", "/job:ps/task:1"),
                            Pair("a", "/job:worker")}));
}

// A variable pinned to another job keeps it and takes no ps task: the
// next ps variable gets task 1, not 2.
TEST(TfDeviceSetterCases, PS2TasksPinVariableToJob) {
  GraphDef graph = VariablesAndSum({{"v", ""}, {"w", "/job:moon"}, {"x", "/job:ps"}});
  ASSERT_OK(ApplyReplicaDeviceSetter(Setter({"/job:ps/task:0", "/job:ps/task:1"}), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("v", "/job:ps/task:0"), Pair("v/Assign", "/job:ps/task:0"),
                            Pair("w", "/job:moon"), Pair("w/Assign", "/job:moon"),
                            Pair("x", "/job:ps/task:1"), Pair("x/Assign", "/job:ps/task:1"),
                            Pair("a", "/job:worker")}));
}

TEST(TfDeviceSetterCases, PS2TasksUseCpuForPS) {
  GraphDef graph = VariablesAndSum({{"v", ""}, {"w", "/job:moon"}});
  ASSERT_OK(ApplyReplicaDeviceSetter(Setter({"/cpu:0"}), &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("v", "/device:CPU:0"), Pair("v/Assign", "/device:CPU:0"),
                            Pair("w", "/job:moon/device:CPU:0"),
                            Pair("w/Assign", "/job:moon/device:CPU:0"), Pair("a", "/job:worker")}));
}

TEST(TfDeviceSetterCases, PS2TasksWithDevice) {
  GraphDef graph = VariablesAndSum({{"v", ""}, {"w", ""}});
  ASSERT_OK(ApplyReplicaDeviceSetter(Setter({"/job:moon/task:0", "/job:moon/task:1"}, "/job:sun"),
                                     &graph));
  EXPECT_THAT(Devices(graph),
              IsSupersetOf({Pair("v", "/job:moon/task:0"), Pair("w", "/job:moon/task:1"),
                            Pair("w/Assign", "/job:moon/task:1"), Pair("a", "/job:sun")}));
}

TEST(TfDeviceSetterCases, PS2TasksWithCPUConstraint) {
  GraphDef graph = VariablesAndSum({{"v", ""}, {"w", ""}});
  ASSERT_OK(ApplyReplicaDeviceSetter(
      Setter({"/job:moon/task:0/cpu:0", "/job:moon/task:1/cpu:0"}, "/job:sun"), &graph));
  EXPECT_THAT(Devices(graph), IsSupersetOf({Pair("v", "/job:moon/task:0/device:CPU:0"),
                                            Pair("v/Assign", "/job:moon/task:0/device:CPU:0"),
                                            Pair("w", "/job:moon/task:1/device:CPU:0"),
                                            Pair("w/Assign", "/job:moon/task:1/device:CPU:0"),
                                            Pair("a", "/job:sun")}));
}

// Variables pinned to ps tasks by device scopes keep them, and what is
// colocated with each (an accumulator beside it) goes with it, whatever
// the strategy's turn.
TEST(ReplicaDeviceSetter, PinnedVariablesKeepTheirTasksAndColocatedNodesFollow) {
  GraphDef graph;
  AddVariable(graph, "v0", PartialTensorShape({2}), "/job:ps/task:1");
  AddVariable(graph, "v1", PartialTensorShape({2}), "/job:ps/task:0");
  for (const std::string var : {"v0", "v1"}) {
    AddNode(graph, var + "/accumulator", "ConditionalAccumulator", {},
            {{"dtype", MakeAttr(DT_FLOAT)},
             {"shape", MakeAttr(PartialTensorShape({2}))},
             {"_class", MakeAttr(std::vector<std::string>{"loc:@" + var})}});
  }
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(), &graph));
  EXPECT_THAT(
      Devices(graph),
      IsSupersetOf({Pair("v0", "/job:ps/task:1"), Pair("v0/accumulator", "/job:ps/task:1"),
                    Pair("v1", "/job:ps/task:0"), Pair("v1/accumulator", "/job:ps/task:0")}));
}

TEST(ReplicaDeviceSetter, ColocatedNodesAskingForDifferentDevicesAreRefusedNamingBoth) {
  GraphDef graph;
  AddVariable(graph, "v", PartialTensorShape({2}), "/job:ps/task:1");
  AddNode(graph, "r", "Identity", {"v"},
          {{"T", MakeAttr(DT_FLOAT)}, {"_class", MakeAttr(std::vector<std::string>{"loc:@v"})}},
          "/job:ps/task:0");
  EXPECT_THAT(
      ApplyReplicaDeviceSetter(TwoPs(), &graph),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'v' (/job:ps/task:1)"), HasSubstr("'r' (/job:ps/task:0)"))));
}

TEST(ReplicaDeviceSetter, PlacesRegressionCheckpointGraphOnPsAndWorker) {
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(::rill::testing::TestDataDir() +
                                                  "/tf_graphs/rust_regression_ckpt.pb"));
  ASSERT_OK(ApplyReplicaDeviceSetter(TwoPs(), &def));
  const auto requested = Devices(def);
  EXPECT_EQ(requested.at("w"), "/job:ps/task:0");
  EXPECT_EQ(requested.at("b"), "/job:ps/task:1");

  ASSERT_OK_AND_ASSIGN(auto graph, ImportGraphDef(def, StandardOps()));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}, {"worker", 1}}));
  ASSERT_OK_AND_ASSIGN(Placement placement, PlaceGraph(*graph, devices, {}));
  const std::string w_device = placement.device(*graph->FindNode("w"));
  const std::string b_device = placement.device(*graph->FindNode("b"));
  EXPECT_EQ(w_device, "/job:ps/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(b_device, "/job:ps/replica:0/task:1/device:CPU:0");

  std::set<std::string> on_ps;
  int updates = 0;
  for (const Node* node : graph->nodes()) {
    const std::string& device = placement.device(*node);
    if (node->op() == "Assign" || node->op() == "ApplyGradientDescent") {
      ++updates;
      EXPECT_EQ(device, placement.device(*node->input_edge(0)->src)) << node->name();
    }
    if (device.starts_with("/job:ps")) {
      on_ps.insert(node->name());
    } else {
      EXPECT_EQ(device, "/job:worker/replica:0/task:0/device:CPU:0") << node->name();
    }
  }
  EXPECT_EQ(updates, 6);  // Two initializers, two updates, two restores.
  EXPECT_THAT(on_ps,
              UnorderedElementsAre("w", "w/Assign", "w/read", "train/update_w/ApplyGradientDescent",
                                   "save/Assign_1", "b", "b/Assign", "b/read",
                                   "train/update_b/ApplyGradientDescent", "save/Assign"));
}

}  // namespace
}  // namespace rill
