// Pad, PadV2, MirrorPad and MirrorPadGrad against the examples in
// TensorFlow's documentation of tf.pad and MirrorPadGrad, and bad paddings.
#include <cstdint>
#include <vector>

#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// tf.pad's example: t = [[1, 2, 3], [4, 5, 6]], paddings [[1, 1], [2, 2]].
KernelTester& PadExample(KernelTester& t) {
  return t.Input<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6}).Input<int32_t>({2, 2}, {1, 1, 2, 2});
}

TEST(Pad, ConstantAsTensorFlowsExample) {
  KernelTester t("Pad");
  ASSERT_OK_AND_ASSIGN(Tensor out, PadExample(t).RunOne());
  EXPECT_EQ(out.shape(), TensorShape({4, 7}));
  EXPECT_THAT(Values<int32_t>(out), ElementsAre(0, 0, 0, 0, 0, 0, 0,  //
                                                0, 0, 1, 2, 3, 0, 0,  //
                                                0, 0, 4, 5, 6, 0, 0,  //
                                                0, 0, 0, 0, 0, 0, 0));
}

TEST(Pad, PadV2FillsWithItsConstant) {
  KernelTester t("PadV2");
  t.Input<float>({2}, {1, 2}).Input<int64_t>({1, 2}, {1, 2}).Input<float>({}, {-1});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(Values<float>(out), ElementsAre(-1, 1, 2, -1, -1));
}

TEST(Pad, EmptyInputIsAllBorder) {
  KernelTester t("Pad");
  t.Input<float>({0, 2}, {}).Input<int32_t>({2, 2}, {1, 0, 0, 1});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_EQ(out.shape(), TensorShape({1, 3}));
  EXPECT_THAT(Values<float>(out), ElementsAre(0, 0, 0));
}

TEST(MirrorPad, ReflectAsTensorFlowsExample) {
  KernelTester t("MirrorPad");
  t.Attr("mode", std::string("REFLECT"));
  ASSERT_OK_AND_ASSIGN(Tensor out, PadExample(t).RunOne());
  EXPECT_THAT(Values<int32_t>(out), ElementsAre(6, 5, 4, 5, 6, 5, 4,  //
                                                3, 2, 1, 2, 3, 2, 1,  //
                                                6, 5, 4, 5, 6, 5, 4,  //
                                                3, 2, 1, 2, 3, 2, 1));
}

TEST(MirrorPad, SymmetricAsTensorFlowsExample) {
  KernelTester t("MirrorPad");
  t.Attr("mode", std::string("SYMMETRIC"));
  ASSERT_OK_AND_ASSIGN(Tensor out, PadExample(t).RunOne());
  EXPECT_THAT(Values<int32_t>(out), ElementsAre(2, 1, 1, 2, 3, 3, 2,  //
                                                2, 1, 1, 2, 3, 3, 2,  //
                                                5, 4, 4, 5, 6, 6, 5,  //
                                                5, 4, 4, 5, 6, 6, 5));
}

// MirrorPadGrad's example: [[1..9]] 3x3, paddings [[0, 1], [0, 1]],
// SYMMETRIC: [[1, 5], [11, 28]].
TEST(MirrorPad, GradFoldsTheBorderBack) {
  KernelTester t("MirrorPadGrad");
  t.Attr("mode", std::string("SYMMETRIC"))
      .Input<float>({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9})
      .Input<int32_t>({2, 2}, {0, 1, 0, 1});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_EQ(out.shape(), TensorShape({2, 2}));
  EXPECT_THAT(Values<float>(out), ElementsAre(1, 5, 11, 28));
}

TEST(MirrorPad, RefusesABorderWiderThanTheInputAllows) {
  KernelTester t("MirrorPad");
  t.Attr("mode", std::string("REFLECT")).Input<float>({2}, {1, 2}).Input<int32_t>({1, 2}, {2, 0});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("must be at most 1 in REFLECT mode")));
}

TEST(Pad, RefusesBadPaddings) {
  KernelTester negative("Pad");
  negative.Input<float>({2}, {1, 2}).Input<int32_t>({1, 2}, {-1, 0});
  EXPECT_THAT(negative.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("non-negative, got -1")));
  KernelTester wrong_rank("Pad");
  wrong_rank.Input<float>({2}, {1, 2}).Input<int32_t>({2, 2}, {0, 0, 0, 0});
  EXPECT_THAT(wrong_rank.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be [1, 2]")));
}

}  // namespace
}  // namespace rill::testing
