#include "graph/scope.h"

#include <string>
#include <vector>

#include "graph/node_builder.h"
#include "graph/node_def_util.h"
#include "tests/graph/test_ops.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::rill::testing::TestOps;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

Operation Nop(const Scope& scope) { return NodeBuilder(scope, "Nop").Finalize(); }

Output Src(const Scope& scope, DataType type, const PartialTensorShape& shape) {
  return Output(
      NodeBuilder(scope, "Src").Attr("T", MakeAttr(type)).Attr("shape", MakeAttr(shape)).Finalize(),
      0);
}

std::vector<std::string> NodeNames(const GraphDef& def) {
  std::vector<std::string> names;
  for (const NodeDef& node : def.node()) names.push_back(node.name());
  return names;
}

class ScopeTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_OK(TestOps().status()); }

  Scope root_ = Scope::NewRootScope(TestOps());
};

TEST_F(ScopeTest, RepeatedOpsGetNumberedSuffixes) {
  EXPECT_EQ(Nop(root_).name(), "Nop");
  EXPECT_EQ(Nop(root_).name(), "Nop_1");
  EXPECT_EQ(Nop(root_).name(), "Nop_2");
  ASSERT_OK_AND_ASSIGN(GraphDef def, root_.ToGraphDef());
  EXPECT_THAT(NodeNames(def), ElementsAre("Nop", "Nop_1", "Nop_2"));
}

TEST_F(ScopeTest, SubScopesPrefixNamesAndGetSuffixesWhenReused) {
  const Scope dense = root_.NewSubScope("dense");
  EXPECT_EQ(dense.name_prefix(), "dense/");
  EXPECT_EQ(Nop(dense).name(), "dense/Nop");
  EXPECT_EQ(Nop(dense).name(), "dense/Nop_1");
  const Scope dense_again = root_.NewSubScope("dense");
  EXPECT_EQ(dense_again.name_prefix(), "dense_1/");
  EXPECT_EQ(Nop(dense_again).name(), "dense_1/Nop");
  const Scope inner = dense.NewSubScope("inner");
  EXPECT_EQ(Nop(inner).name(), "dense/inner/Nop");
  EXPECT_EQ(root_.name_prefix(), "");
}

TEST_F(ScopeTest, EmptySubScopeNameKeepsThePrefix) {
  const Scope layer = root_.NewSubScope("layer");
  EXPECT_EQ(layer.NewSubScope("").name_prefix(), "layer/");
}

TEST_F(ScopeTest, ColocateWithMarksOpsWithTheClassAttr) {
  const Scope& root = root_;
  const Operation anchor = Nop(root.WithOpName("anchor"));
  const Operation beside = Nop(root.ColocateWith(anchor).WithOpName("beside"));
  const Operation apart = Nop(root.WithOpName("apart"));
  ASSERT_TRUE(root.ok()) << root.status();
  const NodeDef& def = beside.node()->def();
  ASSERT_TRUE(def.attr().contains("_class"));
  EXPECT_THAT(def.attr().at("_class").list().s(), ElementsAre("loc:@anchor"));
  EXPECT_FALSE(apart.node()->def().attr().contains("_class"));
}

// As tf.colocate_with: the target's device wins over the device scope
// around, and a WithDevice inside still applies to a target without one.
TEST_F(ScopeTest, ColocateWithTakesTheTargetsDeviceOverTheDeviceScope) {
  const Operation pinned = Nop(root_.WithDevice("/job:ps/task:1").WithOpName("pinned"));
  const Operation free = Nop(root_.WithOpName("free"));
  const Scope worker = root_.WithDevice("/job:worker/task:0");
  EXPECT_EQ(Nop(worker.ColocateWith(pinned)).node()->requested_device(), "/job:ps/task:1");
  EXPECT_EQ(Nop(worker.ColocateWith(free)).node()->requested_device(), "");
  EXPECT_EQ(Nop(worker.ColocateWith(free).WithDevice("/cpu:0")).node()->requested_device(),
            "/device:CPU:0");
  ASSERT_TRUE(root_.ok()) << root_.status();
}

