#include <string>
#include <vector>

#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "ops/ops.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// The value of a Const node.
Tensor ConstValue(const Output& output) {
  const absl::StatusOr<const TensorProto*> proto = GetTensorAttr(output.node()->def(), "value");
  EXPECT_OK(proto);
  if (!proto.ok()) return Tensor();
  absl::StatusOr<Tensor> tensor = TensorFromProto(**proto);
  EXPECT_OK(tensor);
  return tensor.ok() ? *tensor : Tensor();
}

class WrappersTest : public ::testing::Test {
 protected:
  Scope root_ = ops::NewRootScope();
};

TEST_F(WrappersTest, MatMulTakesTransposeB) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 3}));
  const ops::Placeholder w(root_.WithOpName("w"), DT_FLOAT, ops::Placeholder::Shape({4, 3}));
  const ops::MatMul y(root_, x, w, ops::MatMul::TransposeB(true));
  ASSERT_OK(root_.status());
  EXPECT_EQ(y.node()->name(), "MatMul");
  EXPECT_THAT(y.node()->def().input(), ElementsAre("x", "w"));
  EXPECT_THAT(GetBoolAttr(y.node()->def(), "transpose_b"), IsOkAndHolds(true));
  EXPECT_THAT(GetBoolAttr(y.node()->def(), "transpose_a"), IsOkAndHolds(false));
  EXPECT_THAT(GetTypeAttr(y.node()->def(), "T"), IsOkAndHolds(DT_FLOAT));
  EXPECT_EQ(y.product.shape(), PartialTensorShape({-1, 4}));
}

TEST_F(WrappersTest, AttrSettersChain) {
  const ops::Placeholder a(root_, DT_FLOAT, ops::Placeholder::Shape({3, 2}));
  const ops::Placeholder b(root_, DT_FLOAT, ops::Placeholder::Shape({5, 3}));
  const ops::MatMul y(root_, a, b, ops::MatMul::TransposeA(true).TransposeB(true));
  ASSERT_OK(root_.status());
  EXPECT_EQ(y.product.shape(), PartialTensorShape({2, 5}));
}

TEST_F(WrappersTest, AddNTakesAList) {
  const ops::Placeholder a(root_.WithOpName("a"), DT_FLOAT, ops::Placeholder::Shape({2}));
  const ops::Placeholder b(root_.WithOpName("b"), DT_FLOAT, ops::Placeholder::Shape({-1}));
  const ops::AddN sum(root_, {a, b, a});
  ASSERT_OK(root_.status());
  EXPECT_THAT(sum.node()->def().input(), ElementsAre("a", "b", "a"));
  EXPECT_THAT(GetIntAttr(sum.node()->def(), "N"), IsOkAndHolds(3));
  EXPECT_EQ(sum.sum.shape(), PartialTensorShape({2}));
}

TEST_F(WrappersTest, AddNTakesAnOutputList) {
  const OutputList parts = {ops::Placeholder(root_, DT_DOUBLE), ops::Placeholder(root_, DT_DOUBLE)};
  const ops::AddN sum(root_, parts);
  ASSERT_OK(root_.status());
  EXPECT_THAT(sum.node()->def().input(), ElementsAre("Placeholder", "Placeholder_1"));
  EXPECT_EQ(sum.sum.type(), DT_DOUBLE);
}

TEST_F(WrappersTest, PlaceholderTakesAShape) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 784}));
  ASSERT_OK(root_.status());
  EXPECT_THAT(GetShapeAttr(x.node()->def(), "shape"), IsOkAndHolds(PartialTensorShape({-1, 784})));
  EXPECT_EQ(x.output.shape(), PartialTensorShape({-1, 784}));
  EXPECT_EQ(x.output.type(), DT_FLOAT);
}

