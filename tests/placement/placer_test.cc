#include "placement/placer.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "graph/graph_io.h"
#include "graph/node_def_util.h"
#include "kernels/framework/kernel_registry.h"
#include "ops/registry.h"
#include "placement/colocation.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::Each;
using ::testing::Field;
using ::testing::HasSubstr;
using ::testing::Not;
using ::testing::StartsWith;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";

NodeDef MakeNodeDef(const std::string& name, const std::string& op,
                    const std::vector<std::string>& inputs, const std::string& device,
                    const std::map<std::string, AttrValue>& attrs) {
  NodeDef node;
  node.set_name(name);
  node.set_op(op);
  for (const std::string& input : inputs) node.add_input(input);
  node.set_device(device);
  for (const auto& [key, value] : attrs) (*node.mutable_attr())[key] = value;
  return node;
}

NodeDef Placeholder(const std::string& name, const std::string& device = "",
                    DataType dtype = DT_FLOAT) {
  return MakeNodeDef(name, "Placeholder", {}, device, {{"dtype", MakeAttr(dtype)}});
}

NodeDef Variable(const std::string& name, const std::string& device = "") {
  return MakeNodeDef(name, "VariableV2", {}, device,
                     {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(PartialTensorShape({2}))}});
}

NodeDef Assign(const std::string& name, const std::string& var, const std::string& value,
               const std::string& device = "") {
  return MakeNodeDef(name, "Assign", {var, value}, device, {{"T", MakeAttr(DT_FLOAT)}});
}

NodeDef Unary(const std::string& op, const std::string& name, const std::string& input,
              const std::string& device = "") {
  return MakeNodeDef(name, op, {input}, device, {{"T", MakeAttr(DT_FLOAT)}});
}

NodeDef WithClass(NodeDef node, const std::vector<std::string>& locs) {
  (*node.mutable_attr())["_class"] = MakeAttr(locs);
  return node;
}

absl::StatusOr<std::unique_ptr<Graph>> Build(const std::vector<NodeDef>& nodes) {
  GraphDef def;
  for (const NodeDef& node : nodes) *def.add_node() = node;
  return ImportGraphDef(def, StandardOps());
}

KernelFactory Unused() {
  return [](const OpKernelConstruction&) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    return absl::UnimplementedError("placer tests build no kernels");
  };
}

// Kernels for the listed ops on the listed device types only.
std::unique_ptr<KernelRegistry> Kernels(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& ops) {
  auto registry = std::make_unique<KernelRegistry>();
  for (const auto& [op, types] : ops) {
    for (const std::string& type : types) registry->Register(KernelDef(op).Device(type), Unused());
  }
  return registry;
}

const NodePlacement& At(const Graph& graph, const Placement& placement, const std::string& name) {
  const Node* node = graph.FindNode(name);
  EXPECT_NE(node, nullptr) << name;
  return placement.nodes[node->id()];
}

TEST(Placer, HonoursExplicitRequest) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x", "/cpu:1")}));
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(2), {}));
  EXPECT_EQ(At(*graph, p, "n").device, kCpu1);
  EXPECT_EQ(At(*graph, p, "n").reason, "requested /device:CPU:1");
  EXPECT_EQ(p.device(*graph->FindNode("n")), kCpu1);
}

TEST(Placer, UnrequestedNodesGoToFirstDeviceWithoutDefault) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x")}));
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(2), {}));
  EXPECT_EQ(At(*graph, p, "n").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "n").reason,
            "no request: client default /job:localhost/replica:0/task:0");
}

TEST(Placer, CompletesPartialRequestFromDefault) {
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Placeholder("x", "/job:worker"), Unary("Neg", "n", "x", "/cpu:0")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 1}, {"worker", 2}}));
  PlacerOptions options;
  options.default_device = "/job:worker/task:1";
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, options));
  EXPECT_EQ(At(*graph, p, "x").device, "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "x").reason,
            "requested /job:worker, completed from default /job:worker/task:1");
  EXPECT_EQ(At(*graph, p, "n").device, "/job:worker/replica:0/task:1/device:CPU:0");
}

