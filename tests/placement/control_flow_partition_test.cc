// Partitioning graphs with loops and conds: the control loops each device
// gets, the control inputs of _Recvs inside frames, the devices of
// control-flow nodes, and the errors for loops that cannot be split. The
// loop cases follow TensorFlow's graph_partition_test.cc.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/attr_value_util.h"
#include "graph/control_flow.h"
#include "graph/control_flow_names.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "kernels/framework/kernel_registry.h"
#include "ops/registry.h"
#include "placement/device_set.h"
#include "placement/partitioner.h"
#include "tests/placement/control_flow_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using namespace ::rill::control_flow_graphs;  // NOLINT(build/namespaces)

using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using testing::StatusIs;

absl::StatusOr<std::unique_ptr<Graph>> Build(const std::vector<NodeDef>& nodes) {
  GraphDef def;
  for (const NodeDef& node : nodes) *def.add_node() = node;
  return ImportGraphDef(def, StandardOps());
}

absl::StatusOr<std::map<std::string, GraphDef>> Partition(const std::vector<NodeDef>& nodes) {
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> graph, Build(nodes));
  Placement placement;
  placement.nodes.resize(graph->num_nodes());
  for (const Node* node : graph->nodes()) {
    placement.nodes[node->id()].device = node->requested_device();
  }
  return PartitionGraph(*graph, placement, {});
}

