#include "ops/window_size.h"

#include <cstdint>
#include <limits>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

TEST(WindowSize, MatchesTensorFlowForEachPadding) {
  // 7 inputs, a 3-wide window dilated by 2 (5 effective), stride 2.
  ASSERT_OK_AND_ASSIGN(WindowSize same, ComputeWindowSize(7, 3, 2, 2, WindowPadding::kSame));
  EXPECT_EQ(same.output, 4);
  EXPECT_EQ(same.pad_before, 2);  // (3 * 2 + 5 - 7) / 2
  EXPECT_EQ(same.effective_window, 5);
  ASSERT_OK_AND_ASSIGN(WindowSize valid,
                       ComputeWindowSize(7, 3, 2, 2, WindowPadding::kValid, 9, 9));
  EXPECT_EQ(valid.output, 2);  // Paddings are ignored without EXPLICIT.
  EXPECT_EQ(valid.pad_before, 0);
  ASSERT_OK_AND_ASSIGN(WindowSize padded,
                       ComputeWindowSize(7, 3, 2, 2, WindowPadding::kExplicit, 1, 2));
  EXPECT_EQ(padded.output, 3);
  EXPECT_EQ(padded.pad_before, 1);
  // A window a little larger than the input: empty, as TensorFlow.
  ASSERT_OK_AND_ASSIGN(WindowSize empty, ComputeWindowSize(4, 5, 1, 1, WindowPadding::kValid));
  EXPECT_EQ(empty.output, 0);
}

TEST(WindowSize, OverflowAndNegativeSizesAreErrorsWithTheNumbers) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  EXPECT_THAT(ComputeWindowSize(8, kMax, 2, 1, WindowPadding::kValid),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
  EXPECT_THAT(ComputeWindowSize(kMax, 1, 1, 1, WindowPadding::kExplicit, kMax, 0),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("paddings")));
  EXPECT_THAT(ComputeWindowSize(8, kMax, 2, 1, WindowPadding::kSame),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
  EXPECT_THAT(ComputeWindowSize(2, 9, 1, 1, WindowPadding::kValid),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Computed output size would be negative")));
}

}  // namespace
}  // namespace rill
