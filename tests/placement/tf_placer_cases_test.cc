// The cases of TensorFlow's placer_test.cc about colocation (`_class`
// groups, reference and resource edges) and device requests, ported with
// TensorFlow's expected placements. Its fake devices become 10 CPUs and 10
// GPUs of /job:a/replica:0/task:0; its test ops, ops of this file's own
// registry, with kernels on the device types TensorFlow's test gives them.
// The generator heuristics ("a generator follows its single consumer",
// "metadata ops stay with their input") are not ported: rill's placer
// does not have them (tf_placer_cases_test.cc's closing comment).
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/graph.h"
#include "graph/node_def_util.h"
#include "graph/op_def_builder.h"
#include "graph/op_registry.h"
#include "graph/status_macros.h"
#include "kernels/framework/kernel_registry.h"
#include "placement/device_set.h"
#include "placement/placer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::HasSubstr;

constexpr char kCpu[] = "CPU";
constexpr char kGpu[] = "GPU";

// TensorFlow's test ops, and the device types each has kernels for.
const std::vector<std::pair<OpDefBuilder, std::vector<std::string>>>& TestOps() {
  static const auto* ops = new std::vector<std::pair<OpDefBuilder, std::vector<std::string>>>{
      {OpDefBuilder("TestVariable").Output("o: Ref(float)"), {kCpu, kGpu}},
      {OpDefBuilder("VariableCPU").Output("o: Ref(float)"), {kCpu}},
      {OpDefBuilder("VariableGPU").Output("o: Ref(float)"), {kGpu}},
      {OpDefBuilder("TestAdd").Input("a: float").Input("b: float").Output("o: float"),
       {kCpu, kGpu}},
      {OpDefBuilder("TestRelu").Input("i: float").Output("o: float"), {kCpu, kGpu}},
      {OpDefBuilder("ReluCPU").Input("i: float").Output("o: float"), {kCpu}},
      {OpDefBuilder("ReluGPU").Input("i: float").Output("o: float"), {kGpu}},
      {OpDefBuilder("TestAssign").Input("i: Ref(float)").Input("v: float"), {kCpu, kGpu}},
      {OpDefBuilder("AssignCPU").Input("i: Ref(float)").Input("v: float"), {kCpu}},
      {OpDefBuilder("AssignGPU").Input("i: Ref(float)").Input("v: float"), {kGpu}},
      {OpDefBuilder("TestInput").Output("a: float").Output("b: float"), {kCpu}},
      {OpDefBuilder("TestCPUGPUOutput").Output("a: float"), {kCpu, kGpu}},
      {OpDefBuilder("TestGPUOutput").Output("a: float"), {kGpu}},
      {OpDefBuilder("TestDevice").Output("a: float").Output("b: float"), {kGpu}},
      {OpDefBuilder("TestDeviceEnforce").Input("a: Ref(float)").Output("b: float"), {kCpu, kGpu}},
      {OpDefBuilder("TestHandleVariable").Output("o: resource"), {kCpu, kGpu}},
      {OpDefBuilder("HandleVariableCPU").Output("o: resource"), {kCpu}},
      {OpDefBuilder("HandleVariableGPU").Output("o: resource"), {kGpu}},
      {OpDefBuilder("TestHandleAssign").Input("i: resource").Input("v: float"), {kCpu, kGpu}},
      {OpDefBuilder("HandleAssignCPU").Input("i: resource").Input("v: float"), {kCpu}},
      {OpDefBuilder("HandleAssignGPU").Input("i: resource").Input("v: float"), {kGpu}},
  };
  return *ops;
}

const OpRegistry& Ops() {
  static const OpRegistry* const registry = [] {
    auto* r = new OpRegistry();
    for (const auto& [op, types] : TestOps()) r->Add(op);
    return r;
  }();
  return *registry;
}

const KernelRegistry& Kernels() {
  static const KernelRegistry* const registry = [] {
    auto* r = new KernelRegistry();
    for (const auto& [op, types] : TestOps()) {
      for (const std::string& type : types) {
        r->Register(KernelDef(op.op_name()).Device(type),
                    [](const OpKernelConstruction&) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                      return absl::UnimplementedError("placement tests build no kernels");
                    });
      }
    }
    return r;
  }();
  return *registry;
}

