// Numeric gradient checks of FusedBatchNorm, V2 and V3 (float differences: the ops are
// float-only, as TensorFlow's) in training and inference mode, NHWC and NCHW.
#include <string>
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

// Float differences with a step of 1e-3 through a normalization leave
// round-off of about 1e-4; a gradient that missed the batch statistics'
// dependence on x would be off by order 1.
constexpr double kTolerance = 1e-3;

Output FloatVector(const Scope& s, std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return ops::Const(s, Tensor::FromVector<float>(values, {n}), DT_FLOAT);
}

// y of FusedBatchNormV3 on x [2, 3, 2, 3] channels last (or its channels-
// first transpose), the gradient checked with respect to x, scale and
// offset; mean and variance are constants (population moments in
// inference, empty in training as Keras feeds them).
absl::StatusOr<double> CheckV3(const std::string& format, bool training) {
  GradientChecker c(DT_FLOAT);
  const bool first = format == "NCHW";
  const Output x =
      c.RandomInput(first ? TensorShape({2, 3, 3, 2}) : TensorShape({2, 3, 2, 3}), -2, 2);
  const Output scale = c.RandomInput({3}, 0.5, 1.5);
  const Output offset = c.RandomInput({3});
  const Output mean =
      training ? FloatVector(c.scope(), {}) : FloatVector(c.scope(), {0.1f, -0.3f, 0.2f});
  const Output variance =
      training ? FloatVector(c.scope(), {}) : FloatVector(c.scope(), {0.8f, 1.5f, 0.6f});
  const ops::FusedBatchNormV3 bn(
      c.scope(), x, scale, offset, mean, variance,
      ops::FusedBatchNormV3::IsTraining(training).Epsilon(0.001f).DataFormat(format));
  return c.MaxError({bn.y});
}

TEST(BatchNormGrad, V3TrainingNhwc) {
  EXPECT_THAT(CheckV3("NHWC", true), GradientErrorBelow(kTolerance));
}

TEST(BatchNormGrad, V3TrainingNchw) {
  EXPECT_THAT(CheckV3("NCHW", true), GradientErrorBelow(kTolerance));
}

TEST(BatchNormGrad, V3InferenceNhwc) {
  EXPECT_THAT(CheckV3("NHWC", false), GradientErrorBelow(kTolerance));
}

TEST(BatchNormGrad, V3InferenceNchw) {
  EXPECT_THAT(CheckV3("NCHW", false), GradientErrorBelow(kTolerance));
}

// The older versions build their own gradient ops.
TEST(BatchNormGrad, FusedBatchNormAndV2) {
  {
    GradientChecker c(DT_FLOAT);
    const Output x = c.RandomInput({2, 2, 2, 2}, -2, 2);
    const Output scale = c.RandomInput({2}, 0.5, 1.5);
    const Output offset = c.RandomInput({2});
    const ops::FusedBatchNorm bn(c.scope(), x, scale, offset, FloatVector(c.scope(), {}),
                                 FloatVector(c.scope(), {}));
    EXPECT_THAT(c.MaxError({bn.y}), GradientErrorBelow(kTolerance));
  }
  {
    GradientChecker c(DT_FLOAT);
    const Output x = c.RandomInput({2, 2, 2, 2}, -2, 2);
    const Output scale = c.RandomInput({2}, 0.5, 1.5);
    const Output offset = c.RandomInput({2});
    const ops::FusedBatchNormV2 bn(c.scope(), x, scale, offset, FloatVector(c.scope(), {0, 1}),
                                   FloatVector(c.scope(), {2, 0.5f}),
                                   ops::FusedBatchNormV2::IsTraining(false));
    EXPECT_THAT(c.MaxError({bn.y}), GradientErrorBelow(kTolerance));
  }
}

}  // namespace
}  // namespace rill