TEST(Placer, UnrequestedNodesGoToDefaultDevice) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 1}, {"worker", 2}}));
  PlacerOptions options;
  options.default_device = "/job:worker/task:1";
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, options));
  EXPECT_EQ(At(*graph, p, "n").device, "/job:worker/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "n").reason, "no request: client default /job:worker/task:1");
}

TEST(Placer, RequestForOtherJobKeepsItsJob) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x", "/job:ps")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}, {"worker", 2}}));
  PlacerOptions options;
  options.default_device = "/job:worker/replica:0/task:1/device:CPU:0";
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, options));
  // The default's task belongs to the worker job, so it does not pick the ps task.
  EXPECT_EQ(At(*graph, p, "x").device, "/job:ps/replica:0/task:0/device:CPU:0");
}

TEST(Placer, ColocatesByRefEdge) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Variable("w", "/job:ps/task:1"), Placeholder("v"),
                                          Assign("w/Assign", "w", "v")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}, {"worker", 1}}));
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, {}));
  EXPECT_EQ(At(*graph, p, "w").device, "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "w").reason, "requested /job:ps/task:1");
  EXPECT_EQ(At(*graph, p, "w/Assign").device, "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "w/Assign").reason, "colocated with 'w' (ref edge)");
  EXPECT_EQ(At(*graph, p, "v").device, "/job:ps/replica:0/task:0/device:CPU:0");
}

TEST(Placer, ColocatesByClassAttr) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Variable("w", "/job:ps/task:1"),
                                          WithClass(Unary("Identity", "w/read", "w"), {"loc:@w"}),
                                          Unary("Identity", "other_read", "w")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}, {"worker", 1}}));
  PlacerOptions options;
  options.default_device = "/job:worker";
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, options));
  EXPECT_EQ(At(*graph, p, "w/read").device, "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "w/read").reason, "colocated with 'w' (_class attr)");
  // Reading a variable without a colocation attr is an ordinary value edge.
  EXPECT_EQ(At(*graph, p, "other_read").device, "/job:worker/replica:0/task:0/device:CPU:0");
}

TEST(Placer, RequestOfAnyMemberMovesTheWholeGroup) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Variable("w"), Placeholder("v"),
                                          Assign("w/Assign", "w", "v", "/job:ps/task:1")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}}));
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, {}));
  EXPECT_EQ(At(*graph, p, "w").device, "/job:ps/replica:0/task:1/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "w").reason, "requested /job:ps/task:1 by 'w/Assign'");
  EXPECT_EQ(At(*graph, p, "w/Assign").device, "/job:ps/replica:0/task:1/device:CPU:0");
}

// As in TensorFlow, the consumer of a variable goes where the variable
// goes: its own request gives way.
TEST(Placer, RefEdgeConsumerFollowsItsVariableOverItsOwnRequest) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Variable("w", "/job:ps/task:0"), Placeholder("v"),
                                          Assign("w/Assign", "w", "v", "/job:ps/task:1")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}}));
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, devices, {}));
  EXPECT_EQ(At(*graph, p, "w/Assign").device, "/job:ps/replica:0/task:0/device:CPU:0");
  EXPECT_EQ(At(*graph, p, "w/Assign").reason,
            "colocated with 'w' (ref edge); its request /job:ps/task:1 gave way to its source's");
}

TEST(Placer, ConflictingClassRequestsNameBothNodesAndRequests) {
  ASSERT_OK_AND_ASSIGN(
      auto graph, Build({Variable("w", "/job:ps/task:0"),
                         WithClass(Unary("Identity", "r", "w", "/job:ps/task:1"), {"loc:@w"})}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 2}}));
  EXPECT_THAT(PlaceGraph(*graph, devices, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot assign a device for operation 'r': Cannot colocate nodes 'w' "
                       "(requested /job:ps/task:0) and 'r' (requested /job:ps/task:1): Cannot "
                       "merge devices with incompatible tasks: '0' and '1'"));
}

