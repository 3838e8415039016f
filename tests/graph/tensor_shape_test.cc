#include "graph/tensor_shape.h"

#include <limits>
#include <vector>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TensorShapeProto ProtoOf(std::initializer_list<int64_t> dims, bool unknown_rank = false) {
  TensorShapeProto proto;
  for (int64_t d : dims) proto.add_dim()->set_size(d);
  proto.set_unknown_rank(unknown_rank);
  return proto;
}

TEST(TensorShape, DefaultIsAScalarWithOneElement) {
  TensorShape s;
  EXPECT_EQ(s.dims(), 0);
  EXPECT_EQ(s.num_elements(), 1);
  EXPECT_EQ(s.DebugString(), "[]");
}

TEST(TensorShape, CountsElements) {
  TensorShape s({2, 3, 4});
  EXPECT_EQ(s.dims(), 3);
  EXPECT_EQ(s.dim_size(1), 3);
  EXPECT_EQ(s.num_elements(), 24);
  EXPECT_THAT(s.dim_sizes(), ElementsAre(2, 3, 4));
  EXPECT_EQ(s.DebugString(), "[2,3,4]");
  EXPECT_EQ(TensorShape({5, 0, 7}).num_elements(), 0);
}

TEST(TensorShape, MutatorsKeepElementCount) {
  TensorShape s({2, 3});
  s.AddDim(5);
  EXPECT_EQ(s.num_elements(), 30);
  s.set_dim(0, 4);
  EXPECT_EQ(s.num_elements(), 60);
  s.RemoveDim(1);
  EXPECT_EQ(s, TensorShape({4, 5}));
  EXPECT_EQ(s.num_elements(), 20);
}

TEST(TensorShape, CreateRejectsNegativeDimensions) {
  const std::vector<int64_t> dims = {2, -3};
  EXPECT_THAT(TensorShape::Create(dims),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("dimension 1"), HasSubstr("[2,-3]"))));
}

TEST(TensorShape, CreateRejectsTooManyDimensions) {
  const std::vector<int64_t> dims(kMaxTensorRank + 1, 1);
  EXPECT_THAT(TensorShape::Create(dims),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("255 dimensions")));
  const std::vector<int64_t> max_dims(kMaxTensorRank, 1);
  EXPECT_OK(TensorShape::Create(max_dims));
}

