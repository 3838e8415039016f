#include <cstdint>
#include <string>
#include <vector>

#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::HasSubstr;

// out[i_0, ..., i_n] = x[j] where j[perm[k]] = i_k.
template <typename T>
Tensor ReferenceTranspose(const Tensor& x, const std::vector<int32_t>& perm) {
  const int rank = x.dims();
  std::vector<int64_t> out_dims(rank), in_strides(rank, 1);
  for (int i = rank - 2; i >= 0; --i) in_strides[i] = in_strides[i + 1] * x.dim_size(i + 1);
  for (int i = 0; i < rank; ++i) out_dims[i] = x.dim_size(perm[i]);
  Tensor out(x.dtype(), TensorShape(absl::MakeConstSpan(out_dims)));
  std::vector<int64_t> index(rank, 0);
  for (int64_t o = 0; o < out.NumElements(); ++o) {
    int64_t in = 0;
    for (int k = 0; k < rank; ++k) in += index[k] * in_strides[perm[k]];
    out.data<T>()[o] = x.data<T>()[in];
    for (int k = rank - 1; k >= 0 && ++index[k] == out_dims[k]; --k) index[k] = 0;
  }
  return out;
}

TEST(Transpose, MatchesReferenceForRanks2To5) {
  const std::vector<std::pair<TensorShape, std::vector<int32_t>>> cases = {
      {{7, 5}, {1, 0}},
      {{3, 4, 5}, {2, 0, 1}},
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{2, 3, 1, 2, 3}, {4, 0, 3, 2, 1}},
  };
  for (const auto& [shape, perm] : cases) {
    const Tensor x = RandomTensor(DT_FLOAT, shape, static_cast<int>(perm.size()));
    for (int threads : {1, 2}) {
      KernelTester t("Transpose");
      t.Input(x).Input<int32_t>({static_cast<int64_t>(perm.size())}, perm);
      EXPECT_THAT(t.RunOne(threads), IsOkAndHolds(TensorEq(ReferenceTranspose<float>(x, perm))))
          << shape.DebugString();
    }
  }
}

TEST(Transpose, HandlesStringsAndInt64Perm) {
  KernelTester t("Transpose");
  t.Input<std::string>({2, 3}, {"a", "b", "c", "d", "e", "f"}).Input<int64_t>({2}, {1, 0});
  EXPECT_THAT(
      t.RunOne(),
      IsOkAndHolds(TensorEq(MakeTensor<std::string>({3, 2}, {"a", "d", "b", "e", "c", "f"}))));
}

TEST(Transpose, RejectsInvalidPerm) {
  KernelTester t("Transpose");
  t.Input(RandomTensor(DT_FLOAT, {2, 3}, 2)).Input<int32_t>({2}, {0, 0});
  EXPECT_FALSE(t.RunOne().ok());
}

TEST(Tile, RepeatsAlongEachDim) {
  KernelTester t("Tile");
  t.Input<int32_t>({2, 2}, {1, 2, 3, 4}).Input<int32_t>({2}, {2, 3});
  EXPECT_THAT(
      t.RunOne(),
      IsOkAndHolds(TensorEq(MakeTensor<int32_t>(
          {4, 6}, {1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4, 1, 2, 1, 2, 1, 2, 3, 4, 3, 4, 3, 4}))));
}

TEST(Tile, RejectsMultiplesWhoseElementCountOverflows) {
  KernelTester t("Tile");
  t.Input<int32_t>({2, 2}, {1, 2, 3, 4}).Input<int64_t>({2}, {int64_t{1} << 32, int64_t{1} << 32});
  EXPECT_THAT(t.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
}

TEST(Slice, CopiesBoxWithMinusOneSize) {
  const Tensor x = RandomTensor(DT_DOUBLE, {4, 5, 6}, 3);
  Tensor want(DT_DOUBLE, {2, 3, 4});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 4; ++k)
        want.data<double>()[(i * 3 + j) * 4 + k] =
            x.data<double>()[((i + 1) * 5 + j + 2) * 6 + k + 2];
  KernelTester t("Slice");
  t.Input(x).Input<int64_t>({3}, {1, 2, 2}).Input<int64_t>({3}, {2, 3, -1});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(want)));
}

TEST(Slice, WholeRowsAreAView) {
  const Tensor x = RandomTensor(DT_FLOAT, {4, 3}, 4);
  KernelTester t("Slice");
  t.Input(x).Input<int32_t>({2}, {1, 0}).Input<int32_t>({2}, {2, -1});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_TRUE(out.SharesBufferWith(x));
  EXPECT_EQ(out.data<float>()[0], x.data<float>()[3]);
}