TEST(Placer, ConflictingJobsInGroupFailEvenWithSoftPlacement) {
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Variable("w", "/job:ps"),
                              WithClass(Unary("Identity", "r", "w", "/job:worker"), {"loc:@w"})}));
  ASSERT_OK_AND_ASSIGN(DeviceSet devices, DeviceSet::ForCluster({{"ps", 1}, {"worker", 1}}));
  PlacerOptions options;
  options.allow_soft_placement = true;
  EXPECT_THAT(PlaceGraph(*graph, devices, options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("Cannot assign a device for operation 'r': "),
                             HasSubstr("'w' (requested /job:ps) and 'r' (requested /job:worker)"),
                             HasSubstr("incompatible jobs: 'ps' and 'worker'"))));
}

TEST(Placer, ConflictingTypesInGroupNeedSoftPlacement) {
  ASSERT_OK_AND_ASSIGN(
      auto graph, Build({Variable("w", "/device:CPU:0"),
                         WithClass(Unary("Identity", "r", "w", "/device:GPU:0"), {"loc:@w"})}));
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1, 1), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("incompatible types: 'CPU' and 'GPU'")));
  PlacerOptions options;
  options.allow_soft_placement = true;
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 1), options));
  // VariableV2 and Identity have GPU kernels, and a GPU is preferred.
  EXPECT_EQ(At(*graph, p, "w").device, kGpu0);
  EXPECT_EQ(At(*graph, p, "r").device, kGpu0);
  EXPECT_EQ(At(*graph, p, "w").reason,
            std::string("soft placement: the group's requests name different devices, took ") +
                kGpu0 + " (GPU kernel preferred)");
}

TEST(Placer, SoftPlacementFallsBackToGpuZero) {
  auto kernels = Kernels({{"Neg", {"CPU", "GPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x", "GPU:11")}));
  PlacerOptions options;
  options.allow_soft_placement = true;
  options.kernels = kernels.get();
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 2), options));
  EXPECT_EQ(At(*graph, p, "n").device, kGpu0);
  EXPECT_EQ(At(*graph, p, "n").reason,
            std::string("soft placement: no device matches /device:GPU:11, took ") + kGpu0);
}

TEST(Placer, SoftPlacementFallsBackToCpuWithoutGpus) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x", "/gpu:0")}));
  PlacerOptions options;
  options.allow_soft_placement = true;
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1), options));
  EXPECT_EQ(At(*graph, p, "n").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "n").reason,
            std::string("soft placement: no device matches /device:GPU:0, took ") + kCpu0);
}

TEST(Placer, MissingDeviceIsErrorWithoutSoftPlacement) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x", "/gpu:0")}));
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       std::string("Cannot assign a device for operation 'n': Could not satisfy "
                                   "explicit device specification '/device:GPU:0' because no "
                                   "devices matching that specification are registered in this "
                                   "process; available devices: ") +
                           kCpu0));
}

TEST(Placer, UnknownJobIsErrorEvenWithSoftPlacement) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x", "/job:ps/device:GPU:0")}));
  PlacerOptions options;
  options.allow_soft_placement = true;
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Could not satisfy explicit device specification "
                                 "'/job:ps/device:GPU:0' because no devices matching")));
}

TEST(Placer, MissingKernelIsErrorWithoutSoftPlacement) {
  auto kernels = Kernels({{"Neg", {"CPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Placeholder("x"), Unary("Neg", "n", "x", "/device:GPU:0")}));
  PlacerOptions options;
  options.kernels = kernels.get();
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1, 1), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("Cannot assign a device for operation 'n': Could not "
                                        "satisfy explicit device specification '/device:GPU:0'"),
                             HasSubstr("node 'n' (Neg) has no GPU kernel"))));
}

TEST(Placer, MissingKernelWithSoftPlacementTakesTypeWithKernel) {
  auto kernels = Kernels({{"Neg", {"CPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Placeholder("x"), Unary("Neg", "n", "x", "/device:GPU:0")}));
  PlacerOptions options;
  options.kernels = kernels.get();
  options.allow_soft_placement = true;
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 1), options));
  EXPECT_EQ(At(*graph, p, "n").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "n").reason,
            std::string("soft placement: node 'n' (Neg) has no GPU kernel, took ") + kCpu0);
}

