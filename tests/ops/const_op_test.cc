// ops::Const from C++ literals (2.f, {1, 2, 3}, {{1.f, 2.f}, {3.f, 4.f}},
// "hello", a value and a shape), run through a Session, and the scope
// errors a malformed literal leaves.
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

class ConstOpTest : public ::testing::Test {
 protected:
  // The values of `outputs` after running the scope's graph.
  std::vector<Tensor> Run(const std::vector<Output>& outputs) {
    absl::StatusOr<GraphDef> def = root_.ToGraphDef();
    EXPECT_OK(def);
    if (!def.ok()) return {};
    absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), *def);
    EXPECT_OK(session);
    if (!session.ok()) return {};
    std::vector<std::string> names;
    for (const Output& output : outputs) names.push_back(output.name());
    absl::StatusOr<std::vector<Tensor>> values = (*session)->Run({}, names);
    EXPECT_OK(values);
    return values.ok() ? *std::move(values) : std::vector<Tensor>();
  }

  Scope root_ = ops::NewRootScope();
};

TEST_F(ConstOpTest, ScalarsTakeTheirLiteralsType) {
  const ops::Const f(root_, 2.5f);
  const ops::Const d(root_, 2.5);
  const ops::Const i(root_, 7);
  const ops::Const l(root_, int64_t{1} << 40);
  const ops::Const b(root_, true);
  const ops::Const s(root_, "hello");
  const ops::Const str(root_, std::string("world"));
  ASSERT_OK(root_.status());
  EXPECT_EQ(f.output.type(), DT_FLOAT);
  EXPECT_EQ(d.output.type(), DT_DOUBLE);
  EXPECT_EQ(i.output.type(), DT_INT32);
  EXPECT_EQ(l.output.type(), DT_INT64);
  EXPECT_EQ(b.output.type(), DT_BOOL);
  EXPECT_EQ(s.output.type(), DT_STRING);
  EXPECT_EQ(f.output.shape(), PartialTensorShape({}));

  const std::vector<Tensor> values = Run({f, d, i, l, b, s, str});
  ASSERT_EQ(values.size(), 7u);
  EXPECT_EQ(values[0].scalar<float>(), 2.5f);
  EXPECT_EQ(values[1].scalar<double>(), 2.5);
  EXPECT_EQ(values[2].scalar<int32_t>(), 7);
  EXPECT_EQ(values[3].scalar<int64_t>(), int64_t{1} << 40);
  EXPECT_EQ(values[4].scalar<bool>(), true);
  EXPECT_EQ(values[5].scalar<std::string>(), "hello");
  EXPECT_EQ(values[6].scalar<std::string>(), "world");
}

TEST_F(ConstOpTest, ListsBecomeVectorsAndMatrices) {
  const ops::Const v(root_, {1, 2, 3});
  const ops::Const m(root_, {{1.f, 2.f}, {3.f, 4.f}});
  const ops::Const words(root_, {"a", "bc"});
  ASSERT_OK(root_.status());
  EXPECT_EQ(v.output.type(), DT_INT32);
  EXPECT_EQ(v.output.shape(), PartialTensorShape({3}));
  EXPECT_EQ(m.output.type(), DT_FLOAT);
  EXPECT_EQ(m.output.shape(), PartialTensorShape({2, 2}));
  EXPECT_EQ(words.output.shape(), PartialTensorShape({2}));

  const std::vector<Tensor> values = Run({v, m, words});
  ASSERT_EQ(values.size(), 3u);
  EXPECT_THAT(Values<int32_t>(values[0]), ElementsAre(1, 2, 3));
  EXPECT_EQ(values[1].shape(), TensorShape({2, 2}));
  EXPECT_THAT(Values<float>(values[1]), ElementsAre(1, 2, 3, 4));
  EXPECT_THAT(Values<std::string>(values[2]), ElementsAre("a", "bc"));
}

