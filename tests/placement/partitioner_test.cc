#include "placement/partitioner.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "kernels/framework/rendezvous.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::SizeIs;
using testing::StatusIs;

constexpr char kCpu0[] = "/job:localhost/replica:0/task:0/device:CPU:0";
constexpr char kCpu1[] = "/job:localhost/replica:0/task:0/device:CPU:1";
constexpr char kCpu2[] = "/job:localhost/replica:0/task:0/device:CPU:2";

// Every node on kCpu0 unless `devices` names it.
Placement PlaceByName(const Graph& graph, const std::map<std::string, std::string>& devices) {
  Placement placement;
  placement.nodes.resize(graph.num_nodes());
  for (const Node* node : graph.nodes()) {
    const auto it = devices.find(node->name());
    placement.nodes[node->id()].device = it == devices.end() ? kCpu0 : it->second;
  }
  return placement;
}

std::vector<const NodeDef*> NodesWithOp(const GraphDef& def, const std::string& op) {
  std::vector<const NodeDef*> out;
  for (const NodeDef& node : def.node()) {
    if (node.op() == op) out.push_back(&node);
  }
  return out;
}

const NodeDef* FindNodeDef(const GraphDef& def, const std::string& name) {
  for (const NodeDef& node : def.node()) {
    if (node.name() == name) return &node;
  }
  return nullptr;
}

std::vector<std::string> Inputs(const NodeDef& node) {
  return {node.input().begin(), node.input().end()};
}

std::string StringAttr(const NodeDef& node, const char* name) {
  absl::StatusOr<std::string> value = GetStringAttr(node, name);
  EXPECT_OK(value) << node.name();
  return value.ok() ? *value : "";
}

// The key a _Send or _Recv kernel computes from its attrs.
std::string KeyOf(const NodeDef& node) {
  RendezvousKey key;
  key.src_device = StringAttr(node, "send_device");
  key.dst_device = StringAttr(node, "recv_device");
  key.tensor_name = StringAttr(node, "tensor_name");
  absl::StatusOr<int64_t> incarnation = GetIntAttr(node, "send_device_incarnation");
  EXPECT_OK(incarnation) << node.name();
  key.src_incarnation = incarnation.ok() ? static_cast<uint64_t>(*incarnation) : 0;
  return key.ToString();
}

// What must hold for any partitioning: each partition imports with the
// standard ops, nodes sit on their partition's device, every _Send has
// exactly one _Recv on its recv_device with the same key (and the reverse),
// keys are unique, node names are unique across partitions.
void ExpectWellFormed(const std::map<std::string, GraphDef>& partitions) {
  std::map<std::string, std::string> send_keys;  // key -> recv_device
  std::map<std::string, std::string> recv_keys;  // key -> device holding the _Recv
  std::set<std::string> names;
  for (const auto& [device, def] : partitions) {
    EXPECT_OK(ImportGraphDef(def, StandardOps()).status()) << device << "\n" << def.DebugString();
    for (const NodeDef& node : def.node()) {
      EXPECT_EQ(node.device(), device) << node.name();
      EXPECT_TRUE(names.insert(node.name()).second) << "duplicate name " << node.name();
      if (node.op() == "_Send") {
        EXPECT_EQ(StringAttr(node, "send_device"), device) << node.name();
        EXPECT_TRUE(send_keys.emplace(KeyOf(node), StringAttr(node, "recv_device")).second)
            << "duplicate send key " << KeyOf(node);
      } else if (node.op() == "_Recv") {
        EXPECT_EQ(StringAttr(node, "recv_device"), device) << node.name();
        EXPECT_TRUE(recv_keys.emplace(KeyOf(node), device).second)
            << "duplicate recv key " << KeyOf(node);
      }
    }
  }
  EXPECT_EQ(send_keys, recv_keys);
}

absl::StatusOr<std::map<std::string, GraphDef>> Partition(
    const Scope& scope, const std::map<std::string, std::string>& devices,
    const PartitionOptions& options = {}) {
  RETURN_IF_ERROR(scope.status());
  return PartitionGraph(*scope.graph(), PlaceByName(*scope.graph(), devices), options);
}