const NodeDef* Find(const GraphDef& def, const std::string& name) {
  for (const NodeDef& node : def.node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

// The attr, or an empty value (failing the test) when absent.
const AttrValue* AttrOf(const NodeDef& node, const std::string& key) {
  static const AttrValue* const kEmpty = new AttrValue();
  auto it = node.attr().find(key);
  EXPECT_NE(it, node.attr().end()) << node.name() << " has no attr " << key;
  return it == node.attr().end() ? kEmpty : &it->second;
}

std::vector<std::string> Inputs(const NodeDef& node) {
  return {node.input().begin(), node.input().end()};
}

std::vector<std::string> ControlInputs(const NodeDef& node) {
  std::vector<std::string> out;
  for (const std::string& input : node.input()) {
    if (absl::StartsWith(input, "^")) out.push_back(input.substr(1));
  }
  return out;
}

bool IsControlLoopNode(const NodeDef& node) { return absl::StrContains(node.name(), "/_cloop_"); }

// The control-loop nodes of a partition, by op.
std::map<std::string, std::vector<const NodeDef*>> ControlLoopNodes(const GraphDef& def) {
  std::map<std::string, std::vector<const NodeDef*>> out;
  for (const NodeDef& node : def.node()) {
    if (IsControlLoopNode(node)) out[node.op()].push_back(&node);
  }
  return out;
}

std::vector<const NodeDef*> WithOp(const GraphDef& def, const std::string& op) {
  std::vector<const NodeDef*> out;
  for (const NodeDef& node : def.node()) {
    if (node.op() == op) out.push_back(&node);
  }
  return out;
}

// Every partition imports, holds sound loops and unique names; each _Send
// has its _Recv; and, TensorFlow's CheckLoopConstruction, when `in_loop`:
// every _Recv but `root_recvs` (those in the root frame) has one control
// input, and every partition a control loop. Every transfer is marked
// `_control_flow`: dead values may cross it.
void ExpectWellFormed(const std::map<std::string, GraphDef>& partitions, bool in_loop,
                      int root_recvs = 0) {
  int recvs_without_control = 0;
  std::set<std::string> names;
  std::multiset<std::string> sends, recvs;
  for (const auto& [device, def] : partitions) {
    absl::StatusOr<std::unique_ptr<Graph>> graph = ImportGraphDef(def, StandardOps());
    ASSERT_OK(graph.status()) << device << "\n" << def.DebugString();
    EXPECT_OK(BuildControlFlowInfo(**graph).status()) << device;
    std::set<std::string> control_ops;
    for (const NodeDef& node : def.node()) {
      EXPECT_EQ(node.device(), device) << node.name();
      EXPECT_TRUE(names.insert(node.name()).second) << "duplicate " << node.name();
      if (node.op() == "_Send" || node.op() == "_Recv") {
        EXPECT_TRUE(AttrOf(node, "_control_flow")->b()) << node.name();
      }
      if (node.op() == "_Send") sends.insert(AttrOf(node, "tensor_name")->s());
      if (node.op() == "_Recv") {
        recvs.insert(AttrOf(node, "tensor_name")->s());
        EXPECT_THAT(ControlInputs(node), SizeIs(::testing::Le(1))) << node.name();
        recvs_without_control += ControlInputs(node).empty();
      }
      if (IsControlLoopNode(node)) control_ops.insert(node.op());
    }
    if (in_loop) {
      EXPECT_TRUE(control_ops.contains("Enter")) << device;
      EXPECT_TRUE(control_ops.contains("Merge")) << device;
      EXPECT_TRUE(control_ops.contains("Switch")) << device;
      EXPECT_TRUE(control_ops.contains("NextIteration")) << device;
    }
  }
  EXPECT_EQ(sends, recvs);
  if (in_loop) {
    EXPECT_EQ(recvs_without_control, root_recvs);
  }
}

// TensorFlow's CrossDeviceLoopSimple: a loop on cpu:0 whose one body node
// is on cpu:1.
std::vector<NodeDef> SimpleLoop(int enter_device, int next_device) {
  return {N("A1", "Placeholder", {}, 0, {{"dtype", MakeAttr(DT_BOOL)}}),
          Enter("A2", "A1", "foo", enter_device, false, DT_BOOL),
          Merge("A3", {"A2", "A5"}, 0, DT_BOOL),
          N("A4", "LoopCond", {"A3"}, 0),
          N("B1", "Identity", {"A3"}, 1, T(DT_BOOL)),
          N("A5", "NextIteration", {"B1"}, next_device, T(DT_BOOL))};
}

TEST(ControlFlowPartition, CrossDeviceLoopSimple) {
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(SimpleLoop(0, 0)));
  ASSERT_THAT(partitions, SizeIs(2));
  ExpectWellFormed(partitions, /*in_loop=*/true);
}

// TensorFlow's CrossDeviceLoopSimple1: an Enter and a NextIteration placed
// away from their Merge join it, so the back edge stays local.
TEST(ControlFlowPartition, EnterAndNextIterationFollowTheirMerge) {
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(SimpleLoop(1, 1)));
  const NodeDef* merge = Find(partitions.at(kCpu0), "A3");
  ASSERT_NE(merge, nullptr);
  EXPECT_THAT(Inputs(*merge), ElementsAre("A2", "A5"));
  EXPECT_NE(Find(partitions.at(kCpu0), "A2"), nullptr);
  EXPECT_NE(Find(partitions.at(kCpu0), "A5"), nullptr);
  ExpectWellFormed(partitions, /*in_loop=*/true);
}