TEST_F(ConstOpTest, AShapeIsFilledByAScalarOrTakesAsManyValues) {
  const ops::Const zeros(root_, 0.f, {2, 3});
  const ops::Const names(root_, "x", {2});
  const ops::Const grid(root_, {1, 2, 3, 4, 5, 6}, {3, 2});
  const ops::Const flat(root_, {{1.f, 2.f}, {3.f, 4.f}}, {4});
  ASSERT_OK(root_.status());
  EXPECT_EQ(zeros.output.shape(), PartialTensorShape({2, 3}));
  EXPECT_EQ(grid.output.shape(), PartialTensorShape({3, 2}));

  const std::vector<Tensor> values = Run({zeros, names, grid, flat});
  ASSERT_EQ(values.size(), 4u);
  EXPECT_EQ(values[0].shape(), TensorShape({2, 3}));
  EXPECT_THAT(Values<float>(values[0]), ElementsAre(0, 0, 0, 0, 0, 0));
  EXPECT_THAT(Values<std::string>(values[1]), ElementsAre("x", "x"));
  EXPECT_EQ(values[2].shape(), TensorShape({3, 2}));
  EXPECT_THAT(Values<int32_t>(values[2]), ElementsAre(1, 2, 3, 4, 5, 6));
  EXPECT_EQ(values[3].shape(), TensorShape({4}));
  EXPECT_THAT(Values<float>(values[3]), ElementsAre(1, 2, 3, 4));
}

TEST_F(ConstOpTest, LiteralsFeedOtherOpsAndTakeTheOpName) {
  const ops::Const two(root_.WithOpName("two"), 2.f);
  const ops::Mul product(root_.WithOpName("product"), two, ops::Const(root_, {1.f, 2.f, 3.f}));
  ASSERT_OK(root_.status());
  EXPECT_EQ(two.node()->name(), "two");
  EXPECT_THAT(product.node()->def().input(), ElementsAre("two", "Const"));

  const std::vector<Tensor> values = Run({product});
  ASSERT_EQ(values.size(), 1u);
  EXPECT_THAT(Values<float>(values[0]), ElementsAre(2, 4, 6));
}

TEST_F(ConstOpTest, TheTensorAndDtypeFormStillWorks) {
  const ops::Const t(root_, Tensor::FromVector<int64_t>({5, 6}, TensorShape({2})), DT_INT64);
  const ops::Const from_tensor(root_, Tensor::Scalar<double>(1.5));
  ASSERT_OK(root_.status());
  EXPECT_EQ(t.output.type(), DT_INT64);
  EXPECT_EQ(from_tensor.output.type(), DT_DOUBLE);

  const std::vector<Tensor> values = Run({t, from_tensor});
  ASSERT_EQ(values.size(), 2u);
  EXPECT_THAT(Values<int64_t>(values[0]), ElementsAre(5, 6));
  EXPECT_EQ(values[1].scalar<double>(), 1.5);
}

TEST_F(ConstOpTest, ARaggedListIsAScopeError) {
  const ops::Const c(root_, {{1.f, 2.f}, {3.f}});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_FALSE(c.output.ok());
  EXPECT_THAT(root_.ToGraphDef(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must all have one type and shape; got float [2] and float [1]")));
  // Later ops see the error and add nothing.
  const ops::Const after(root_, 1.f);
  EXPECT_FALSE(after.operation.ok());
}

TEST_F(ConstOpTest, MixedTypesAreAScopeError) {
  const ops::Const c(root_, {1, 2.5f});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_THAT(root_.status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got int32 [] and float []")));
}

TEST_F(ConstOpTest, AnEmptyListIsAScopeError) {
  const ops::Const c(root_, {});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_THAT(root_.status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty initializer list")));
}

TEST_F(ConstOpTest, ValuesThatDoNotFitTheShapeAreAScopeError) {
  const ops::Const c(root_, {1, 2, 3, 4, 5}, {2, 3});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_THAT(root_.status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("shape [2,3] needs 6 values; the initializer has 5 (shape [5])")));
}

TEST_F(ConstOpTest, AShapedRaggedListKeepsItsError) {
  const ops::Const c(root_, {{1, 2}, {3}}, {3});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_THAT(root_.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("got int32 [2] and int32 [1]")));
}

TEST_F(ConstOpTest, AShapeTooLargeForOneTensorIsAScopeError) {
  const testing::ScopedMaxTensorBytes limit(1024);
  const ops::Const c(root_, 0.f, {1024, 1024});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_THAT(root_.status(), StatusIs(absl::StatusCode::kResourceExhausted,
                                       HasSubstr("float tensor of shape [1024,1024]")));
}

TEST_F(ConstOpTest, AnUninitializedTensorCannotBeShaped) {
  const ops::Const c(root_, Tensor(), {2});
  EXPECT_FALSE(c.operation.ok());
  EXPECT_THAT(root_.status(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("uninitialized Tensor the shape [2]")));
}

}  // namespace
}  // namespace rill