// Nested calls add groups, a target's own groups are joined rather than
// its name, and ColocateOnlyWith starts afresh.
TEST_F(ScopeTest, ColocationGroupsAccumulateUnlessColocatedOnlyWith) {
  const Operation a = Nop(root_.WithOpName("a"));
  const Operation b = Nop(root_.WithOpName("b"));
  const Operation with_a = Nop(root_.ColocateWith(a).WithOpName("with_a"));
  const Scope both = root_.ColocateWith(a).ColocateWith(b);
  EXPECT_THAT(both.colocation_groups(), ElementsAre("loc:@a", "loc:@b"));
  EXPECT_THAT(root_.ColocateWith(with_a).colocation_groups(), ElementsAre("loc:@a"));
  EXPECT_THAT(both.ColocateOnlyWith(b).colocation_groups(), ElementsAre("loc:@b"));
  const Operation pinned = Nop(root_.WithDevice("/job:ps/task:0").WithOpName("pinned"));
  EXPECT_EQ(Nop(root_.ColocateWith(pinned).ColocateOnlyWith(a)).node()->requested_device(), "");
  ASSERT_TRUE(root_.ok()) << root_.status();
}

TEST_F(ScopeTest, ColocateWithANullOpIsAnError) {
  const Scope& root = root_;
  (void)root.ColocateWith(Operation());
  EXPECT_THAT(root.status(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("null")));
}

TEST_F(ScopeTest, WithOpNameNamesTheOpUnderThePrefix) {
  const Scope dense = root_.NewSubScope("dense");
  EXPECT_EQ(Nop(dense.WithOpName("x")).name(), "dense/x");
  EXPECT_EQ(Nop(dense.WithOpName("x")).name(), "dense/x_1");
  EXPECT_EQ(Nop(root_.WithOpName("x")).name(), "x");
}

TEST_F(ScopeTest, TakenRequestedNameGetsASuffix) {
  EXPECT_EQ(Nop(root_).name(), "Nop");
  EXPECT_EQ(Nop(root_.WithOpName("Nop")).name(), "Nop_1");
}

TEST_F(ScopeTest, SuffixSkipsNamesRequestedExplicitly) {
  EXPECT_EQ(Nop(root_.WithOpName("Nop_1")).name(), "Nop_1");
  EXPECT_EQ(Nop(root_).name(), "Nop");
  EXPECT_EQ(Nop(root_).name(), "Nop_2");
}

TEST_F(ScopeTest, OpsAndSubScopesNeverShareAName) {
  EXPECT_EQ(Nop(root_.WithOpName("dense")).name(), "dense");
  EXPECT_EQ(root_.NewSubScope("dense").name_prefix(), "dense_1/");
  EXPECT_EQ(root_.NewSubScope("layer").name_prefix(), "layer/");
  EXPECT_EQ(Nop(root_.WithOpName("layer")).name(), "layer_1");
}

TEST_F(ScopeTest, SubScopeDoesNotInheritTheOpName) {
  EXPECT_EQ(Nop(root_.WithOpName("x").NewSubScope("s")).name(), "s/Nop");
}

TEST_F(ScopeTest, GetUniqueNameForOpReservesTheName) {
  EXPECT_EQ(root_.GetUniqueNameForOp("MatMul"), "MatMul");
  EXPECT_EQ(root_.GetUniqueNameForOp("MatMul"), "MatMul_1");
  EXPECT_EQ(root_.WithOpName("y").GetUniqueNameForOp("MatMul"), "y");
}

TEST_F(ScopeTest, DeviceIsCanonical) {
  EXPECT_EQ(root_.device(), "");
  EXPECT_EQ(root_.WithDevice("/gpu:1").device(), "/device:GPU:1");
  EXPECT_EQ(root_.WithDevice("/job:ps/task:0").device(), "/job:ps/task:0");
}

TEST_F(ScopeTest, NestedDevicesMerge) {
  const Scope worker = root_.WithDevice("/job:worker");
  EXPECT_EQ(worker.WithDevice("/device:GPU:0").device(), "/job:worker/device:GPU:0");
  EXPECT_EQ(worker.device(), "/job:worker");
}

TEST_F(ScopeTest, InnerDeviceFieldsOverrideOuterOnes) {
  const Scope outer = root_.WithDevice("/job:worker/task:1/cpu:0");
  EXPECT_EQ(outer.WithDevice("/job:ps").device(), "/job:ps/task:1/device:CPU:0");
  EXPECT_EQ(outer.WithDevice("/device:GPU:2").device(), "/job:worker/task:1/device:GPU:2");
  EXPECT_EQ(outer.WithDevice("").device(), "/job:worker/task:1/device:CPU:0");
}

TEST_F(ScopeTest, OpsGetTheScopeDevice) {
  const Operation op = Nop(root_.WithDevice("/job:worker/task:0"));
  ASSERT_TRUE(op.ok());
  EXPECT_EQ(op.node()->requested_device(), "/job:worker/task:0");
  ASSERT_OK_AND_ASSIGN(GraphDef def, root_.ToGraphDef());
  ASSERT_EQ(def.node_size(), 1);
  EXPECT_EQ(def.node(0).device(), "/job:worker/task:0");
}

