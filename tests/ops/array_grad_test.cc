// Numeric gradient checks (float64 central differences against the
// Jacobian AddGradients builds) for every differentiable array op.
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/ops/gradient_checker.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GradientChecker;
using ::rill::testing::GradientErrorBelow;

constexpr double kTolerance = 1e-7;

Output Ints(const Scope& s, std::vector<int32_t> values) {
  const auto n = static_cast<int64_t>(values.size());
  return ops::Const(s, Tensor::FromVector<int32_t>(values, {n}), DT_INT32);
}

// Each case squares its result so that the checked Jacobian is not the
// constant one of a pure data movement.
Output Nonlinear(const GradientChecker& c, const Output& y) { return ops::Square(c.scope(), y); }

TEST(ArrayGrad, Identity) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Identity(c.scope(), x))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, IdentityNWithOneOutputUnused) {
  GradientChecker c;
  const Output a = c.RandomInput({2});
  const Output b = c.RandomInput({3});
  const ops::IdentityN id(c.scope(), {a, b});
  EXPECT_THAT(c.MaxError({Nonlinear(c, id.output[0])}), GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, PlaceholderWithDefaultPassesToItsDefault) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  const Output y = ops::PlaceholderWithDefault(c.scope(), x, PartialTensorShape({2, 3}));
  EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, Reshape) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Reshape(c.scope(), x, {3, -1}))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, ExpandDims) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::ExpandDims(c.scope(), x, 1))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, Squeeze) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 1, 3, 1});
  const Output y = ops::Squeeze(c.scope(), x, ops::Squeeze::SqueezeDims({1}));
  EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, Transpose) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3, 4});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Transpose(c.scope(), x, {2, 0, 1}))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, SplitWithSomeOutputsUnused) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 6});
  const ops::Split split(c.scope(), 1, x, 3);
  EXPECT_THAT(c.MaxError({Nonlinear(c, split.output[0]), split.output[2]}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, SplitV) {
  GradientChecker c;
  const Output x = c.RandomInput({5, 2});
  const ops::SplitV split(c.scope(), x, Ints(c.scope(), {1, 3, 1}), 0, 3);
  EXPECT_THAT(c.MaxError({split.output[1], Nonlinear(c, split.output[2])}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, ConcatV2AlongPositiveAndNegativeAxes) {
  for (int axis : {1, -1, 0}) {
    SCOPED_TRACE(axis);
    GradientChecker c;
    const Output a = c.RandomInput(axis == 0 ? TensorShape({1, 3}) : TensorShape({2, 1}));
    const Output b = c.RandomInput(axis == 0 ? TensorShape({2, 3}) : TensorShape({2, 3}));
    const Output y = ops::ConcatV2(c.scope(), {a, b}, axis);
    EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
  }
}

TEST(ArrayGrad, PackAlongAnInnerAxis) {
  GradientChecker c;
  const Output a = c.RandomInput({2, 3});
  const Output b = c.RandomInput({2, 3});
  const Output y = ops::Pack(c.scope(), {a, b, a}, ops::Pack::Axis(1));
  EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, UnpackWithOneOutputUnused) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  const ops::Unpack parts(c.scope(), x, 3, ops::Unpack::Axis(1));
  EXPECT_THAT(c.MaxError({Nonlinear(c, parts.output[0]), parts.output[2]}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, FillSumsIntoTheValue) {
  GradientChecker c;
  const Output value = c.RandomInput({});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Fill(c.scope(), Ints(c.scope(), {2, 3}), value))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, Tile) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Tile(c.scope(), x, {2, 3}))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, Slice) {
  GradientChecker c;
  const Output x = c.RandomInput({3, 4});
  const Output y = ops::Slice(c.scope(), x, {1, 1}, {2, -1});
  EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, StridedSliceWithStridesAndMasks) {
  struct Case {
    std::vector<int32_t> begin, end, strides;
    ops::StridedSlice::Attrs attrs;
  };
  const std::vector<Case> cases = {
      {{0, 1}, {3, 4}, {2, 2}, {}},
      {{2, 0}, {0, 4}, {-1, 1}, ops::StridedSlice::EndMask(1)},
      {{1, 0}, {2, 4}, {1, 1}, ops::StridedSlice::ShrinkAxisMask(1)},
      {{0, 0}, {3, 4}, {1, 3}, ops::StridedSlice::NewAxisMask(1)},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE(i);
    const Case& k = cases[i];
    GradientChecker c;
    const Output x = c.RandomInput({3, 4});
    const Scope& s = c.scope();
    const Output y =
        ops::StridedSlice(s, x, Ints(s, k.begin), Ints(s, k.end), Ints(s, k.strides), k.attrs);
    EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
  }
}

// A repeated index adds both slices' gradients into one row.
TEST(ArrayGrad, GatherWithRepeatedIndices) {
  GradientChecker c;
  const Output params = c.RandomInput({4, 3});
  const Output indices = ops::Const(c.scope(), {{3, 0}, {3, 1}});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Gather(c.scope(), params, indices))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, GatherV2AlongEveryAxis) {
  for (int axis : {0, 1, 2, -1}) {
    SCOPED_TRACE(axis);
    GradientChecker c;
    const Output params = c.RandomInput({3, 4, 2});
    const Output indices =
        ops::Const(c.scope(), Tensor::FromVector<int64_t>({1, 0, 1}, {3}), DT_INT64);
    const Output y = ops::GatherV2(c.scope(), params, indices, axis);
    EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
  }
}