TEST(ControlFlowPartition, LoopStateOnOneDeviceBodyOnAnother) {
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(SplitLoop()));
  ASSERT_THAT(partitions, SizeIs(2));
  ExpectWellFormed(partitions, /*in_loop=*/true);
  const GraphDef& p0 = partitions.at(kCpu0);
  const GraphDef& p1 = partitions.at(kCpu1);

  // cpu:1 gets a control loop whose predicate comes from the LoopCond.
  auto loop1 = ControlLoopNodes(p1);
  ASSERT_THAT(loop1["Enter"], SizeIs(1));
  ASSERT_THAT(loop1["Merge"], SizeIs(1));
  ASSERT_THAT(loop1["Switch"], SizeIs(1));
  ASSERT_THAT(loop1["NextIteration"], SizeIs(1));
  ASSERT_THAT(loop1["Const"], SizeIs(1));
  const NodeDef& enter1 = *loop1["Enter"][0];
  const NodeDef& merge1 = *loop1["Merge"][0];
  const NodeDef& switch1 = *loop1["Switch"][0];
  const NodeDef& next1 = *loop1["NextIteration"][0];
  EXPECT_EQ(enter1.name(), "while/_cloop_CPU_1/enter");
  EXPECT_EQ(AttrOf(enter1, "frame_name")->s(), "while");
  EXPECT_EQ(AttrOf(enter1, "parallel_iterations")->i(), 10);
  EXPECT_THAT(Inputs(enter1), ElementsAre(loop1["Const"][0]->name()));
  EXPECT_THAT(Inputs(merge1), ElementsAre(enter1.name(), next1.name()));
  EXPECT_THAT(Inputs(next1), ElementsAre(switch1.name() + ":1"));
  ASSERT_THAT(Inputs(switch1), SizeIs(2));
  EXPECT_EQ(switch1.input(0), merge1.name());
  const NodeDef* pred = Find(p1, switch1.input(1));
  ASSERT_NE(pred, nullptr);
  EXPECT_EQ(pred->op(), "_Recv");
  EXPECT_THAT(ControlInputs(*pred), ElementsAre(merge1.name()));

  // Every _Recv on cpu:1 runs once per iteration.
  ASSERT_THAT(WithOp(p1, "_Recv"), SizeIs(2));
  for (const NodeDef* recv : WithOp(p1, "_Recv")) {
    EXPECT_THAT(ControlInputs(*recv), ElementsAre(merge1.name())) << recv->name();
  }
  // The body reads the Switch's true output through one of them.
  const NodeDef* identity = Find(p1, "while/Identity");
  ASSERT_NE(identity, nullptr);
  EXPECT_EQ(Find(p1, identity->input(0))->op(), "_Recv");

  // cpu:0 receives the body's result, so it has a control loop too, whose
  // Switch reads the LoopCond directly.
  auto loop0 = ControlLoopNodes(p0);
  ASSERT_THAT(loop0["Switch"], SizeIs(1));
  EXPECT_THAT(Inputs(*loop0["Switch"][0]),
              ElementsAre(loop0["Merge"][0]->name(), "while/LoopCond"));
  ASSERT_THAT(WithOp(p0, "_Recv"), SizeIs(1));
  EXPECT_THAT(ControlInputs(*WithOp(p0, "_Recv")[0]), ElementsAre(loop0["Merge"][0]->name()));
  EXPECT_EQ(Find(p0, "while/NextIteration")->input(0), WithOp(p0, "_Recv")[0]->name());
  // The loop invariant stays on cpu:0 with its reader; nothing else moved.
  for (const char* name : {"while/Enter", "while/Merge", "while/limit", "while/Switch",
                           "while/Exit", "while/NextIteration", "out"}) {
    EXPECT_NE(Find(p0, name), nullptr) << name;
  }
}

// TensorFlow's CrossDeviceLoopFull: while i1 < 10: i1 += i2, the body's
// AddN on cpu:1.
TEST(ControlFlowPartition, CrossDeviceLoopFull) {
  ASSERT_OK_AND_ASSIGN(
      auto partitions,
      Partition({N("p1", "Placeholder", {}, 0, {{"dtype", MakeAttr(DT_INT32)}}),
                 N("p2", "Placeholder", {}, 0, {{"dtype", MakeAttr(DT_INT32)}}),
                 Enter("l/Enter", "p1", "test_loop", 0), Enter("l/Enter_1", "p2", "test_loop", 0),
                 Merge("l/Merge", {"l/Enter", "l/NextIteration"}, 0),
                 Merge("l/Merge_1", {"l/Enter_1", "l/NextIteration_1"}, 0),
                 IntConst("l/Less/y", 10, 0, {"^l/Merge"}),
                 N("l/Less", "Less", {"l/Merge", "l/Less/y"}, 0, T()),
                 N("l/LoopCond", "LoopCond", {"l/Less"}, 0),
                 N("l/Switch", "Switch", {"l/Merge", "l/LoopCond"}, 0, T()),
                 N("l/Switch_1", "Switch", {"l/Merge_1", "l/LoopCond"}, 0, T()),
                 N("l/Identity", "Identity", {"l/Switch:1"}, 0, T()),
                 N("l/Identity_1", "Identity", {"l/Switch_1:1"}, 0, T()),
                 N("l/AddN", "AddN", {"l/Identity", "l/Identity_1"}, 1,
                   {{"T", MakeAttr(DT_INT32)}, {"N", MakeAttr(static_cast<int64_t>(2))}}),
                 N("l/NextIteration", "NextIteration", {"l/AddN"}, 0, T()),
                 N("l/NextIteration_1", "NextIteration", {"l/Identity_1"}, 0, T()),
                 N("l/Exit", "Exit", {"l/Switch"}, 0, T()),
                 N("l/Exit_1", "Exit", {"l/Switch_1"}, 0, T())}));
  ASSERT_THAT(partitions, SizeIs(2));
  ExpectWellFormed(partitions, /*in_loop=*/true);
  EXPECT_THAT(WithOp(partitions.at(kCpu1), "_Recv"), SizeIs(3));  // Two values, the predicate.
}

