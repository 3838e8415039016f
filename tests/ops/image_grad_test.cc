// ResizeBilinear's gradient against central differences, in its three
// sampling modes, upsampling and downsampling.
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

TEST(ImageGrad, ResizeBilinear) {
  struct Mode {
    bool align_corners;
    bool half_pixel_centers;
  };
  for (const Mode mode : {Mode{false, false}, Mode{true, false}, Mode{false, true}}) {
    for (const std::vector<int32_t>& size : {std::vector<int32_t>{5, 7}, {2, 3}}) {
      // The resize computes in float: the checker's float mode.
      GradientChecker c(DT_FLOAT);
      const Output images = c.RandomInput({2, 4, 5, 3});
      const Output resized = ops::ResizeBilinear(
          c.scope(), images,
          ops::Const(c.scope(), Tensor::FromVector<int32_t>(size, {2}), DT_INT32),
          ops::ResizeBilinear::AlignCorners(mode.align_corners)
              .HalfPixelCenters(mode.half_pixel_centers));
      EXPECT_THAT(c.MaxError({ops::Square(c.scope(), resized)}), GradientErrorBelow(1e-3))
          << mode.align_corners << mode.half_pixel_centers << size[0];
    }
  }
}

}  // namespace
}  // namespace rill