TEST(TensorShape, CreateRejectsElementCountOverflow) {
  const int64_t big = int64_t{1} << 32;
  const std::vector<int64_t> dims = {big, big};
  EXPECT_THAT(TensorShape::Create(dims),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
  const std::vector<int64_t> fits = {std::numeric_limits<int64_t>::max(), 1};
  ASSERT_OK_AND_ASSIGN(TensorShape s, TensorShape::Create(fits));
  EXPECT_EQ(s.num_elements(), std::numeric_limits<int64_t>::max());
}

TEST(TensorShape, CreateAcceptsZeroBesideHugeDimensions) {
  const int64_t big = int64_t{1} << 40;
  const std::vector<int64_t> dims = {0, big};
  ASSERT_OK_AND_ASSIGN(TensorShape s, TensorShape::Create(dims));
  EXPECT_EQ(s.num_elements(), 0);
}

TEST(TensorShape, ProtoRoundTrip) {
  const TensorShape s({7, 1, 3});
  ASSERT_OK_AND_ASSIGN(TensorShape back, TensorShape::FromProto(s.AsProto()));
  EXPECT_EQ(back, s);
  EXPECT_EQ(s.AsProto().dim_size(), 3);
  EXPECT_FALSE(s.AsProto().unknown_rank());
}

TEST(TensorShape, FromProtoRejectsPartialShapes) {
  EXPECT_THAT(TensorShape::FromProto(ProtoOf({}, /*unknown_rank=*/true)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown rank")));
  EXPECT_THAT(TensorShape::FromProto(ProtoOf({-1, 784})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("dimension 0"), HasSubstr("[?,784]"))));
  EXPECT_THAT(TensorShape::FromProto(ProtoOf({4, -7})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-7")));
}

TEST(TensorShapeDeathTest, UncheckedConstructorAbortsOnNegativeDimension) {
  EXPECT_DEATH(TensorShape({3, -1}), "dimension 1");
}

TEST(PartialTensorShape, DefaultHasUnknownRank) {
  PartialTensorShape s;
  EXPECT_TRUE(s.unknown_rank());
  EXPECT_EQ(s.dims(), -1);
  EXPECT_FALSE(s.IsFullyDefined());
  EXPECT_EQ(s.num_elements(), -1);
  EXPECT_EQ(s.DebugString(), "<unknown>");
}

TEST(PartialTensorShape, PrintsUnknownDimensionsAsQuestionMarks) {
  EXPECT_EQ(PartialTensorShape({-1, 784}).DebugString(), "[?,784]");
  EXPECT_EQ(PartialTensorShape::UnknownOfRank(2).DebugString(), "[?,?]");
  EXPECT_EQ(PartialTensorShape({}).DebugString(), "[]");
}

TEST(PartialTensorShape, FullyDefinedOnlyWithoutUnknowns) {
  EXPECT_TRUE(PartialTensorShape({2, 3}).IsFullyDefined());
  EXPECT_EQ(PartialTensorShape({2, 3}).num_elements(), 6);
  EXPECT_FALSE(PartialTensorShape({2, -1}).IsFullyDefined());
  EXPECT_EQ(PartialTensorShape({2, -1}).num_elements(), -1);
  ASSERT_OK_AND_ASSIGN(TensorShape full, PartialTensorShape({2, 3}).AsTensorShape());
  EXPECT_EQ(full, TensorShape({2, 3}));
  EXPECT_THAT(PartialTensorShape({2, -1}).AsTensorShape(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("[2,?]")));
}

TEST(PartialTensorShape, ConvertsFromTensorShape) {
  PartialTensorShape s = TensorShape({4, 5});
  EXPECT_FALSE(s.unknown_rank());
  EXPECT_THAT(s.dim_sizes(), ElementsAre(4, 5));
}

TEST(PartialTensorShape, AddDimAppends) {
  PartialTensorShape s({});
  s.AddDim(-1);
  s.AddDim(3);
  EXPECT_EQ(s, PartialTensorShape({-1, 3}));
}

TEST(PartialTensorShape, FromProtoReadsUnknownRankAndDims) {
  ASSERT_OK_AND_ASSIGN(PartialTensorShape unknown,
                       PartialTensorShape::FromProto(ProtoOf({}, true)));
  EXPECT_TRUE(unknown.unknown_rank());
  ASSERT_OK_AND_ASSIGN(PartialTensorShape s, PartialTensorShape::FromProto(ProtoOf({-1, 10})));
  EXPECT_EQ(s, PartialTensorShape({-1, 10}));
}

TEST(PartialTensorShape, FromProtoRejectsUnknownRankWithDims) {
  EXPECT_THAT(PartialTensorShape::FromProto(ProtoOf({2}, true)),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("unknown_rank")));
}

TEST(PartialTensorShape, FromProtoRejectsDimsBelowMinusOne) {
  EXPECT_THAT(PartialTensorShape::FromProto(ProtoOf({3, -2})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("dimension 1"), HasSubstr("-2"))));
}

TEST(PartialTensorShape, ProtoRoundTrip) {
  for (const PartialTensorShape& s :
       {PartialTensorShape(), PartialTensorShape({}), PartialTensorShape({-1, 0, 5})}) {
    ASSERT_OK_AND_ASSIGN(PartialTensorShape back, PartialTensorShape::FromProto(s.AsProto()));
    EXPECT_EQ(back, s) << s.DebugString();
  }
}

TEST(PartialTensorShape, CompatibilityTreatsUnknownsAsWildcards) {
  const PartialTensorShape a({-1, 784});
  EXPECT_TRUE(a.IsCompatibleWith(PartialTensorShape({64, 784})));
  EXPECT_TRUE(a.IsCompatibleWith(PartialTensorShape()));
  EXPECT_TRUE(a.IsCompatibleWith(PartialTensorShape({-1, -1})));
  EXPECT_FALSE(a.IsCompatibleWith(PartialTensorShape({64, 10})));
  EXPECT_FALSE(a.IsCompatibleWith(PartialTensorShape({784})));
}

TEST(PartialTensorShape, MergeKeepsTheMostSpecificDimensions) {
  ASSERT_OK_AND_ASSIGN(PartialTensorShape merged,
                       PartialTensorShape({-1, 784}).MergeWith(PartialTensorShape({64, -1})));
  EXPECT_EQ(merged, PartialTensorShape({64, 784}));
  ASSERT_OK_AND_ASSIGN(merged, PartialTensorShape().MergeWith(PartialTensorShape({3, -1})));
  EXPECT_EQ(merged, PartialTensorShape({3, -1}));
  ASSERT_OK_AND_ASSIGN(merged, PartialTensorShape({2}).MergeWith(PartialTensorShape()));
  EXPECT_EQ(merged, PartialTensorShape({2}));
}

TEST(PartialTensorShape, MergeOfIncompatibleShapesNamesBoth) {
  EXPECT_THAT(
      PartialTensorShape({2, 3}).MergeWith(PartialTensorShape({2, 4})),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("[2,3]"), HasSubstr("[2,4]"))));
  EXPECT_THAT(
      PartialTensorShape({2}).MergeWith(PartialTensorShape({2, -1})),
      StatusIs(absl::StatusCode::kInvalidArgument, AllOf(HasSubstr("[2]"), HasSubstr("[2,?]"))));
}

TEST(BroadcastShapes, AlignsFromTheRightAndStretchesOnes) {
  ASSERT_OK_AND_ASSIGN(PartialTensorShape out,
                       BroadcastShapes(PartialTensorShape({2, 1, 5}), PartialTensorShape({3, 1})));
  EXPECT_EQ(out, PartialTensorShape({2, 3, 5}));
  ASSERT_OK_AND_ASSIGN(out, BroadcastShapes(PartialTensorShape({-1, 4}), PartialTensorShape({4})));
  EXPECT_EQ(out, PartialTensorShape({-1, 4}));
  ASSERT_OK_AND_ASSIGN(out, BroadcastShapes(PartialTensorShape({-1}), PartialTensorShape({3})));
  EXPECT_EQ(out, PartialTensorShape({3}));
  ASSERT_OK_AND_ASSIGN(out, BroadcastShapes(PartialTensorShape(), PartialTensorShape({3})));
  EXPECT_TRUE(out.unknown_rank());
}

TEST(BroadcastShapes, RejectsAResultWhoseElementCountOverflows) {
  constexpr int64_t k2To32 = int64_t{1} << 32;
  EXPECT_THAT(BroadcastShapes(PartialTensorShape({k2To32, 1}), PartialTensorShape({1, k2To32})),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
}

TEST(BroadcastShapes, RejectsKnownMismatchNamingBothShapes) {
  EXPECT_THAT(BroadcastShapes(PartialTensorShape({2, 3}), PartialTensorShape({4})),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Incompatible shapes: [2,3] vs. [4]")));
}

}  // namespace
}  // namespace rill