TEST(ControlFlowPartition, NestedLoopSplitOverTwoDevices) {
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(NestedLoop()));
  ASSERT_THAT(partitions, SizeIs(2));
  ExpectWellFormed(partitions, /*in_loop=*/true);
  for (const auto& [device, def] : partitions) {
    SCOPED_TRACE(device);
    // One control loop per frame; the inner one entered from the outer's.
    auto loops = ControlLoopNodes(def);
    ASSERT_THAT(loops["Enter"], SizeIs(2));
    ASSERT_THAT(loops["Const"], SizeIs(1));
    std::map<std::string, const NodeDef*> enter_of;
    for (const NodeDef* enter : loops["Enter"]) enter_of[AttrOf(*enter, "frame_name")->s()] = enter;
    ASSERT_TRUE(enter_of.contains("outer") && enter_of.contains("inner"));
    EXPECT_THAT(Inputs(*enter_of["outer"]), ElementsAre(loops["Const"][0]->name()));
    const std::string outer_prefix = enter_of["outer"]->name().substr(
        0, enter_of["outer"]->name().size() - std::string("enter").size());
    EXPECT_THAT(Inputs(*enter_of["inner"]), ElementsAre(outer_prefix + "merge"));
  }
  // The outer loop's value reaches the inner loop invariant on cpu:1 in
  // the outer frame (the Enter stays on cpu:1 with its reader).
  const GraphDef& p1 = partitions.at(kCpu1);
  const NodeDef* inner_i = Find(p1, "inner/i");
  ASSERT_NE(inner_i, nullptr);
  const NodeDef* recv = Find(p1, inner_i->input(0));
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->op(), "_Recv");
  EXPECT_THAT(ControlInputs(*recv), ElementsAre(::testing::StartsWith("outer/_cloop_CPU_1/")));
}

// A cond whose true branch is on cpu:1: plain _Send/_Recv pairs, no
// control loop, no control inputs.
TEST(ControlFlowPartition, CondAcrossDevicesNeedsOnlySendsAndRecvs) {
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(SplitCond()));
  ASSERT_THAT(partitions, SizeIs(2));
  ExpectWellFormed(partitions, /*in_loop=*/false);
  for (const auto& [device, def] : partitions) {
    EXPECT_THAT(ControlLoopNodes(def), IsEmpty()) << device;
    for (const NodeDef* recv : WithOp(def, "_Recv")) EXPECT_THAT(ControlInputs(*recv), IsEmpty());
  }
  // The Switch went to its data input's device (TensorFlow's colocation).
  EXPECT_NE(Find(partitions.at(kCpu0), "switch"), nullptr);
  EXPECT_THAT(WithOp(partitions.at(kCpu1), "_Recv"), SizeIs(1));
  EXPECT_THAT(WithOp(partitions.at(kCpu0), "_Recv"), SizeIs(1));
}

// A Switch follows its data input only to a device of the type it was
// placed on, which has its kernel.
TEST(ControlFlowPartition, SwitchStaysOnItsDeviceTypeWhenItsInputIsOnAGpu) {
  constexpr char kGpu0[] = "/job:localhost/replica:0/task:0/device:GPU:0";
  std::vector<NodeDef> nodes = SplitCond();
  nodes[0].set_device(kGpu0);  // x
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(nodes));
  ExpectWellFormed(partitions, /*in_loop=*/false);
  EXPECT_NE(Find(partitions.at(kCpu1), "switch"), nullptr);
  EXPECT_EQ(Find(partitions.at(kGpu0), "switch"), nullptr);
}

