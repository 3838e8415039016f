// ResolveStridedSlice against TensorFlow's semantics: shrunk axes, ellipsis
// and new axes, clamping, unknown values, and the bound on the masks' width.
#include "ops/strided_slice_spec.h"

#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr auto kInvalid = absl::StatusCode::kInvalidArgument;

SparseSliceSpec Spec(std::vector<int64_t> begin, std::vector<int64_t> end,
                     std::vector<int64_t> strides, StridedSliceMasks masks = {}) {
  const auto length = static_cast<int64_t>(strides.size());
  return SparseSliceSpec{length, std::move(begin), std::move(end), std::move(strides), masks};
}

// TensorFlow rejects it ("only stride 1 allowed on non-range indexing");
// the kernel used to take the element at begin while the shape function
// rejected it.
TEST(ResolveStridedSlice, NegativeStrideOnAShrunkAxisIsRejected) {
  EXPECT_THAT(
      ResolveStridedSlice(PartialTensorShape({5}), Spec({2}, {3}, {-1}, {.shrink_axis = 1})),
      StatusIs(kInvalid, HasSubstr("entry 0 shrinks its dimension (shrink_axis_mask) and "
                                   "so takes a positive stride, got strides[0] = -1")));
}

// x[-1] has end 0: the index alone counts. A stride above 1 still takes
// that one element.
TEST(ResolveStridedSlice, ShrunkAxisTakesTheElementAtBegin) {
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec last,
      ResolveStridedSlice(PartialTensorShape({5, 6}), Spec({-1}, {0}, {3}, {.shrink_axis = 1})));
  EXPECT_THAT(last.begin, ElementsAre(4, 0));
  EXPECT_THAT(last.end, ElementsAre(5, 6));
  EXPECT_EQ(last.processing_shape.DebugString(), "[1,6]");
  EXPECT_EQ(last.final_shape.DebugString(), "[6]");
}

// As in TensorFlow, begin_mask does not apply to a single index.
TEST(ResolveStridedSlice, ShrunkAxisIgnoresTheBeginMask) {
  ASSERT_OK_AND_ASSIGN(StridedSliceSpec spec,
                       ResolveStridedSlice(PartialTensorShape({5}),
                                           Spec({3}, {4}, {1}, {.begin = 1, .shrink_axis = 1})));
  EXPECT_THAT(spec.begin, ElementsAre(3));
  EXPECT_THAT(ResolveStridedSlice(PartialTensorShape({5}),
                                  Spec({7}, {8}, {1}, {.begin = 1, .shrink_axis = 1})),
              StatusIs(kInvalid, HasSubstr("index 7 (begin[0]) is out of bounds for dimension 0 "
                                           "of size 5")));
}

// x[..., tf.newaxis, 1] on [2, 3, 4]: the new axis after the ellipsis does
// not take an input dimension from it.
TEST(ResolveStridedSlice, NewAxisAfterTheEllipsis) {
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec spec,
      ResolveStridedSlice(PartialTensorShape({2, 3, 4}),
                          Spec({0, 0, 1}, {0, 0, 2}, {1, 1, 1},
                               {.ellipsis = 0b001, .new_axis = 0b010, .shrink_axis = 0b100})));
  EXPECT_EQ(spec.processing_shape.DebugString(), "[2,3,1]");
  EXPECT_EQ(spec.final_shape.DebugString(), "[2,3,1]");
  EXPECT_THAT(spec.begin, ElementsAre(0, 0, 1));
}

// x[tf.newaxis, ..., 0:2] and x[1, ..., -1] on [2, 3, 4] and [2, 3, 4, 5].
TEST(ResolveStridedSlice, EllipsisBetweenNewAxesAndShrunkAxes) {
  ASSERT_OK_AND_ASSIGN(StridedSliceSpec front,
                       ResolveStridedSlice(PartialTensorShape({2, 3, 4}),
                                           Spec({0, 0, 0}, {0, 0, 2}, {1, 1, 1},
                                                {.ellipsis = 0b010, .new_axis = 0b001})));
  EXPECT_EQ(front.final_shape.DebugString(), "[1,2,3,2]");
  ASSERT_OK_AND_ASSIGN(StridedSliceSpec middle,
                       ResolveStridedSlice(PartialTensorShape({2, 3, 4, 5}),
                                           Spec({1, 0, -1}, {2, 0, 0}, {1, 1, 1},
                                                {.ellipsis = 0b010, .shrink_axis = 0b101})));
  EXPECT_EQ(middle.final_shape.DebugString(), "[3,4]");
  EXPECT_THAT(middle.begin, ElementsAre(1, 0, 0, 4));
}

// An ellipsis bit past the spec's entries is ignored: the spec gets its
// implied trailing ellipsis, so the dimensions it does not name are kept.
TEST(ResolveStridedSlice, EllipsisBitPastTheSpecIsIgnored) {
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec spec,
      ResolveStridedSlice(PartialTensorShape({2, 3}), Spec({0}, {1}, {1}, {.ellipsis = 1 << 5})));
  EXPECT_EQ(spec.final_shape.DebugString(), "[1,3]");
}