// A node as GraphDefBuilder's ops::SourceOp / UnaryOp / BinaryOp makes it.
struct N {
  std::string name;
  std::string op;
  std::vector<std::string> inputs = {};
  std::string device = "";
  std::vector<std::string> colocate = {};  // `_class` entries
};

class TfPlacerCases : public ::testing::Test {
 protected:
  TfPlacerCases() {
    std::vector<std::string> names;
    for (const char* type : {kCpu, kGpu}) {
      for (int i = 0; i < 10; ++i) {
        names.push_back(absl::StrFormat("/job:a/replica:0/task:0/device:%s:%d", type, i));
      }
    }
    devices_ = DeviceSet::Create(names).value();
  }

  absl::Status Place(const std::vector<N>& nodes, bool soft = false,
                     std::map<std::string, std::string> assigned = {},
                     const DeviceSet* devices = nullptr) {
    GraphDef def;
    for (const N& n : nodes) {
      NodeDef* node = def.add_node();
      node->set_name(n.name);
      node->set_op(n.op);
      for (const std::string& input : n.inputs) node->add_input(input);
      node->set_device(n.device);
      if (!n.colocate.empty()) (*node->mutable_attr())["_class"] = MakeAttr(n.colocate);
    }
    ASSIGN_OR_RETURN(graph_, ImportGraphDef(def, Ops()));
    PlacerOptions options;
    options.allow_soft_placement = soft;
    options.kernels = &Kernels();
    for (auto& [name, device] : assigned) options.assigned[name] = device;
    ASSIGN_OR_RETURN(placement_,
                     PlaceGraph(*graph_, devices != nullptr ? *devices : devices_, options));
    return absl::OkStatus();
  }

  std::string DeviceOf(const std::string& name) const {
    return placement_.device(*graph_->FindNode(name));
  }
  std::string TypeOf(const std::string& name) const {
    const std::string device = DeviceOf(name);
    return device.substr(device.rfind("device:") + 7, 3);
  }
  void ExpectColocated(const std::string& a, const std::string& b) const {
    EXPECT_EQ(DeviceOf(a), DeviceOf(b)) << a << " and " << b;
  }

  DeviceSet devices_;
  std::unique_ptr<Graph> graph_;
  Placement placement_;
};

TEST_F(TfPlacerCases, TestNoConstraints) {
  ASSERT_OK(
      Place({{"in", "TestInput"}, {"n1", "TestRelu", {"in:0"}}, {"n2", "TestRelu", {"in:1"}}}));
  EXPECT_EQ(TypeOf("in"), kCpu);
  EXPECT_EQ(TypeOf("n1"), kGpu);
  EXPECT_EQ(TypeOf("n2"), kGpu);
}

TEST_F(TfPlacerCases, TestDeviceTypeConstraints) {
  ASSERT_OK(Place({{"in", "TestInput"},
                   {"var_cpu", "VariableCPU"},
                   {"assign_cpu", "AssignCPU", {"var_cpu", "in"}},
                   {"var_gpu", "VariableGPU"},
                   {"assign_gpu", "AssignGPU", {"var_gpu", "in"}}}));
  EXPECT_EQ(TypeOf("in"), kCpu);
  EXPECT_EQ(TypeOf("var_cpu"), kCpu);
  EXPECT_EQ(TypeOf("assign_cpu"), kCpu);
  ExpectColocated("var_cpu", "assign_cpu");
  EXPECT_EQ(TypeOf("var_gpu"), kGpu);
  EXPECT_EQ(TypeOf("assign_gpu"), kGpu);
  ExpectColocated("var_gpu", "assign_gpu");
}

TEST_F(TfPlacerCases, TestIgnoreGeneratorHeuristicIfWrongDevice) {
  ASSERT_OK(Place({{"var_cpu", "VariableCPU"},
                   {"in", "TestGPUOutput"},
                   {"assign", "TestAssign", {"var_cpu", "in"}}}));
  EXPECT_EQ(TypeOf("in"), kGpu);
  EXPECT_EQ(TypeOf("var_cpu"), kCpu);
  ExpectColocated("var_cpu", "assign");
}