TEST_F(WrappersTest, NestedInitializerListBecomesAConst) {
  const ops::Identity id(root_, {{1.f, 2.f}, {3.f, 4.f}, {5.f, 6.f}});
  ASSERT_OK(root_.status());
  const Output c = Output(id.node()->input_edge(0)->src, 0);
  EXPECT_EQ(c.node()->name(), "Const");
  EXPECT_EQ(c.node()->op(), "Const");
  EXPECT_EQ(c.shape(), PartialTensorShape({3, 2}));
  const Tensor value = ConstValue(c);
  EXPECT_EQ(value.dtype(), DT_FLOAT);
  EXPECT_EQ(value.shape(), TensorShape({3, 2}));
  EXPECT_THAT(Values<float>(value), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(id.output.shape(), PartialTensorShape({3, 2}));
}

TEST_F(WrappersTest, ScalarsAndListsBecomeTypedConsts) {
  const ops::Identity f(root_, 2.5f);
  const ops::Identity d(root_, 2.5);
  const ops::Identity i(root_, 7);
  const ops::Identity l(root_, int64_t{1} << 40);
  const ops::Identity b(root_, true);
  const ops::Identity s(root_, "hello");
  const ops::Identity v(root_, {1, 2, 3});
  const ops::Identity t(root_, Tensor::FromVector<int32_t>({1, 2, 3, 4}, TensorShape({2, 2})));
  ASSERT_OK(root_.status());
  EXPECT_EQ(f.output.type(), DT_FLOAT);
  EXPECT_EQ(d.output.type(), DT_DOUBLE);
  EXPECT_EQ(i.output.type(), DT_INT32);
  EXPECT_EQ(l.output.type(), DT_INT64);
  EXPECT_EQ(b.output.type(), DT_BOOL);
  EXPECT_EQ(s.output.type(), DT_STRING);
  EXPECT_EQ(v.output.type(), DT_INT32);
  EXPECT_EQ(v.output.shape(), PartialTensorShape({3}));
  EXPECT_EQ(t.output.shape(), PartialTensorShape({2, 2}));
  const auto source = [](const ops::Identity& id) {
    return Output(id.node()->input_edge(0)->src, 0);
  };
  EXPECT_EQ(ConstValue(source(l)).scalar<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(ConstValue(source(s)).scalar<std::string>(), "hello");
  EXPECT_THAT(Values<int32_t>(ConstValue(source(v))), ElementsAre(1, 2, 3));
  EXPECT_THAT(Values<int32_t>(ConstValue(source(t))), ElementsAre(1, 2, 3, 4));
}

TEST_F(WrappersTest, RaggedInitializerListIsAScopeError) {
  const ops::Identity id(root_, {{1.f, 2.f}, {3.f}});
  EXPECT_FALSE(id.operation.ok());
  EXPECT_THAT(root_.ToGraphDef(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must all have one type and shape; got float [2] and float [1]")));
}

TEST_F(WrappersTest, MixedInitializerTypesAreAScopeError) {
  const ops::Identity id(root_, {1, 2.5f});
  EXPECT_FALSE(id.operation.ok());
  EXPECT_THAT(root_.status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got int32 [] and float []")));
}

TEST_F(WrappersTest, ConstantsDoNotTakeTheRequestedOpName) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({2, 3}));
  const ops::Sum total(root_.NewSubScope("loss").WithOpName("total"), x, 1);
  ASSERT_OK(root_.status());
  EXPECT_EQ(total.node()->name(), "loss/total");
  EXPECT_THAT(total.node()->def().input(), ElementsAre("x", "loss/Const"));
  EXPECT_EQ(total.output.shape(), PartialTensorShape({2}));
}

TEST_F(WrappersTest, WrappersConvertToTheirOutput) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({2, 2}));
  const ops::Relu relu(root_, ops::MatMul(root_, x, x));
  const Output out = ops::Neg(root_, relu);
  ASSERT_OK(root_.status());
  EXPECT_THAT(relu.node()->def().input(), ElementsAre("MatMul"));
  EXPECT_EQ(out.node()->name(), "Neg");
  EXPECT_EQ(out.shape(), PartialTensorShape({2, 2}));
}

TEST_F(WrappersTest, ListOutputsAreOutputLists) {
  const ops::Placeholder x(root_.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({6, 4}));
  const ops::Split split(root_, 0, x, 3);
  ASSERT_OK(root_.status());
  ASSERT_EQ(split.output.size(), 3u);
  EXPECT_EQ(split.output[2].name(), "Split:2");
  EXPECT_EQ(split.output[1].shape(), PartialTensorShape({2, 4}));
}

TEST_F(WrappersTest, MultipleOutputsAreNamedMembers) {
  const ops::Placeholder logits(root_, DT_FLOAT, ops::Placeholder::Shape({8, 10}));
  const ops::Placeholder labels(root_, DT_FLOAT, ops::Placeholder::Shape({8, 10}));
  const ops::SoftmaxCrossEntropyWithLogits xent(root_, logits, labels);
  ASSERT_OK(root_.status());
  EXPECT_EQ(xent.loss.index(), 0);
  EXPECT_EQ(xent.backprop.index(), 1);
  EXPECT_EQ(xent.loss.shape(), PartialTensorShape({8}));
  EXPECT_EQ(xent.backprop.shape(), PartialTensorShape({8, 10}));
}

TEST_F(WrappersTest, OpsWithoutOutputsServeAsControlDependencies) {
  const ops::NoOp first(root_.WithOpName("first"));
  const ops::NoOp second(root_.WithControlDependencies({first}).WithOpName("second"));
  ASSERT_OK(root_.status());
  EXPECT_THAT(second.operation.node()->def().input(), ElementsAre("^first"));
}

TEST_F(WrappersTest, ShapeErrorNamesTheNode) {
  const ops::Const a(root_.WithOpName("a"), Tensor(DT_FLOAT, TensorShape({2, 3})), DT_FLOAT);
  const ops::Const b(root_.WithOpName("b"), Tensor(DT_FLOAT, TensorShape({2, 3})), DT_FLOAT);
  const ops::MatMul product(root_.NewSubScope("dense"), a, b);
  EXPECT_FALSE(product.operation.ok());
  EXPECT_FALSE(product.product.ok());
  EXPECT_THAT(root_.ToGraphDef(), StatusIs(absl::StatusCode::kInvalidArgument,
                                           HasSubstr("node 'dense/MatMul' (MatMul)")));
}

TEST_F(WrappersTest, LaterWrappersAfterAnErrorAreNull) {
  const ops::MatMul bad(root_, {{1.f, 2.f}}, {{1.f, 2.f}});
  ASSERT_FALSE(root_.ok());
  const absl::Status first = root_.status();
  const ops::Relu relu(root_, bad);
  const ops::Identity id(root_, 1.f);
  EXPECT_FALSE(relu.operation.ok());
  EXPECT_FALSE(id.operation.ok());
  EXPECT_EQ(root_.status(), first);
}

TEST_F(WrappersTest, OpsGetTheScopeDevice) {
  const Scope worker = root_.WithDevice("/job:worker/task:0");
  const ops::Identity id(worker.WithDevice("/gpu:0"), 1.f);
  ASSERT_OK(root_.status());
  EXPECT_EQ(id.node()->requested_device(), "/job:worker/task:0/device:GPU:0");
  // The constant is built in the same scope.
  EXPECT_EQ(id.node()->input_edge(0)->src->requested_device(), "/job:worker/task:0/device:GPU:0");
}

}  // namespace
}  // namespace rill
