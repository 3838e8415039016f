// ResizeBilinear and ResizeBilinearGrad against TensorFlow's own cases
// (resize_bilinear_op_test.cc: 2x2 to 3x3 in its three sampling modes) and
// bad input.
#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;

std::vector<float> Resize2x2To3x3(bool align_corners, bool half_pixel_centers) {
  KernelTester t("ResizeBilinear");
  t.Attr("align_corners", align_corners)
      .Attr("half_pixel_centers", half_pixel_centers)
      .Input<float>({1, 2, 2, 1}, {1, 2, 3, 4})
      .Input<int32_t>({2}, {3, 3});
  absl::StatusOr<Tensor> out = t.RunOne();
  EXPECT_TRUE(out.ok()) << out.status();
  if (!out.ok()) return {};
  EXPECT_EQ(out->shape(), TensorShape({1, 3, 3, 1}));
  return Values<float>(*out);
}

constexpr float kEps = 1e-6f;

TEST(ResizeBilinear, TwoByTwoToThreeByThreeAsTensorFlow) {
  EXPECT_THAT(Resize2x2To3x3(false, false),
              ElementsAre(1, FloatNear(5.0f / 3, kEps), 2,                           //
                          FloatNear(7.0f / 3, kEps), 3, FloatNear(10.0f / 3, kEps),  //
                          3, FloatNear(11.0f / 3, kEps), 4));
  EXPECT_THAT(Resize2x2To3x3(true, false), ElementsAre(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4));
  EXPECT_THAT(Resize2x2To3x3(false, true), ElementsAre(1, 1.5, 2, 2, 2.5, 3, 3, 3.5, 4));
}

// Half-pixel centers halving a 4x4 image average each 2x2 block; uint8 in,
// float out.
TEST(ResizeBilinear, HalfPixelCentersHalvingAverages) {
  KernelTester t("ResizeBilinear");
  t.Attr("half_pixel_centers", true)
      .Input<uint8_t>({1, 4, 4, 1}, {0, 2, 4, 6, 2, 4, 6, 8, 10, 12, 14, 16, 12, 14, 16, 18})
      .Input<int32_t>({2}, {2, 2});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(Values<float>(out), ElementsAre(2, 6, 12, 16));
}

// The gradient returns each output's gradient to the pixels it mixed: a
// gradient of ones over 3x3 from 2x2 (legacy sampling) sums each pixel's
// weights.
TEST(ResizeBilinear, GradSumsTheWeights) {
  KernelTester t("ResizeBilinearGrad");
  t.Input<float>({1, 3, 3, 1}, std::vector<float>(9, 1.0f))
      .Input<float>({1, 2, 2, 1}, {1, 2, 3, 4});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  // Along one axis the samples sit at 0, 2/3 and 4/3 (the last clamped to
  // 1): pixel 0 gets 1 + 1/3, pixel 1 gets 2/3 + 1.
  const float a = 1 + 1.0f / 3, b = 2.0f / 3 + 1;
  EXPECT_THAT(Values<float>(out), ElementsAre(FloatNear(a * a, kEps), FloatNear(a * b, kEps),
                                              FloatNear(b * a, kEps), FloatNear(b * b, kEps)));
}

TEST(ResizeBilinear, RefusesBadInput) {
  KernelTester both("ResizeBilinear");
  both.Attr("align_corners", true)
      .Attr("half_pixel_centers", true)
      .Input<float>({1, 2, 2, 1}, {1, 2, 3, 4})
      .Input<int32_t>({2}, {3, 3});
  EXPECT_THAT(both.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                      HasSubstr("align_corners must be false")));
  KernelTester empty("ResizeBilinear");
  empty.Input<float>({1, 2, 2, 1}, {1, 2, 3, 4}).Input<int32_t>({2}, {0, 3});
  EXPECT_THAT(empty.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                       HasSubstr("must be positive, got [0, 3]")));
  KernelTester rank("ResizeBilinear");
  rank.UnknownInputShapes().Input<float>({2, 2}, {1, 2, 3, 4}).Input<int32_t>({2}, {3, 3});
  EXPECT_THAT(rank.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("images must be 4-D")));
}

}  // namespace
}  // namespace rill::testing