TEST_F(TfPlacerCases, TestIgnoreGeneratorHeuristicIfWrongPartialDevice) {
  ASSERT_OK(Place({{"var_cpu", "VariableCPU"},
                   {"in", "TestCPUGPUOutput", {}, "/device:CPU:1"},
                   {"assign", "TestAssign", {"var_cpu", "in"}}}));
  EXPECT_EQ(DeviceOf("in"), "/job:a/replica:0/task:0/device:CPU:1");
  EXPECT_EQ(TypeOf("var_cpu"), kCpu);
  ExpectColocated("var_cpu", "assign");
  EXPECT_EQ(DeviceOf("var_cpu"), "/job:a/replica:0/task:0/device:CPU:0");
}

TEST_F(TfPlacerCases, TestPartialSpec) {
  ASSERT_OK(Place({{"in", "TestInput", {}, "/job:a"}, {"var", "TestVariable", {}, "/job:a"}}));
  EXPECT_EQ(TypeOf("in"), kCpu);
  EXPECT_THAT(DeviceOf("in"), HasSubstr("/job:a"));
  EXPECT_EQ(TypeOf("var"), kGpu);
  EXPECT_THAT(DeviceOf("var"), HasSubstr("/job:a"));
}

TEST_F(TfPlacerCases, TestAssignedDevicePreserved) {
  ASSERT_OK(Place({{"in", "TestInput"}}, false, {{"in", "/job:a/replica:0/task:0/device:CPU:7"}}));
  EXPECT_EQ(DeviceOf("in"), "/job:a/replica:0/task:0/device:CPU:7");
}

TEST_F(TfPlacerCases, TestPartialSpecGpuToCpu) {
  ASSERT_OK(Place(
      {{"in", "TestInput", {}, "/device:GPU:0"}, {"var", "TestVariable", {}, "/device:GPU:0"}},
      /*soft=*/true));
  EXPECT_EQ(TypeOf("in"), kCpu);
  EXPECT_EQ(TypeOf("var"), kGpu);
  EXPECT_EQ(DeviceOf("var"), "/job:a/replica:0/task:0/device:GPU:0");
}

TEST_F(TfPlacerCases, TestReferenceConnection) {
  // Ten variable-and-assignment pairs per combination of op types.
  const auto pairs = [&](const std::string& var_op, const std::string& assign_op) {
    std::vector<N> nodes = {{"in", "TestInput"}};
    for (int i = 0; i < 10; ++i) {
      const std::string var = absl::StrFormat("var_%d", i);
      nodes.push_back({var, var_op});
      nodes.push_back({absl::StrFormat("assign_%d", i), assign_op, {var, "in"}});
    }
    return nodes;
  };
  const std::vector<std::tuple<std::string, std::string, std::string>> feasible = {
      {"TestVariable", "TestAssign", kGpu}, {"TestVariable", "AssignCPU", kCpu},
      {"TestVariable", "AssignGPU", kGpu},  {"VariableCPU", "TestAssign", kCpu},
      {"VariableCPU", "AssignCPU", kCpu},   {"VariableGPU", "TestAssign", kGpu},
      {"VariableGPU", "AssignGPU", kGpu}};
  for (const auto& [var_op, assign_op, type] : feasible) {
    SCOPED_TRACE(var_op + " " + assign_op);
    ASSERT_OK(Place(pairs(var_op, assign_op)));
    for (int i = 0; i < 10; ++i) {
      ExpectColocated(absl::StrFormat("var_%d", i), absl::StrFormat("assign_%d", i));
      EXPECT_EQ(TypeOf(absl::StrFormat("var_%d", i)), type);
    }
  }
  for (const auto& [var_op, assign_op] :
       {std::pair<std::string, std::string>{"VariableCPU", "AssignGPU"},
        {"VariableGPU", "AssignCPU"}}) {
    EXPECT_THAT(Place(pairs(var_op, assign_op)),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr("no device type supports both of those nodes")))
        << var_op << " " << assign_op;
  }
}