TEST(PartitionGraph, CrossDeviceEdgeGetsOneSendRecvPair) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::Neg(s.WithOpName("b"), a);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}}));
  ASSERT_EQ(partitions.size(), 2u);
  ExpectWellFormed(partitions);

  const GraphDef& p0 = partitions.at(kCpu0);
  const GraphDef& p1 = partitions.at(kCpu1);
  ASSERT_THAT(NodesWithOp(p0, "_Send"), SizeIs(1));
  ASSERT_THAT(NodesWithOp(p1, "_Recv"), SizeIs(1));
  EXPECT_THAT(NodesWithOp(p0, "_Recv"), SizeIs(0));
  EXPECT_THAT(NodesWithOp(p1, "_Send"), SizeIs(0));
  const NodeDef& send = *NodesWithOp(p0, "_Send")[0];
  const NodeDef& recv = *NodesWithOp(p1, "_Recv")[0];
  EXPECT_THAT(Inputs(send), ElementsAre("a"));
  EXPECT_THAT(GetTypeAttr(send, "T"), testing::IsOkAndHolds(DT_FLOAT));
  EXPECT_THAT(GetTypeAttr(recv, "tensor_type"), testing::IsOkAndHolds(DT_FLOAT));
  for (const NodeDef* node : {&send, &recv}) {
    EXPECT_EQ(StringAttr(*node, "send_device"), kCpu0);
    EXPECT_EQ(StringAttr(*node, "recv_device"), kCpu1);
    EXPECT_THAT(StringAttr(*node, "tensor_name"), ::testing::MatchesRegex("edge_[0-9]+_a"));
    EXPECT_THAT(GetIntAttr(*node, "send_device_incarnation"), testing::IsOkAndHolds(1));
    EXPECT_THAT(GetBoolAttr(*node, "client_terminated"), testing::IsOkAndHolds(false));
    EXPECT_THAT(node->name(), ::testing::StartsWith("a/_"));
  }
  EXPECT_EQ(KeyOf(send), KeyOf(recv));
  EXPECT_NE(send.name(), recv.name());

  ASSERT_NE(FindNodeDef(p0, "a"), nullptr);
  EXPECT_EQ(FindNodeDef(p0, "b"), nullptr);
  const NodeDef* b = FindNodeDef(p1, "b");
  ASSERT_NE(b, nullptr);
  EXPECT_THAT(Inputs(*b), ElementsAre(recv.name()));
  EXPECT_EQ(b->device(), kCpu1);
}

TEST(PartitionGraph, TensorWithTwoConsumersOnOneDeviceIsSentOnce) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::Neg(s.WithOpName("b"), a);
  ops::Abs(s.WithOpName("c"), a);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}, {"c", kCpu1}}));
  ExpectWellFormed(partitions);
  ASSERT_THAT(NodesWithOp(partitions.at(kCpu0), "_Send"), SizeIs(1));
  const std::vector<const NodeDef*> recvs = NodesWithOp(partitions.at(kCpu1), "_Recv");
  ASSERT_THAT(recvs, SizeIs(1));
  EXPECT_THAT(Inputs(*FindNodeDef(partitions.at(kCpu1), "b")), ElementsAre(recvs[0]->name()));
  EXPECT_THAT(Inputs(*FindNodeDef(partitions.at(kCpu1), "c")), ElementsAre(recvs[0]->name()));
}

TEST(PartitionGraph, TensorToTwoDevicesIsSentToEach) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::Neg(s.WithOpName("b"), a);
  ops::Abs(s.WithOpName("c"), a);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}, {"c", kCpu2}}));
  ASSERT_EQ(partitions.size(), 3u);
  ExpectWellFormed(partitions);
  const std::vector<const NodeDef*> sends = NodesWithOp(partitions.at(kCpu0), "_Send");
  ASSERT_THAT(sends, SizeIs(2));
  EXPECT_EQ(Inputs(*sends[0]), Inputs(*sends[1]));
  EXPECT_NE(StringAttr(*sends[0], "tensor_name"), StringAttr(*sends[1], "tensor_name"));
  std::set<std::string> destinations = {StringAttr(*sends[0], "recv_device"),
                                        StringAttr(*sends[1], "recv_device")};
  EXPECT_EQ(destinations, (std::set<std::string>{kCpu1, kCpu2}));
  EXPECT_THAT(NodesWithOp(partitions.at(kCpu1), "_Recv"), SizeIs(1));
  EXPECT_THAT(NodesWithOp(partitions.at(kCpu2), "_Recv"), SizeIs(1));
}