// x[-100:100, 10:-10] on [5, 6], and x[100:-100:-1] on [5].
TEST(ResolveStridedSlice, ClampsOutOfRangeBoundsToTheDimension) {
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec forward,
      ResolveStridedSlice(PartialTensorShape({5, 6}), Spec({-100, 10}, {100, -10}, {1, 1})));
  EXPECT_THAT(forward.begin, ElementsAre(0, 6));
  EXPECT_THAT(forward.end, ElementsAre(5, 0));
  EXPECT_EQ(forward.final_shape.DebugString(), "[5,0]");
  ASSERT_OK_AND_ASSIGN(StridedSliceSpec backward,
                       ResolveStridedSlice(PartialTensorShape({5}), Spec({100}, {-100}, {-1})));
  EXPECT_THAT(backward.begin, ElementsAre(4));
  EXPECT_THAT(backward.end, ElementsAre(-1));
  EXPECT_EQ(backward.final_shape.DebugString(), "[5]");
}

// The masks hold one bit per entry (and one for the implied ellipsis) in
// 32 bits, as TensorFlow's; a longer spec used to shift past 64 bits.
TEST(ResolveStridedSlice, RejectsMoreEntriesThanTheMasksHold) {
  const PartialTensorShape ones(std::vector<int64_t>(70, 1));
  EXPECT_THAT(
      ResolveStridedSlice(ones, Spec(std::vector<int64_t>(64, 0), std::vector<int64_t>(64, 1),
                                     std::vector<int64_t>(64, 1))),
      StatusIs(kInvalid, HasSubstr("64 entries; at most 31 are allowed")));
  EXPECT_THAT(
      ResolveStridedSlice(ones, Spec(std::vector<int64_t>(32, 0), std::vector<int64_t>(32, 1),
                                     std::vector<int64_t>(32, 1))),
      StatusIs(kInvalid, HasSubstr("32 entries")));
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec most,
      ResolveStridedSlice(ones,
                          Spec(std::vector<int64_t>(31, 0), std::vector<int64_t>(31, 1),
                               std::vector<int64_t>(31, 1), {.shrink_axis = int64_t{1} << 30})));
  EXPECT_EQ(most.final_shape.dims(), 69);
}

// The ellipsis may stand for more dimensions than the masks have bits.
TEST(ResolveStridedSlice, HighRankInputBehindAnEllipsis) {
  std::vector<int64_t> dims(40, 1);
  dims.back() = 3;
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec spec,
      ResolveStridedSlice(PartialTensorShape(absl::MakeConstSpan(dims)),
                          Spec({0, 1}, {0, 2}, {1, 1}, {.ellipsis = 0b01, .shrink_axis = 0b10})));
  EXPECT_EQ(spec.final_shape, PartialTensorShape(std::vector<int64_t>(39, 1)))
      << spec.final_shape.DebugString();
  EXPECT_EQ(spec.begin.back(), 1);
}

TEST(ResolveStridedSlice, UnknownValuesAndSizesStayUnknown) {
  SparseSliceSpec unknown_values{2, std::nullopt, std::nullopt, std::nullopt, {.shrink_axis = 1}};
  ASSERT_OK_AND_ASSIGN(StridedSliceSpec spec,
                       ResolveStridedSlice(PartialTensorShape({5, 6, 7}), unknown_values));
  EXPECT_EQ(spec.final_shape.DebugString(), "[?,7]");
  ASSERT_OK_AND_ASSIGN(
      StridedSliceSpec unknown_size,
      ResolveStridedSlice(PartialTensorShape({-1, 6}), Spec({0, 1}, {2, 5}, {1, 2})));
  EXPECT_EQ(unknown_size.final_shape.DebugString(), "[?,2]");
}

TEST(ResolveStridedSlice, RejectsMalformedSpecsNamingTheEntry) {
  EXPECT_THAT(ResolveStridedSlice(PartialTensorShape({5, 6}), Spec({0, 0}, {1, 1}, {1, 0})),
              StatusIs(kInvalid, HasSubstr("strides[1] must be non-zero")));
  EXPECT_THAT(
      ResolveStridedSlice(PartialTensorShape({5}), Spec({0, 0}, {1, 1}, {1, 1})),
      StatusIs(kInvalid, HasSubstr("slice entry 1 is out of range for an input of rank 1")));
  EXPECT_THAT(ResolveStridedSlice(PartialTensorShape({5, 6}),
                                  Spec({0, 0}, {1, 1}, {1, 1}, {.ellipsis = 0b11})),
              StatusIs(kInvalid, HasSubstr("ellipsis_mask 3 has more than one ellipsis")));
  EXPECT_THAT(ResolveStridedSlice(
                  PartialTensorShape({5, 6}),
                  SparseSliceSpec{2, std::vector<int64_t>{0}, std::nullopt, std::nullopt, {}}),
              StatusIs(kInvalid, HasSubstr("begin has 1 entries but the spec has 2")));
}

}  // namespace
}  // namespace rill