TEST_F(TfPlacerCases, TestResourceHandle) {
  const auto place = [&](const std::string& var_op, const std::string& use_op) {
    return Place({{"in", "TestInput"}, {"var", var_op}, {"assign", use_op, {"var", "in"}}});
  };
  const std::vector<std::tuple<std::string, std::string, std::string>> feasible = {
      {"TestHandleVariable", "TestHandleAssign", kGpu},
      {"TestHandleVariable", "HandleAssignCPU", kCpu},
      {"TestHandleVariable", "HandleAssignGPU", kGpu},
      {"HandleVariableCPU", "TestHandleAssign", kCpu},
      {"HandleVariableCPU", "HandleAssignCPU", kCpu},
      {"HandleVariableGPU", "HandleAssignGPU", kGpu},
      {"HandleVariableGPU", "TestHandleAssign", kGpu}};
  for (const auto& [var_op, use_op, type] : feasible) {
    SCOPED_TRACE(var_op + " " + use_op);
    ASSERT_OK(place(var_op, use_op));
    ExpectColocated("var", "assign");
    EXPECT_EQ(TypeOf("var"), type);
  }
  EXPECT_FALSE(place("HandleVariableGPU", "HandleAssignCPU").ok());
  EXPECT_FALSE(place("HandleVariableCPU", "HandleAssignGPU").ok());
}

// The assign asks for a CPU, but the reference edge binds it to the
// variable's GPU: its request is ignored.
TEST_F(TfPlacerCases, TestReferenceConnectionIgnoreInfeasible) {
  ASSERT_OK(Place({{"in", "TestDevice", {}, "/job:a/task:0/device:GPU:0"},
                   {"var_0", "TestVariable", {}, "/job:a/task:0/device:GPU:0"},
                   {"assign", "TestAssign", {"var_0", "in"}, "/job:a/task:0/device:CPU:0"}}));
  EXPECT_EQ(TypeOf("var_0"), kGpu);
  EXPECT_EQ(TypeOf("assign"), kGpu);
}

// The assign's request is more specific than the variable's and fits it:
// both go where the assign asks.
TEST_F(TfPlacerCases, TestReferenceConnectionMoreSpecificDestinationSourceWins) {
  ASSERT_OK(Place({{"in", "TestCPUGPUOutput", {}, "/job:a/task:0"},
                   {"var_0", "TestVariable", {}, "/job:a/task:0"},
                   {"assign", "TestAssign", {"var_0", "in"}, "/job:a/task:0/device:CPU:0"}}));
  EXPECT_EQ(TypeOf("var_0"), kCpu);
  EXPECT_EQ(TypeOf("assign"), kCpu);
}

TEST_F(TfPlacerCases, TestReferenceConnectionNoSourceDevice) {
  ASSERT_OK(Place({{"in", "TestDevice", {}, "/job:a/task:0/device:GPU:0"},
                   {"var_0", "TestVariable"},
                   {"assign", "TestAssign", {"var_0", "in"}, "/job:a/task:0/device:CPU:0"}}));
  EXPECT_EQ(TypeOf("var_0"), kCpu);
  EXPECT_EQ(TypeOf("assign"), kCpu);
}

TEST_F(TfPlacerCases, TestColocationGroup) {
  ASSERT_OK(Place({{"in", "TestInput"},
                   {"colocated_1", "TestRelu", {"in"}, "", {"loc:@in"}},
                   {"foo", "TestRelu", {"in"}}}));
  ExpectColocated("in", "colocated_1");
  EXPECT_NE(DeviceOf("in"), DeviceOf("foo"));
}

TEST_F(TfPlacerCases, TestMultipleColocationGroups) {
  ASSERT_OK(Place({{"in", "TestInput"},
                   {"colocated_1", "TestRelu", {"in"}, "", {"loc:@in"}},
                   {"foo", "TestRelu", {"in"}, "", {"loc:@in", "loc:@colocated_1"}}}));
  ExpectColocated("in", "colocated_1");
  ExpectColocated("in", "foo");
}