TEST(PartitionGraph, SendsTheOutputSlotTheConsumerReads) {
  Scope s = ops::NewRootScope();
  auto dim = ops::Const(s.WithOpName("dim"), Tensor::Scalar<int32_t>(0), DT_INT32);
  auto value = ops::Const(s.WithOpName("value"),
                          Tensor::FromVector<float>({1, 2}, TensorShape({2})), DT_FLOAT);
  auto split = ops::Split(s.WithOpName("split"), dim, value, 2);
  ops::Neg(s.WithOpName("neg"), split.output[1]);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"neg", kCpu1}}));
  ExpectWellFormed(partitions);
  const std::vector<const NodeDef*> sends = NodesWithOp(partitions.at(kCpu0), "_Send");
  ASSERT_THAT(sends, SizeIs(1));
  EXPECT_THAT(Inputs(*sends[0]), ElementsAre("split:1"));
  EXPECT_THAT(StringAttr(*sends[0], "tensor_name"), ::testing::MatchesRegex("edge_[0-9]+_split"));
}

TEST(PartitionGraph, SendsEachTypeAsItIs) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<int32_t>(2), DT_INT32);
  ops::Neg(s.WithOpName("b"), a);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}}));
  ExpectWellFormed(partitions);
  EXPECT_THAT(GetTypeAttr(*NodesWithOp(partitions.at(kCpu0), "_Send")[0], "T"),
              testing::IsOkAndHolds(DT_INT32));
  EXPECT_THAT(GetTypeAttr(*NodesWithOp(partitions.at(kCpu1), "_Recv")[0], "tensor_type"),
              testing::IsOkAndHolds(DT_INT32));
}

TEST(PartitionGraph, ReferenceEdgeSendsTheValueWithTheBaseType) {
  Scope s = ops::NewRootScope();
  auto v = ops::VariableV2(s.WithOpName("v"), PartialTensorShape({2}), DT_FLOAT);
  ops::Identity(s.WithOpName("read"), v);
  ASSERT_EQ(v.node()->output_type(0), DT_FLOAT_REF);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"read", kCpu1}}));
  ExpectWellFormed(partitions);
  const std::vector<const NodeDef*> sends = NodesWithOp(partitions.at(kCpu0), "_Send");
  const std::vector<const NodeDef*> recvs = NodesWithOp(partitions.at(kCpu1), "_Recv");
  ASSERT_THAT(sends, SizeIs(1));
  ASSERT_THAT(recvs, SizeIs(1));
  EXPECT_THAT(Inputs(*sends[0]), ElementsAre("v"));
  EXPECT_THAT(GetTypeAttr(*sends[0], "T"), testing::IsOkAndHolds(DT_FLOAT));
  EXPECT_THAT(GetTypeAttr(*recvs[0], "tensor_type"), testing::IsOkAndHolds(DT_FLOAT));
  EXPECT_THAT(Inputs(*FindNodeDef(partitions.at(kCpu1), "read")), ElementsAre(recvs[0]->name()));
}

TEST(PartitionGraph, RejectsAReferenceInputFromAnotherDevice) {
  Scope s = ops::NewRootScope();
  auto v = ops::VariableV2(s.WithOpName("v"), PartialTensorShape({}), DT_FLOAT);
  ops::Assign(s.WithOpName("assign"), v, 1.0f);
  EXPECT_THAT(Partition(s, {{"assign", kCpu1}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("'assign' (Assign)"), HasSubstr("'v'"),
                                        HasSubstr(kCpu0), HasSubstr(kCpu1))));
}