TEST(Placer, GroupGoesToTypeWithKernelsForEveryMember) {
  auto kernels = Kernels({{"VariableV2", {"CPU", "GPU"}}, {"Assign", {"CPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Variable("w", "/device:GPU:0"), Placeholder("v"),
                                          Assign("w/Assign", "w", "v")}));
  PlacerOptions options;
  options.kernels = kernels.get();
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1, 1), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("Cannot assign a device for operation 'w': "),
                             HasSubstr("node 'w/Assign' (Assign) has no GPU kernel"))));
  options.allow_soft_placement = true;
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 1), options));
  EXPECT_EQ(At(*graph, p, "w").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "w/Assign").device, kCpu0);
  EXPECT_THAT(At(*graph, p, "w").reason, HasSubstr("'w/Assign' (Assign) has no GPU kernel"));
}

TEST(Placer, GroupWithoutCommonKernelTypeFails) {
  auto kernels = Kernels({{"VariableV2", {"GPU"}}, {"Assign", {"CPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Variable("w"), Placeholder("v"), Assign("w/Assign", "w", "v")}));
  PlacerOptions options;
  options.kernels = kernels.get();
  options.allow_soft_placement = true;
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1, 1), options),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Cannot colocate nodes 'w/Assign' and 'w' because no device type "
                                 "supports both of those nodes and the other nodes colocated with "
                                 "them: Assign: CPU; VariableV2: GPU")));
}

TEST(Placer, PrefersGpuWhenGroupHasGpuKernels) {
  auto kernels = Kernels({{"Neg", {"CPU", "GPU"}}, {"Abs", {"CPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Placeholder("x"), Unary("Neg", "n", "x"), Unary("Abs", "a", "x"),
                              Unary("Neg", "on_cpu", "x", "/device:CPU:*")}));
  PlacerOptions options;
  options.kernels = kernels.get();
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 1), options));
  EXPECT_EQ(At(*graph, p, "n").device, kGpu0);
  EXPECT_THAT(At(*graph, p, "n").reason, HasSubstr("GPU kernel preferred"));
  EXPECT_EQ(At(*graph, p, "a").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "on_cpu").device, kCpu0);
  // Placeholder has no kernel anywhere: set order.
  EXPECT_EQ(At(*graph, p, "x").device, kCpu0);
}

TEST(Placer, DefaultDeviceWithoutKernelIsOnlyAPreference) {
  auto kernels = Kernels({{"Neg", {"CPU"}}});
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x"), Unary("Neg", "n", "x")}));
  PlacerOptions options;
  options.kernels = kernels.get();
  options.default_device = kGpu0;
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 1), options));
  EXPECT_EQ(At(*graph, p, "x").device, kGpu0);
  EXPECT_EQ(At(*graph, p, "n").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "n").reason, std::string("no request: nothing on client default ") +
                                           kGpu0 + " runs the group, took " + kCpu0);
}

TEST(Placer, OpWithoutAnyKernelIsPlacedByRequest) {
  ASSERT_OK_AND_ASSIGN(
      auto graph,
      Build({Placeholder("prefix", "", DT_STRING), Placeholder("names", "", DT_STRING),
             Placeholder("slices", "", DT_STRING), Placeholder("t"),
             MakeNodeDef("save", "SaveV2", {"prefix", "names", "slices", "t"}, "/device:GPU:0",
                         {{"dtypes", MakeAttr(DataTypeVector{DT_FLOAT})}})}));
  // A registry without the SaveV2 kernel: the request alone decides.
  const KernelRegistry no_kernels;
  PlacerOptions options;
  options.kernels = &no_kernels;
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(1, 1), options));
  EXPECT_EQ(At(*graph, p, "save").device, kGpu0);
  EXPECT_EQ(At(*graph, p, "save").reason, "requested /device:GPU:0");
}