TEST_F(ScopeTest, MalformedDeviceIsTheScopeError) {
  const Scope bad = root_.WithDevice("/job:ps/task:x");
  EXPECT_FALSE(root_.ok());
  EXPECT_FALSE(Nop(bad).ok());
  EXPECT_THAT(root_.ToGraphDef(), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("Malformed device name '/job:ps/task:x'")));
}

TEST_F(ScopeTest, ControlDependenciesAccumulate) {
  const Operation a = Nop(root_.WithOpName("a"));
  const Operation b = Nop(root_.WithOpName("b"));
  const Scope after_a = root_.WithControlDependencies({a});
  const Scope after_both = after_a.WithControlDependencies(std::vector<Operation>{b});
  EXPECT_EQ(after_both.control_deps().size(), 2u);
  const Operation c = Nop(after_both.WithOpName("c"));
  ASSERT_TRUE(c.ok());
  EXPECT_THAT(c.node()->def().input(), ElementsAre("^a", "^b"));
  const Operation d = Nop(after_both.WithNoControlDependencies().WithOpName("d"));
  EXPECT_THAT(d.node()->def().input(), ElementsAre());
}

TEST_F(ScopeTest, ControlDependencyOnAnOutputUsesItsOp) {
  const Output x = Src(root_.WithOpName("x"), DT_FLOAT, PartialTensorShape({2}));
  const Operation n = Nop(root_.WithControlDependencies(x).WithOpName("n"));
  ASSERT_TRUE(n.ok());
  EXPECT_THAT(n.node()->def().input(), ElementsAre("^x"));
}

TEST_F(ScopeTest, ChildScopesShareTheFirstError) {
  const Scope child = root_.NewSubScope("child");
  child.UpdateStatus(absl::InvalidArgumentError("first"));
  child.UpdateStatus(absl::InvalidArgumentError("second"));
  EXPECT_FALSE(root_.ok());
  EXPECT_THAT(root_.status(), StatusIs(absl::StatusCode::kInvalidArgument, "first"));
  EXPECT_THAT(root_.ToGraphDef(), StatusIs(absl::StatusCode::kInvalidArgument, "first"));
}

TEST_F(ScopeTest, UpdateStatusIgnoresOk) {
  root_.UpdateStatus(absl::OkStatus());
  EXPECT_TRUE(root_.ok());
}

TEST_F(ScopeTest, ToGraphDefReturnsTheNodesInOrder) {
  const Output x = Src(root_.WithOpName("x"), DT_FLOAT, PartialTensorShape({-1, 3}));
  const Operation y = NodeBuilder(root_.NewSubScope("layer"), "Unary").Input(x).Finalize();
  ASSERT_TRUE(y.ok());
  ASSERT_OK_AND_ASSIGN(GraphDef def, root_.ToGraphDef());
  EXPECT_THAT(NodeNames(def), ElementsAre("x", "layer/Unary"));
  EXPECT_THAT(def.node(1).input(), ElementsAre("x"));
}

TEST_F(ScopeTest, InitializersAreSharedByAllScopes) {
  const Scope child = root_.NewSubScope("v");
  const Operation a = Nop(child);
  const Operation b = Nop(root_);
  child.RegisterInitializer(a);
  root_.RegisterInitializer(b);
  const std::vector<Operation> inits = root_.Initializers();
  ASSERT_EQ(inits.size(), 2u);
  EXPECT_EQ(inits[0].name(), "v/Nop");
  EXPECT_EQ(inits[1].name(), "Nop");
  EXPECT_EQ(child.Initializers().size(), 2u);
}

TEST_F(ScopeTest, OutputReportsNameTypeAndShape) {
  const Output x = Src(root_.WithOpName("x"), DT_INT32, PartialTensorShape({-1, 784}));
  ASSERT_TRUE(x.ok());
  EXPECT_EQ(x.name(), "x");
  EXPECT_EQ(Output(x.op(), 1).name(), "x:1");
  EXPECT_EQ(x.type(), DT_INT32);
  EXPECT_EQ(x.shape(), PartialTensorShape({-1, 784}));
  EXPECT_EQ(x.op().name(), "x");
  EXPECT_EQ(x.node(), root_.graph()->FindNode("x"));
}

TEST(Operation, NullOnesAreSafeToInspect) {
  const Operation op;
  EXPECT_FALSE(op.ok());
  EXPECT_EQ(op.name(), "");
  const Output out;
  EXPECT_FALSE(out.ok());
  EXPECT_EQ(out.type(), DT_INVALID);
  EXPECT_TRUE(out.shape().unknown_rank());
  EXPECT_EQ(out.name(), "");
}

}  // namespace
}  // namespace rill