TEST(Slice, RejectsOutOfBounds) {
  KernelTester t("Slice");
  t.Input(RandomTensor(DT_FLOAT, {4}, 5)).Input<int32_t>({1}, {3}).Input<int32_t>({1}, {2});
  EXPECT_FALSE(t.RunOne().ok());
}

struct StridedCase {
  std::vector<int32_t> begin, end, strides;
  int begin_mask = 0, end_mask = 0, ellipsis_mask = 0, new_axis_mask = 0, shrink_mask = 0;
  TensorShape want_shape;
  std::vector<int32_t> want;
};

// Each case's StridedSlice of `x` gives its expected tensor.
void ExpectStridedSlices(const Tensor& x, const std::vector<StridedCase>& cases) {
  for (size_t c = 0; c < cases.size(); ++c) {
    const StridedCase& s = cases[c];
    const int64_t n = static_cast<int64_t>(s.begin.size());
    KernelTester t("StridedSlice");
    t.Attr("begin_mask", s.begin_mask)
        .Attr("end_mask", s.end_mask)
        .Attr("ellipsis_mask", s.ellipsis_mask)
        .Attr("new_axis_mask", s.new_axis_mask)
        .Attr("shrink_axis_mask", s.shrink_mask);
    t.Input(x)
        .Input<int32_t>({n}, s.begin)
        .Input<int32_t>({n}, s.end)
        .Input<int32_t>({n}, s.strides);
    EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>(s.want_shape, s.want))))
        << "case " << c;
  }
}

// x = arange(24).reshape(2, 3, 4); expected values from numpy slicing.
TEST(StridedSlice, MatchesNumpyIndexing) {
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  const Tensor x = MakeTensor<int32_t>({2, 3, 4}, v);
  // clang-format off
  const std::vector<StridedCase> cases = {
      // x[1, :, ::2]
      {{1, 0, 0}, {2, 0, 0}, {1, 1, 2}, 0b110, 0b110, 0, 0, 0b001, {3, 2},
       {12, 14, 16, 18, 20, 22}},
      // x[:, ::-1, -1]
      {{0, 0, -1}, {0, 0, 0}, {1, -1, 1}, 0b011, 0b011, 0, 0, 0b100, {2, 3},
       {11, 7, 3, 23, 19, 15}},
      // x[..., 1:3]
      {{0, 1}, {0, 3}, {1, 1}, 0, 0, 0b01, 0, 0, {2, 3, 2},
       {1, 2, 5, 6, 9, 10, 13, 14, 17, 18, 21, 22}},
      // x[tf.newaxis, 0, 2:0:-1, 3]
      {{0, 0, 2, 3}, {0, 1, 0, 4}, {1, 1, -1, 1}, 0, 0, 0, 0b0001, 0b1010, {1, 2}, {11, 7}},
      // x[1:100, -2:] (clamped; trailing dims implied)
      {{1, -2}, {100, 100}, {1, 1}, 0, 0, 0, 0, 0, {1, 2, 4},
       {16, 17, 18, 19, 20, 21, 22, 23}},
      // x[0, 2:1] (empty)
      {{0, 2}, {1, 1}, {1, 1}, 0, 0, 0, 0, 0b01, {0, 4}, {}},
  };
  // clang-format on
  ExpectStridedSlices(x, cases);
}

TEST(StridedSlice, RejectsShrinkIndexOutOfBoundsAndZeroStride) {
  KernelTester t("StridedSlice");
  t.Attr("shrink_axis_mask", 1).Input(RandomTensor(DT_FLOAT, {3}, 6));
  t.Input<int32_t>({1}, {5}).Input<int32_t>({1}, {6}).Input<int32_t>({1}, {1});
  EXPECT_FALSE(t.RunOne().ok());
  KernelTester z("StridedSlice");
  z.Input(RandomTensor(DT_FLOAT, {3}, 6));
  z.Input<int32_t>({1}, {0}).Input<int32_t>({1}, {2}).Input<int32_t>({1}, {0});
  EXPECT_FALSE(z.RunOne().ok());
}

// The shape function (run first by the tester) and the kernel (reached
// with the shapes unknown) reject it alike, as TensorFlow does.
TEST(StridedSlice, NegativeStrideOnShrunkAxisIsRejectedByShapeFunctionAndKernel) {
  const std::string message =
      "entry 0 shrinks its dimension (shrink_axis_mask) and so takes a positive stride, got "
      "strides[0] = -1";
  for (bool unknown_shapes : {false, true}) {
    KernelTester t("StridedSlice");
    t.Attr("shrink_axis_mask", 1).Input(RandomTensor(DT_FLOAT, {5}, 6));
    t.Input<int32_t>({1}, {2}).Input<int32_t>({1}, {3}).Input<int32_t>({1}, {-1});
    if (unknown_shapes) t.UnknownInputShapes();
    EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(message)))
        << "unknown shapes: " << unknown_shapes;
  }
}