TEST(PartitionGraph, ControlEdgeAcrossDevicesSendsADummyAfterTheSource) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::NoOp(s.WithOpName("after").WithControlDependencies(std::vector<Operation>{a.operation}));
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"after", kCpu1}}));
  ExpectWellFormed(partitions);
  const GraphDef& p0 = partitions.at(kCpu0);
  const GraphDef& p1 = partitions.at(kCpu1);
  const std::vector<const NodeDef*> sends = NodesWithOp(p0, "_Send");
  const std::vector<const NodeDef*> recvs = NodesWithOp(p1, "_Recv");
  ASSERT_THAT(sends, SizeIs(1));
  ASSERT_THAT(recvs, SizeIs(1));
  ASSERT_THAT(Inputs(*sends[0]), SizeIs(1));
  const NodeDef* dummy = FindNodeDef(p0, sends[0]->input(0));
  ASSERT_NE(dummy, nullptr);
  EXPECT_EQ(dummy->op(), "Const");
  EXPECT_THAT(dummy->name(), ::testing::StartsWith("a/_"));
  EXPECT_THAT(Inputs(*dummy), ElementsAre("^a"));
  EXPECT_THAT(GetTypeAttr(*sends[0], "T"), testing::IsOkAndHolds(DT_FLOAT));
  EXPECT_THAT(GetTypeAttr(*recvs[0], "tensor_type"), testing::IsOkAndHolds(DT_FLOAT));
  EXPECT_THAT(Inputs(*FindNodeDef(p1, "after")), ElementsAre(absl::StrCat("^", recvs[0]->name())));
}

TEST(PartitionGraph, KeepsLocalInputsAndPutsControlInputsLast) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(1), DT_FLOAT);
  auto b = ops::Const(s.WithOpName("b"), Tensor::Scalar<float>(2), DT_FLOAT);
  auto d = ops::NoOp(s.WithOpName("d"));
  ops::Add(s.WithOpName("sum").WithControlDependencies(std::vector<Operation>{d.operation}), a, b);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}, {"d", kCpu1}, {"sum", kCpu1}}));
  ExpectWellFormed(partitions);
  const std::vector<const NodeDef*> recvs = NodesWithOp(partitions.at(kCpu1), "_Recv");
  ASSERT_THAT(recvs, SizeIs(1));
  EXPECT_THAT(Inputs(*FindNodeDef(partitions.at(kCpu1), "sum")),
              ElementsAre(recvs[0]->name(), "b", "^d"));
}

TEST(PartitionGraph, EdgesInBothDirectionsBetweenTwoDevices) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(1), DT_FLOAT);
  auto b = ops::Neg(s.WithOpName("b"), a);
  ops::Abs(s.WithOpName("c"), b);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}}));
  ExpectWellFormed(partitions);
  EXPECT_THAT(NodesWithOp(partitions.at(kCpu0), "_Send"), SizeIs(1));
  EXPECT_THAT(NodesWithOp(partitions.at(kCpu0), "_Recv"), SizeIs(1));
  EXPECT_THAT(NodesWithOp(partitions.at(kCpu1), "_Send"), SizeIs(1));
  EXPECT_THAT(NodesWithOp(partitions.at(kCpu1), "_Recv"), SizeIs(1));
}

TEST(PartitionGraph, SingleDeviceGraphIsOnePartitionWithTheSameNodes) {
  Scope s = ops::NewRootScope();
  auto x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  auto v = ops::VariableV2(s.WithOpName("v"), PartialTensorShape({}), DT_FLOAT);
  auto init = ops::Assign(s.WithOpName("init"), v, 1.0f);
  ops::Add(s.WithOpName("sum").WithControlDependencies(std::vector<Operation>{init.operation}), x,
           v);
  ASSERT_OK_AND_ASSIGN(GraphDef whole, s.ToGraphDef());
  whole.mutable_versions()->set_producer(26);
  ASSERT_OK_AND_ASSIGN(auto graph, ImportGraphDef(whole, StandardOps()));
  ASSERT_OK_AND_ASSIGN(auto partitions, PartitionGraph(*graph, PlaceByName(*graph, {}), {}));
  ASSERT_EQ(partitions.size(), 1u);
  ExpectWellFormed(partitions);
  GraphDef expected = graph->ToGraphDef();
  for (NodeDef& node : *expected.mutable_node()) node.set_device(kCpu0);
  EXPECT_EQ(partitions.at(kCpu0).DebugString(), expected.DebugString());
  EXPECT_EQ(partitions.at(kCpu0).versions().producer(), 26);
}

