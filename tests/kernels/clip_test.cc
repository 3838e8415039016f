#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::KernelTester;
using ::rill::testing::MakeTensor;
using ::rill::testing::RandomTensor;
using ::rill::testing::StatusIs;
using ::rill::testing::TensorEq;
using ::testing::HasSubstr;

TEST(ClipByValue, ScalarBounds) {
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("ClipByValue")
                                     .Input(MakeTensor<float>({2, 3}, {-3, -1, 0, 0.5f, 1, 4}))
                                     .Input(Tensor::Scalar<float>(-1))
                                     .Input(Tensor::Scalar<float>(0.75f))
                                     .RunOne());
  EXPECT_THAT(y, TensorEq(MakeTensor<float>({2, 3}, {-1, -1, 0, 0.5f, 0.75f, 0.75f})));
}

TEST(ClipByValue, TensorBoundsAndMixedBounds) {
  const Tensor t = MakeTensor<int32_t>({4}, {-5, 2, 7, 3});
  ASSERT_OK_AND_ASSIGN(Tensor both, KernelTester("ClipByValue")
                                        .Input(t)
                                        .Input(MakeTensor<int32_t>({4}, {0, 3, 0, -1}))
                                        .Input(MakeTensor<int32_t>({4}, {1, 4, 5, 2}))
                                        .RunOne());
  EXPECT_THAT(both, TensorEq(MakeTensor<int32_t>({4}, {0, 3, 5, 2})));
  ASSERT_OK_AND_ASSIGN(Tensor mixed, KernelTester("ClipByValue")
                                         .Input(t)
                                         .Input(Tensor::Scalar<int32_t>(0))
                                         .Input(MakeTensor<int32_t>({4}, {1, 4, 5, 2}))
                                         .RunOne());
  EXPECT_THAT(mixed, TensorEq(MakeTensor<int32_t>({4}, {0, 2, 5, 2})));
}

// Long enough for Eigen's vectorized path as well as its scalar tail.
TEST(ClipByValue, MatchesReferenceOnEveryThreadCount) {
  const Tensor t = RandomTensor(DT_DOUBLE, {37, 11}, 1, -3, 3);
  const Tensor hi = RandomTensor(DT_DOUBLE, {37, 11}, 2, 0, 2);
  Tensor expected(DT_DOUBLE, t.shape());
  for (int64_t i = 0; i < t.NumElements(); ++i) {
    expected.data<double>()[i] =
        std::max(std::min(t.data<double>()[i], hi.data<double>()[i]), -1.0);
  }
  for (int threads : {1, 2}) {
    ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("ClipByValue")
                                       .Input(t)
                                       .Input(Tensor::Scalar<double>(-1))
                                       .Input(hi)
                                       .RunOne(threads));
    EXPECT_THAT(y, TensorEq(expected));
  }
}

// As TensorFlow: the upper bound applies first, so a lower bound above it
// wins; NaN is not clipped.
TEST(ClipByValue, CrossedBoundsGiveTheMinimumAndNanPasses) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  ASSERT_OK_AND_ASSIGN(Tensor crossed, KernelTester("ClipByValue")
                                           .Input(MakeTensor<int64_t>({3}, {-4, 1, 9}))
                                           .Input(Tensor::Scalar<int64_t>(3))
                                           .Input(Tensor::Scalar<int64_t>(2))
                                           .RunOne());
  EXPECT_THAT(crossed, TensorEq(MakeTensor<int64_t>({3}, {3, 3, 3})));
  Tensor t = RandomTensor(DT_FLOAT, {40}, 3, -2, 2);
  t.data<float>()[5] = kNan;
  t.data<float>()[39] = kNan;
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("ClipByValue")
                                     .Input(t)
                                     .Input(Tensor::Scalar<float>(-1))
                                     .Input(Tensor::Scalar<float>(1))
                                     .RunOne());
  for (int64_t i = 0; i < 40; ++i) {
    const float v = y.data<float>()[i];
    if (i == 5 || i == 39) {
      EXPECT_TRUE(std::isnan(v)) << i;
    } else {
      EXPECT_EQ(v, std::clamp(t.data<float>()[i], -1.0f, 1.0f)) << i;
    }
  }
}

TEST(ClipByValue, BoundsMustBeScalarsOrShapedLikeT) {
  EXPECT_THAT(KernelTester("ClipByValue")
                  .Input(MakeTensor<float>({2, 2}, {1, 2, 3, 4}))
                  .Input(MakeTensor<float>({2}, {0, 0}))
                  .Input(Tensor::Scalar<float>(1))
                  .RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("must be either scalars or have the same shape as t")));
}

TEST(ClipByValue, EmptyInputGivesEmptyOutput) {
  ASSERT_OK_AND_ASSIGN(Tensor y, KernelTester("ClipByValue")
                                     .Input(Tensor(DT_FLOAT, {0, 2}))
                                     .Input(Tensor::Scalar<float>(0))
                                     .Input(Tensor::Scalar<float>(1))
                                     .RunOne());
  EXPECT_EQ(y.shape(), TensorShape({0, 2}));
}

}  // namespace
}  // namespace rill