TEST(Placer, RejectsMalformedRequest) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x", "/job:ps/task:x")}));
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1), {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(StartsWith("Cannot assign a device for operation 'x': "),
                             HasSubstr("Malformed device name '/job:ps/task:x'"))));
}

TEST(Placer, RejectsMalformedDefaultDevice) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x")}));
  PlacerOptions options;
  options.default_device = "/job:";
  EXPECT_THAT(PlaceGraph(*graph, DeviceSet::Local(1), options),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("default_device")));
}

TEST(Placer, RejectsEmptyDeviceSet) {
  ASSERT_OK_AND_ASSIGN(auto graph, Build({Placeholder("x")}));
  ASSERT_OK_AND_ASSIGN(DeviceSet none, DeviceSet::Create({}));
  EXPECT_THAT(PlaceGraph(*graph, none, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot assign a device for operation 'x': the device set is empty"));
}

TEST(Placer, PlacesPartialDeviceNamesGraph) {
  ASSERT_OK_AND_ASSIGN(GraphDef def, ReadGraphDef(::rill::testing::TestDataDir() +
                                                  "/tf_graphs/partial_device_names.pbtxt"));
  ASSERT_OK_AND_ASSIGN(auto graph, ImportGraphDef(def, StandardOps()));
  ASSERT_OK_AND_ASSIGN(Placement p, PlaceGraph(*graph, DeviceSet::Local(2), {}));
  EXPECT_EQ(At(*graph, p, "Sub").device, kCpu1);
  EXPECT_EQ(At(*graph, p, "Add").device, kCpu0);
  EXPECT_EQ(At(*graph, p, "Add").reason, "requested /job:localhost/replica:0/task:0");
  EXPECT_EQ(At(*graph, p, "Mul").device, kCpu0);
  EXPECT_THAT(p.nodes, Each(Field(&NodePlacement::reason, Not(""))));
}

TEST(ColocationGroups, JoinsRefEdgesAndClassAttrs) {
  ASSERT_OK_AND_ASSIGN(auto graph,
                       Build({Variable("w"), Placeholder("v"), Assign("w/Assign", "w", "v"),
                              WithClass(Unary("Identity", "w/read", "w"), {"loc:@w"}),
                              Unary("Identity", "plain_read", "w"), Variable("b")}));
  const std::vector<int> groups = ColocationGroups(*graph);
  auto group = [&](const char* name) { return groups[graph->FindNode(name)->id()]; };
  EXPECT_EQ(group("w/Assign"), group("w"));
  EXPECT_EQ(group("w/read"), group("w"));
  EXPECT_NE(group("plain_read"), group("w"));
  EXPECT_NE(group("v"), group("w"));
  EXPECT_NE(group("b"), group("w"));
}

TEST(ColocationGroups, JoinsResourceEdges) {
  ASSERT_OK_AND_ASSIGN(
      auto graph,
      Build({MakeNodeDef(
                 "h", "VarHandleOp", {}, "",
                 {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(PartialTensorShape({}))}}),
             MakeNodeDef("read", "ReadVariableOp", {"h"}, "", {{"dtype", MakeAttr(DT_FLOAT)}}),
             Unary("Neg", "n", "read")}));
  const std::vector<int> groups = ColocationGroups(*graph);
  EXPECT_EQ(groups[graph->FindNode("read")->id()], groups[graph->FindNode("h")->id()]);
  EXPECT_NE(groups[graph->FindNode("n")->id()], groups[graph->FindNode("h")->id()]);
}

TEST(ColocationGroups, IgnoresClassNamingMissingNode) {
  ASSERT_OK_AND_ASSIGN(
      auto graph,
      Build({Placeholder("x"), WithClass(Unary("Neg", "n", "x"), {"loc:@nowhere", "other"})}));
  const std::vector<int> groups = ColocationGroups(*graph);
  EXPECT_NE(groups[graph->FindNode("n")->id()], groups[graph->FindNode("x")->id()]);
}

}  // namespace
}  // namespace rill