TEST(PartitionGraph, IncarnationComesFromTheSendingDevice) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::Neg(s.WithOpName("b"), a);
  PartitionOptions options;
  options.incarnation = [](const std::string& device) -> uint64_t {
    return device == kCpu0 ? 0x1234567890abcdefULL : 9;
  };
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"b", kCpu1}}, options));
  ExpectWellFormed(partitions);
  const NodeDef& send = *NodesWithOp(partitions.at(kCpu0), "_Send")[0];
  const NodeDef& recv = *NodesWithOp(partitions.at(kCpu1), "_Recv")[0];
  EXPECT_THAT(GetIntAttr(send, "send_device_incarnation"),
              testing::IsOkAndHolds(0x1234567890abcdefLL));
  EXPECT_THAT(GetIntAttr(recv, "send_device_incarnation"),
              testing::IsOkAndHolds(0x1234567890abcdefLL));
  EXPECT_THAT(KeyOf(send), HasSubstr(";1234567890abcdef;"));
}

TEST(PartitionGraph, NewNamesAvoidNamesInTheGraph) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::Neg(s.WithOpName("a/_0"), a);
  ops::Neg(s.WithOpName("a/_1"), a);
  ops::Abs(s.WithOpName("c"), a);
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, {{"a/_0", kCpu1}, {"c", kCpu1}}));
  ExpectWellFormed(partitions);
  EXPECT_EQ(FindNodeDef(partitions.at(kCpu1), "a/_0")->op(), "Neg");
  EXPECT_EQ(FindNodeDef(partitions.at(kCpu0), "a/_1")->op(), "Neg");
}

TEST(PartitionGraph, ManyCrossEdgesKeepKeysUniqueAndMatched) {
  Scope s = ops::NewRootScope();
  const std::vector<std::string> devices = {kCpu0, kCpu1, kCpu2};
  std::map<std::string, std::string> placement;
  std::vector<Output> layer;
  for (int i = 0; i < 3; ++i) {
    const std::string name = absl::StrCat("in", i);
    layer.push_back(ops::Const(s.WithOpName(name), Tensor::Scalar<float>(i), DT_FLOAT));
    placement[name] = devices[i];
  }
  for (int depth = 0; depth < 3; ++depth) {
    std::vector<Output> next;
    for (int i = 0; i < 3; ++i) {
      const std::string name = absl::StrCat("n", depth, "_", i);
      next.push_back(ops::Add(s.WithOpName(name), layer[i], layer[(i + 1) % 3]));
      placement[name] = devices[(i + depth) % 3];
    }
    layer = next;
  }
  ASSERT_OK_AND_ASSIGN(auto partitions, Partition(s, placement));
  ASSERT_EQ(partitions.size(), 3u);
  ExpectWellFormed(partitions);
}

TEST(PartitionGraph, RejectsUnplacedNodes) {
  Scope s = ops::NewRootScope();
  auto a = ops::Const(s.WithOpName("a"), Tensor::Scalar<float>(2), DT_FLOAT);
  ops::Neg(s.WithOpName("b"), a);
  Placement placement = PlaceByName(*s.graph(), {});
  placement.nodes[s.graph()->FindNode("b")->id()].device.clear();
  EXPECT_THAT(PartitionGraph(*s.graph(), placement, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'b'")));
  placement.nodes.pop_back();
  EXPECT_THAT(PartitionGraph(*s.graph(), placement, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("placement")));
}

}  // namespace
}  // namespace rill
