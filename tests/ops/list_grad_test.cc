// Gradients of the TensorList ops, checked against float64 central
// differences through lists built and read as programs build them.
#include <vector>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/ops/gradient_checker.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GradientChecker;
using ::rill::testing::GradientErrorBelow;

Output Shape(const Scope& s, std::vector<int32_t> dims) {
  return ops::Const(s, Tensor::FromVector<int32_t>(dims, {static_cast<int64_t>(dims.size())}),
                    DT_INT32);
}
Output Int(const Scope& s, int32_t v) {
  return ops::Const(s, Tensor::Scalar<int32_t>(v), DT_INT32);
}

// Stack(FromTensor(x)) squared, and an element read back.
TEST(ListGradTest, FromTensorStackAndGetItem) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({3, 2});
  const Output list = ops::TensorListFromTensor(s, x, Shape(s, {2}));
  const Output stacked = ops::TensorListStack(s, list, Shape(s, {2}), DT_DOUBLE);
  const Output item = ops::TensorListGetItem(s, list, Int(s, 1), Shape(s, {2}), DT_DOUBLE);
  EXPECT_THAT(c.MaxError({ops::Mul(s, stacked, stacked), ops::Tanh(s, item)}),
              GradientErrorBelow(1e-8));
}

// Two elements written into a reserved list, one overwritten, all read.
TEST(ListGradTest, SetItemOverwritesAndGetItemReads) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output a = c.RandomInput({2});
  const Output b = c.RandomInput({2});
  Output list = ops::TensorListReserve(s, Shape(s, {2}), Int(s, 3), DT_DOUBLE);
  list = ops::TensorListSetItem(s, list, Int(s, 0), a);
  list = ops::TensorListSetItem(s, list, Int(s, 2), ops::Mul(s, a, b));
  list = ops::TensorListSetItem(s, list, Int(s, 0), ops::Tanh(s, b));
  const Output out = ops::TensorListStack(s, list, Shape(s, {2}), DT_DOUBLE);
  EXPECT_THAT(c.MaxError({out}), GradientErrorBelow(1e-8));
}

TEST(ListGradTest, ScatterThenGather) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({3, 2});
  const Output indices = ops::Const(s, Tensor::FromVector<int32_t>({4, 0, 2}, {3}), DT_INT32);
  const Output list = ops::TensorListScatterV2(s, x, indices, Shape(s, {2}), Int(s, 5));
  const Output picked = ops::Const(s, Tensor::FromVector<int32_t>({2, 2, 4}, {3}), DT_INT32);
  const Output rows = ops::TensorListGather(s, list, picked, Shape(s, {2}), DT_DOUBLE);
  EXPECT_THAT(c.MaxError({ops::Square(s, rows)}), GradientErrorBelow(1e-8));
}

TEST(ListGradTest, SplitThenConcat) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({4, 2});
  const Output lengths = ops::Const(s, Tensor::FromVector<int64_t>({1, 3}, {2}), DT_INT64);
  const Output list = ops::TensorListSplit(s, x, Shape(s, {-1, 2}), lengths);
  const ops::TensorListConcatV2 joined(
      s, list, Shape(s, {-1, 2}), ops::Const(s, Tensor::FromVector<int64_t>({}, {0}), DT_INT64),
      DT_DOUBLE);
  EXPECT_THAT(c.MaxError({ops::Tanh(s, joined.tensor)}), GradientErrorBelow(1e-8));
}

TEST(ListGradTest, PushBackThenPopBack) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output a = c.RandomInput({2});
  const Output b = c.RandomInput({2});
  Output list = ops::EmptyTensorList(s, Shape(s, {2}), Int(s, -1), DT_DOUBLE);
  list = ops::TensorListPushBack(s, list, a);
  list = ops::TensorListPushBack(s, list, ops::Mul(s, a, b));
  const ops::TensorListPopBack pop(s, list, Shape(s, {2}), DT_DOUBLE);
  const Output rest = ops::TensorListStack(s, pop.output_handle, Shape(s, {2}), DT_DOUBLE);
  EXPECT_THAT(c.MaxError({pop.tensor, ops::Tanh(s, rest)}), GradientErrorBelow(1e-8));
}

}  // namespace
}  // namespace rill