// A value entering a loop on cpu:1 through a non-constant Enter whose
// other reader is on cpu:0 exists in the first iteration only: its _Recv
// follows the control loop's Enter, not its Merge.
TEST(ControlFlowPartition, FirstIterationValueIsReceivedOnce) {
  std::vector<NodeDef> nodes = SplitLoop();
  nodes.push_back(Enter("while/seed", "init", "while", 1));
  nodes.push_back(N("while/seed_neg", "Neg", {"while/seed"}, 1, T()));
  nodes.push_back(N("while/seed_abs", "Abs", {"while/seed"}, 0, T()));
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(nodes));
  ExpectWellFormed(partitions, /*in_loop=*/true, /*root_recvs=*/1);  // init, to the Enter.
  const GraphDef& p0 = partitions.at(kCpu0);
  const NodeDef* abs = Find(p0, "while/seed_abs");
  ASSERT_NE(abs, nullptr);
  const NodeDef* recv = Find(p0, abs->input(0));
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->op(), "_Recv");
  EXPECT_THAT(ControlInputs(*recv), ElementsAre("while/_cloop_CPU_0/enter"));
}

// A loop invariant read on cpu:0 and computed on cpu:1 from a constant
// Enter: cpu:1 needs a control loop of its own to send it every iteration.
TEST(ControlFlowPartition, SenderOfAnInvariantGetsAControlLoop) {
  std::vector<NodeDef> nodes = {
      IntConst("init", 0, 0),
      IntConst("limit", 10, 0),
      IntConst("step", 3, 1),
      Enter("while/Enter", "init", "while", 0),
      Merge("while/Merge", {"while/Enter", "while/NextIteration"}, 0),
      Enter("while/limit", "limit", "while", 0, true),
      N("while/Less", "Less", {"while/Merge", "while/limit"}, 0, T()),
      N("while/LoopCond", "LoopCond", {"while/Less"}, 0),
      N("while/Switch", "Switch", {"while/Merge", "while/LoopCond"}, 0, T()),
      Enter("while/step", "step", "while", 1, true),
      N("while/step_neg", "Neg", {"while/step"}, 1, T()),
      N("while/add", "Sub", {"while/Switch:1", "while/step_neg"}, 0, T()),
      N("while/NextIteration", "NextIteration", {"while/add"}, 0, T()),
      N("while/Exit", "Exit", {"while/Switch"}, 0, T())};
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(nodes));
  ExpectWellFormed(partitions, /*in_loop=*/true);
  EXPECT_THAT(ControlLoopNodes(partitions.at(kCpu1))["Merge"], SizeIs(1));
}

// A control edge inside the loop crosses as a dummy value sent after its
// source, whose _Recv runs once per iteration like the others.
TEST(ControlFlowPartition, ControlEdgeInsideALoop) {
  std::vector<NodeDef> nodes = SplitLoop();
  nodes.push_back(IntConst("while/after_add", 1, 0, {"^while/add"}));
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(nodes));
  ExpectWellFormed(partitions, /*in_loop=*/true);
  const GraphDef& p0 = partitions.at(kCpu0);
  const NodeDef* after = Find(p0, "while/after_add");
  ASSERT_NE(after, nullptr);
  ASSERT_THAT(ControlInputs(*after), SizeIs(1));
  const NodeDef* recv = Find(p0, ControlInputs(*after)[0]);
  ASSERT_NE(recv, nullptr);
  EXPECT_EQ(recv->op(), "_Recv");
  EXPECT_THAT(ControlInputs(*recv), ElementsAre("while/_cloop_CPU_0/merge"));
}

// Without control-flow ops nothing changes: no marks, no control inputs.
TEST(ControlFlowPartition, GraphWithoutControlFlowIsNotMarked) {
  ASSERT_OK_AND_ASSIGN(auto partitions,
                       Partition({IntConst("x", 1, 0), N("neg", "Neg", {"x"}, 1, T()),
                                  IntConst("after", 2, 0, {"^neg"})}));
  for (const auto& [device, def] : partitions) {
    for (const NodeDef& node : def.node()) {
      EXPECT_FALSE(node.attr().contains("_control_flow")) << node.name();
      if (node.op() == "_Recv") {
        EXPECT_THAT(ControlInputs(node), IsEmpty());
      }
    }
  }
}

