// Bincount and DenseBincount against tf.math.bincount's documented
// examples: counts, weights, rows of a matrix, binary output, and the
// errors TensorFlow gives.
#include <cstdint>

#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// tf.math.bincount([1, 1, 2, 3, 2, 4, 4, 5]) with size 6 counts each value;
// values at or past size are dropped.
TEST(Bincount, CountsEachValueBelowSize) {
  KernelTester t("Bincount");
  t.Input<int32_t>({8}, {1, 1, 2, 3, 2, 4, 4, 9}).Input<int32_t>({}, {6}).Input<float>({0}, {});
  ASSERT_OK_AND_ASSIGN(Tensor bins, t.RunOne());
  EXPECT_THAT(Values<float>(bins), ElementsAre(0, 2, 2, 1, 2, 0));
}

TEST(Bincount, SumsWeights) {
  KernelTester t("Bincount");
  t.Input<int32_t>({4}, {0, 2, 2, 1}).Input<int32_t>({}, {3}).Input<double>({4}, {1, 2, 3, 4});
  ASSERT_OK_AND_ASSIGN(Tensor bins, t.RunOne());
  EXPECT_THAT(Values<double>(bins), ElementsAre(1, 4, 5));
}

TEST(DenseBincount, CountsPerRowAndBinaryOutput) {
  KernelTester t("DenseBincount");
  t.Input<int64_t>({2, 3}, {0, 1, 1, 2, 2, 2}).Input<int64_t>({}, {3}).Input<int32_t>({0}, {});
  ASSERT_OK_AND_ASSIGN(Tensor counts, t.RunOne());
  EXPECT_EQ(counts.shape(), TensorShape({2, 3}));
  EXPECT_THAT(Values<int32_t>(counts), ElementsAre(1, 2, 0, 0, 0, 3));
  KernelTester binary("DenseBincount");
  binary.Attr("binary_output", true)
      .Input<int64_t>({2, 3}, {0, 1, 1, 2, 2, 2})
      .Input<int64_t>({}, {3})
      .Input<int32_t>({0}, {});
  ASSERT_OK_AND_ASSIGN(Tensor present, binary.RunOne());
  EXPECT_THAT(Values<int32_t>(present), ElementsAre(1, 1, 0, 0, 0, 1));
}

TEST(Bincount, ErrorsAsTensorFlows) {
  KernelTester negative("Bincount");
  negative.Input<int32_t>({3}, {0, -1, 2}).Input<int32_t>({}, {3}).Input<float>({0}, {});
  EXPECT_THAT(negative.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                          HasSubstr("Input arr must be non-negative!")));
  KernelTester weights("Bincount");
  weights.Input<int32_t>({3}, {0, 1, 2}).Input<int32_t>({}, {3}).Input<float>({2}, {1, 1});
  EXPECT_THAT(weights.UnknownInputShapes().RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("weights of shape [2]")));
  KernelTester size("Bincount");
  size.Input<int32_t>({1}, {0}).Input<int32_t>({}, {-2}).Input<float>({0}, {});
  EXPECT_THAT(size.UnknownInputShapes().RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("size must be non-negative")));
}

}  // namespace
}  // namespace rill::testing