TEST_F(TfPlacerCases, TestInvalidMultipleColocationGroups) {
  EXPECT_THAT(Place({{"in", "TestInput"},
                     {"colocated_1", "ReluCPU", {"in"}, "", {"loc:@in"}},
                     {"foo", "ReluGPU", {"in"}, "", {"loc:@in", "loc:@colocated_1"}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Cannot colocate nodes 'foo' and 'in' because no device type "
                                 "supports both of those nodes and the other nodes colocated "
                                 "with them")));
}

TEST_F(TfPlacerCases, TestColocationGroupWithReferenceConnections) {
  ASSERT_OK(Place({{"in", "TestInput"},
                   {"var1", "VariableCPU"},
                   {"var2", "VariableCPU"},
                   {"assign1", "TestAssign", {"var1", "in"}, "", {"loc:@var1"}},
                   {"assign2", "TestAssign", {"var2", "in"}, "", {"loc:@var2"}}}));
  ExpectColocated("in", "var1");
  ExpectColocated("in", "var2");
  ExpectColocated("var1", "assign2");
  ExpectColocated("var2", "assign1");
}

TEST_F(TfPlacerCases, TestColocationGroupWithUnsatisfiableReferenceConnections) {
  EXPECT_THAT(Place({{"in", "TestInput"},
                     {"var1", "VariableCPU"},
                     {"var2", "VariableCPU"},
                     {"var3", "VariableGPU"},
                     {"assign1", "TestAssign", {"var1", "in"}, "", {"loc:@var1"}},
                     {"assign2", "TestAssign", {"var2", "in"}, "", {"loc:@var2"}},
                     {"assign3", "TestAssign", {"var3", "in"}, "", {"loc:@var2"}}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'var3'"),
                             HasSubstr("because no device type supports both of those nodes and "
                                       "the other nodes colocated with them"))));
}

TEST_F(TfPlacerCases, TestColocationAndReferenceConnections) {
  std::vector<N> nodes = {{"in", "TestInput"}};
  for (int i = 0; i < 10; ++i) {
    nodes.push_back({absl::StrFormat("var_%d", i), "TestVariable"});
    nodes.push_back(
        {absl::StrFormat("assign_%d", i), "TestAssign", {absl::StrFormat("var_%d", i), "in"}});
  }
  for (int i = 10; i < 100; ++i) {
    nodes.push_back({absl::StrFormat("var_%d", i),
                     "TestVariable",
                     {},
                     "",
                     {absl::StrFormat("loc:@var_%d", i % 6)}});
    nodes.push_back({absl::StrFormat("assign_%d", i),
                     "TestAssign",
                     {absl::StrFormat("var_%d", i), "in"},
                     "",
                     {absl::StrFormat("loc:@assign_%d", i % 3)}});
  }
  ASSERT_OK(Place(nodes));
  for (int i = 0; i < 100; ++i) {
    ExpectColocated(absl::StrFormat("var_%d", i), absl::StrFormat("assign_%d", i));
    if (i >= 10) {
      ExpectColocated(absl::StrFormat("var_%d", i), absl::StrFormat("var_%d", i % 6));
      ExpectColocated(absl::StrFormat("assign_%d", i), absl::StrFormat("assign_%d", i % 3));
    }
  }
}

TEST_F(TfPlacerCases, TestHeterogeneousDeviceSetFailure) {
  ASSERT_OK_AND_ASSIGN(DeviceSet heterogeneous,
                       DeviceSet::Create({"/job:b/replica:0/task:0/device:GPU:0",
                                          "/job:b/replica:0/task:1/device:CPU:0"}));
  EXPECT_THAT(Place({{"in", "TestInput"},
                     {"var", "VariableGPU"},
                     {"assign", "TestAssign", {"var", "in"}, "/job:b/task:1"}},
                    false, {}, &heterogeneous),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/job:b/task:1"), HasSubstr("'var' (VariableGPU)"))));
}

TEST_F(TfPlacerCases, TestUnknownDevice) {
  EXPECT_THAT(Place({{"in", "TestInput", {}, "/job:foo"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/job:foo")));
}

TEST_F(TfPlacerCases, TestMalformedDeviceSpecification) {
  EXPECT_THAT(Place({{"in", "TestInput", {}, "/foo:bar"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/foo:bar")));
}

TEST_F(TfPlacerCases, TestNonexistentGpuAllowSoftPlacement) {
  ASSERT_OK(Place({{"in", "TestDevice", {}, "/device:GPU:11"}}, /*soft=*/true));
  EXPECT_EQ(DeviceOf("in"), "/job:a/replica:0/task:0/device:GPU:0");
}

TEST_F(TfPlacerCases, TestNonexistentGpuNoAllowSoftPlacement) {
  EXPECT_THAT(Place({{"in", "TestDevice", {}, "/device:GPU:11"}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("/device:GPU:11")));
}

TEST_F(TfPlacerCases, TestUnsupportedDeviceNoAllowSoftPlacement) {
  EXPECT_THAT(Place({{"var", "VariableGPU", {}, "/device:CPU:0"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("/device:CPU:0"), HasSubstr("no CPU kernel"))));
}

TEST_F(TfPlacerCases, TestUnsupportedDeviceAllowSoftPlacement) {
  EXPECT_OK(Place({{"var", "VariableGPU", {}, "/device:CPU:0"}}, /*soft=*/true));
}

TEST_F(TfPlacerCases, TestDeviceTypeConstraintsAllowSoftPlacement) {
  ASSERT_OK(Place({{"var_gpu", "VariableGPU"},
                   {"force_gpu", "TestDeviceEnforce", {"var_gpu"}, "/device:CPU:0"},
                   {"var_cpu", "VariableCPU"},
                   {"force_cpu", "TestDeviceEnforce", {"var_cpu"}, "/device:GPU:0"}},
                  /*soft=*/true));
  EXPECT_EQ(TypeOf("var_gpu"), kGpu);
  EXPECT_EQ(TypeOf("force_gpu"), kGpu);
  ExpectColocated("var_gpu", "force_gpu");
  EXPECT_EQ(TypeOf("var_cpu"), kCpu);
  EXPECT_EQ(TypeOf("force_cpu"), kCpu);
  ExpectColocated("var_cpu", "force_cpu");
}

TEST_F(TfPlacerCases, TestUnsatisfiableConstraintWithReferenceConnections) {
  EXPECT_THAT(
      Place({{"var", "VariableGPU"}, {"in", "TestInput"}, {"assign", "AssignCPU", {"var", "in"}}}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("Cannot colocate nodes 'assign' and 'var'")));
}

// TestGeneratorNodeDoesntFollowNonColocatedConsumers: with the variables
// placed before on two CPUs, the generator has no single consumer device
// and goes to the standard place, a GPU.
TEST_F(TfPlacerCases, TestGeneratorNodeDoesntFollowNonColocatedConsumers) {
  ASSERT_OK(Place({{"var1_cpu", "VariableCPU"},
                   {"var2_cpu", "VariableCPU"},
                   {"in", "TestCPUGPUOutput"},
                   {"assign1", "TestAssign", {"var1_cpu", "in"}},
                   {"assign2", "TestAssign", {"var2_cpu", "in"}}},
                  false,
                  {{"var1_cpu", "/job:a/replica:0/task:0/device:CPU:1"},
                   {"var2_cpu", "/job:a/replica:0/task:0/device:CPU:2"}}));
  ExpectColocated("assign1", "var1_cpu");
  ExpectColocated("assign2", "var2_cpu");
  EXPECT_EQ(TypeOf("in"), kGpu);
}

// Not ported, answered differently: TestMetadataColocatedWithInput (a Shape
// of a CPU-only variable stays on the CPU in TensorFlow; rill places it
// by its kernels, on a GPU), TestHeuristicGeneratorFollowsSingleConsumer
// and TestGeneratorNodeFollowsConsumerNode (a generator whose consumers
// sit on one CPU goes there in TensorFlow; rill puts it on a GPU and
// sends its output). These are TensorFlow's heuristics against copies,
// not rules a graph relies on.

}  // namespace
}  // namespace rill