// x = arange(24).reshape(2, 3, 4); expected values from numpy slicing.
TEST(StridedSlice, EllipsisWithNewAxesAndClampedBounds) {
  std::vector<int32_t> v(24);
  for (int i = 0; i < 24; ++i) v[i] = i;
  const Tensor x = MakeTensor<int32_t>({2, 3, 4}, v);
  // clang-format off
  const std::vector<StridedCase> cases = {
      // x[..., tf.newaxis, 1]
      {{0, 0, 1}, {0, 0, 2}, {1, 1, 1}, 0, 0, 0b001, 0b010, 0b100, {2, 3, 1},
       {1, 5, 9, 13, 17, 21}},
      // x[tf.newaxis, ..., 0:2]
      {{0, 0, 0}, {0, 0, 2}, {1, 1, 1}, 0, 0, 0b010, 0b001, 0, {1, 2, 3, 2},
       {0, 1, 4, 5, 8, 9, 12, 13, 16, 17, 20, 21}},
      // x[-100:100, 100:-100:-1, -1]
      {{-100, 100, -1}, {100, -100, 0}, {1, -1, 1}, 0, 0, 0, 0, 0b100, {2, 3},
       {11, 7, 3, 23, 19, 15}},
      // x[1, ..., 10:-10] (empty)
      {{1, 0, 10}, {2, 0, -10}, {1, 1, 1}, 0, 0, 0b010, 0, 0b001, {3, 0}, {}},
      // x[0:1] with an ellipsis bit past the spec, which is ignored
      {{0}, {1}, {1}, 0, 0, 1 << 5, 0, 0, {1, 3, 4},
       {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}},
  };
  // clang-format on
  ExpectStridedSlices(x, cases);
}

// A 64-entry spec used to shift a 64-bit mask by 64; it is rejected, as
// TensorFlow rejects more than 31 entries.
TEST(StridedSlice, RejectsSpecLongerThanTheMasks) {
  const Tensor x(DT_FLOAT, TensorShape(std::vector<int64_t>(64, 1)));
  KernelTester t("StridedSlice");
  t.Input(x).UnknownInputShapes();
  t.Input<int32_t>({64}, std::vector<int32_t>(64, 0))
      .Input<int32_t>({64}, std::vector<int32_t>(64, 1))
      .Input<int32_t>({64}, std::vector<int32_t>(64, 1));
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("64 entries; at most 31 are allowed")));
}

// x[..., 1] on a rank-40 input: an ellipsis may cover more dimensions
// than the masks have bits.
TEST(StridedSlice, HighRankInputBehindAnEllipsis) {
  std::vector<int64_t> dims(40, 1);
  dims.back() = 3;
  const Tensor x = MakeTensor<int32_t>(TensorShape(absl::MakeConstSpan(dims)), {7, 8, 9});
  KernelTester t("StridedSlice");
  t.Attr("ellipsis_mask", 1).Attr("shrink_axis_mask", 2).Input(x);
  t.Input<int32_t>({2}, {0, 1}).Input<int32_t>({2}, {0, 2}).Input<int32_t>({2}, {1, 1});
  EXPECT_THAT(
      t.RunOne(),
      IsOkAndHolds(TensorEq(MakeTensor<int32_t>(TensorShape(std::vector<int64_t>(39, 1)), {8}))));
}

TEST(Split, Dim0PiecesAreViews) {
  const Tensor x = RandomTensor(DT_FLOAT, {4, 3}, 7);
  KernelTester t("Split");
  t.Attr("num_split", 2).Input<int32_t>({}, {0}).Input(x);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_TRUE(out[1].SharesBufferWith(x));
  EXPECT_EQ(out[1].shape(), TensorShape({2, 3}));
  EXPECT_EQ(out[1].data<float>()[0], x.data<float>()[6]);
}

TEST(Split, InnerAxisCopies) {
  KernelTester t("Split");
  t.Attr("num_split", 3).Input<int32_t>({}, {-1}).Input<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int32_t>({2, 1}, {1, 4})));
  EXPECT_THAT(out[2], TensorEq(MakeTensor<int32_t>({2, 1}, {3, 6})));
}