TEST(ArrayGrad, GatherV2WithMatrixIndicesInTheMiddle) {
  GradientChecker c;
  const Output params = c.RandomInput({2, 3, 2});
  const Output indices = ops::Const(c.scope(), {{2, 0}, {2, 1}});
  const Output y = ops::GatherV2(c.scope(), params, indices, 1);
  EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, DynamicStitch) {
  GradientChecker c;
  const Output a = c.RandomInput({2, 2});
  const Output b = c.RandomInput({3, 2});
  const Scope& s = c.scope();
  const Output y = ops::DynamicStitch(s, {Ints(s, {4, 0}), Ints(s, {1, 3, 2})}, {a, b});
  EXPECT_THAT(c.MaxError({Nonlinear(c, y)}), GradientErrorBelow(kTolerance));
}

// Pad and PadV2: the gradient is the middle of the padded one.
TEST(ArrayGrad, Pad) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  const Output paddings =
      ops::Const(c.scope(), Tensor::FromVector<int32_t>({1, 0, 2, 1}, {2, 2}), DT_INT32);
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::Pad(c.scope(), x, paddings))}),
              GradientErrorBelow(kTolerance));
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::PadV2(c.scope(), x, paddings, 0.5))}),
              GradientErrorBelow(kTolerance));
}

// MirrorPad folds the border's gradient back onto what it mirrors, in both
// modes; MirrorPadGrad's own gradient is MirrorPad.
TEST(ArrayGrad, MirrorPad) {
  for (const char* mode : {"REFLECT", "SYMMETRIC"}) {
    GradientChecker c;
    const Output x = c.RandomInput({3, 4});
    const Output paddings =
        ops::Const(c.scope(), Tensor::FromVector<int64_t>({2, 1, 1, 2}, {2, 2}), DT_INT64);
    const Output padded = ops::MirrorPad(c.scope(), x, paddings, mode);
    EXPECT_THAT(c.MaxError({Nonlinear(c, padded)}), GradientErrorBelow(kTolerance)) << mode;
    GradientChecker g;
    const Output big = g.RandomInput({6, 7});
    const Output folded = ops::MirrorPadGrad(
        g.scope(), big,
        ops::Const(g.scope(), Tensor::FromVector<int32_t>({2, 1, 1, 2}, {2, 2}), DT_INT32), mode);
    EXPECT_THAT(g.MaxError({Nonlinear(g, folded)}), GradientErrorBelow(kTolerance)) << mode;
  }
}

// GatherNd with a repeated row: both gathers' gradients add up.
TEST(ArrayGrad, GatherNd) {
  GradientChecker c;
  const Output params = c.RandomInput({3, 2, 2});
  const Output indices =
      ops::Const(c.scope(), Tensor::FromVector<int32_t>({2, 1, 0, 0, 2, 1}, {3, 2}), DT_INT32);
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::GatherNd(c.scope(), params, indices))}),
              GradientErrorBelow(kTolerance));
}

TEST(ArrayGrad, ReverseV2) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3, 2});
  EXPECT_THAT(c.MaxError({Nonlinear(c, ops::ReverseV2(c.scope(), x, {0, 2}))}),
              GradientErrorBelow(kTolerance));
}

}  // namespace
}  // namespace rill