TEST(ControlFlowPartition, RejectsACrossDeviceFrameWithoutLoopCond) {
  EXPECT_THAT(
      Partition({IntConst("x", 1, 0), Enter("f/Enter", "x", "f", 0),
                 N("f/neg", "Neg", {"f/Enter"}, 1, T()), N("f/abs", "Abs", {"f/neg"}, 0, T()),
                 N("f/Exit", "Exit", {"f/abs"}, 0, T())}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("'f/neg'"), HasSubstr("frame 'f'"), HasSubstr("no LoopCond"))));
}

TEST(ControlFlowPartition, RejectsABackEdgeToMergesOnTwoDevices) {
  std::vector<NodeDef> nodes = SplitLoop();
  nodes.push_back(Enter("while/Enter2", "init", "while", 1));
  nodes.push_back(Merge("while/Merge2", {"while/Enter2", "while/NextIteration"}, 1));
  EXPECT_THAT(Partition(nodes),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("'while/NextIteration'"), HasSubstr("frame 'while'"),
                             HasSubstr("back edge cannot cross devices"))));
}

TEST(ControlFlowPartition, ControlLoopNamesAvoidNamesInTheGraph) {
  std::vector<NodeDef> nodes = SplitLoop();
  nodes.push_back(IntConst("while/_cloop_CPU_1/enter", 1, 1));
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(nodes));
  ExpectWellFormed(partitions, /*in_loop=*/false);
  auto loop1 = ControlLoopNodes(partitions.at(kCpu1));
  ASSERT_THAT(loop1["Enter"], SizeIs(1));
  EXPECT_NE(loop1["Enter"][0]->name(), "while/_cloop_CPU_1/enter");
}

// TensorFlow's frame names end in '/' ("while/while/"); control-loop
// names have no empty parts.
TEST(ControlFlowPartition, ControlLoopNamesFromTensorFlowFrameNames) {
  std::vector<NodeDef> nodes = SplitLoop();
  for (NodeDef& node : nodes) {
    if (node.op() == "Enter") (*node.mutable_attr())["frame_name"] = MakeAttr("while/while/");
  }
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(nodes));
  ExpectWellFormed(partitions, /*in_loop=*/true);
  EXPECT_NE(Find(partitions.at(kCpu1), "while/while/_cloop_CPU_1/merge"), nullptr);
}

// The placer keeps a variable's RefEnter, RefSwitch and RefMerge with it,
// even when they ask for another device: a reference cannot cross.
TEST(ControlFlowPartition, PlacerKeepsRefControlFlowWithTheVariable) {
  std::vector<NodeDef> nodes = {
      N("v", "VariableV2", {}, 0,
        {{"dtype", MakeAttr(DT_FLOAT)}, {"shape", MakeAttr(PartialTensorShape({2}))}}),
      N("p", "Placeholder", {}, 0, {{"dtype", MakeAttr(DT_BOOL)}}),
      N("enter", "RefEnter", {"v"}, 1, {{"T", MakeAttr(DT_FLOAT)}, {"frame_name", MakeAttr("f")}}),
      N("switch", "RefSwitch", {"v", "p"}, 1, T(DT_FLOAT)),
      N("merge", "RefMerge", {"switch", "switch:1"}, 1,
        {{"T", MakeAttr(DT_FLOAT)}, {"N", MakeAttr(static_cast<int64_t>(2))}})};
  ASSERT_OK_AND_ASSIGN(auto graph, Build(nodes));
  ASSERT_OK_AND_ASSIGN(Placement placement, PlaceGraph(*graph, DeviceSet::Local(2), {}));
  for (const char* name : {"enter", "switch", "merge"}) {
    EXPECT_EQ(placement.device(*graph->FindNode(name)), kCpu0) << name;
  }
}

}  // namespace
}  // namespace rill