TEST(Split, RejectsIndivisibleDim) {
  KernelTester t("Split");
  t.Attr("num_split", 2).Input<int32_t>({}, {0}).Input(RandomTensor(DT_FLOAT, {3}, 8));
  EXPECT_FALSE(t.Run().ok());
}

TEST(SplitV, InfersMinusOneSize) {
  KernelTester t("SplitV");
  t.Attr("num_split", 2)
      .Input<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6})
      .Input<int64_t>({2}, {-1, 1})
      .Input<int32_t>({}, {1});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int32_t>({2, 2}, {1, 2, 4, 5})));
  EXPECT_THAT(out[1], TensorEq(MakeTensor<int32_t>({2, 1}, {3, 6})));
}

TEST(SplitV, RejectsSizesNotAddingUp) {
  KernelTester t("SplitV");
  t.Attr("num_split", 2)
      .Input<int32_t>({3}, {1, 2, 3})
      .Input<int64_t>({2}, {1, 1})
      .Input<int32_t>({}, {0});
  EXPECT_FALSE(t.Run().ok());
}

TEST(ConcatV2, JoinsAlongAxis) {
  const Tensor a = RandomTensor(DT_FLOAT, {2, 2, 3}, 9);
  const Tensor b = RandomTensor(DT_FLOAT, {2, 1, 3}, 10);
  Tensor want(DT_FLOAT, {2, 3, 3});
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 3; ++k)
        want.data<float>()[(i * 3 + j) * 3 + k] =
            j < 2 ? a.data<float>()[(i * 2 + j) * 3 + k] : b.data<float>()[i * 3 + k];
  KernelTester t("ConcatV2");
  t.InputList({a, b}).Input<int32_t>({}, {-2});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(want)));
}

TEST(ConcatV2, RejectsMismatchedShapes) {
  KernelTester t("ConcatV2");
  t.InputList({RandomTensor(DT_FLOAT, {2, 2}, 1), RandomTensor(DT_FLOAT, {3, 3}, 2)})
      .Input<int32_t>({}, {0});
  EXPECT_FALSE(t.RunOne().ok());
}

TEST(Pack, StacksAlongAxis) {
  KernelTester t("Pack");
  t.Attr("axis", 1).InputList({MakeTensor<int32_t>({2}, {1, 2}), MakeTensor<int32_t>({2}, {3, 4})});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2, 2}, {1, 3, 2, 4}))));
}

TEST(Unpack, UnstacksAlongAxis) {
  KernelTester t("Unpack");
  t.Attr("num", 3).Attr("axis", -1).Input<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  ASSERT_EQ(out.size(), 3u);
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int32_t>({2}, {1, 4})));
  EXPECT_THAT(out[2], TensorEq(MakeTensor<int32_t>({2}, {3, 6})));
}

TEST(Unpack, RejectsNumMismatch) {
  KernelTester t("Unpack");
  t.Attr("num", 2).Input<int32_t>({3}, {1, 2, 3});
  EXPECT_FALSE(t.Run().ok());
}

TEST(ConcatV2, RejectsEmptyInputsWhoseSizesAlongTheAxisOverflow) {
  constexpr int64_t k2To62 = int64_t{1} << 62;
  KernelTester t("ConcatV2");
  t.InputList(
       {Tensor(DT_FLOAT, TensorShape({0, k2To62})), Tensor(DT_FLOAT, TensorShape({0, k2To62}))})
      .Input<int32_t>({}, {1});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflow")));
}

// tf.reverse: along one axis, two, none, and a negative axis.
TEST(ReverseV2, ReversesTheNamedAxes) {
  const Tensor x = MakeTensor<int32_t>({2, 3}, {1, 2, 3, 4, 5, 6});
  const auto reverse = [&](std::vector<int32_t> axes) {
    KernelTester t("ReverseV2");
    t.Input(x).Input<int32_t>({static_cast<int64_t>(axes.size())}, axes);
    absl::StatusOr<Tensor> out = t.RunOne();
    EXPECT_TRUE(out.ok()) << out.status();
    return out.ok() ? Values<int32_t>(*out) : std::vector<int32_t>();
  };
  EXPECT_THAT(reverse({1}), ::testing::ElementsAre(3, 2, 1, 6, 5, 4));
  EXPECT_THAT(reverse({0, -1}), ::testing::ElementsAre(6, 5, 4, 3, 2, 1));
  EXPECT_THAT(reverse({}), ::testing::ElementsAre(1, 2, 3, 4, 5, 6));
  KernelTester twice("ReverseV2");
  twice.Input(x).Input<int32_t>({2}, {1, -1});
  EXPECT_THAT(twice.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 1 is named twice")));
}

}  // namespace
}  // namespace rill::testing
