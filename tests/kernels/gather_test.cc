#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

TEST(Gather, MatchesReferenceAlongDim0) {
  const Tensor params = RandomTensor(DT_FLOAT, {5, 3}, 1);
  const std::vector<int64_t> idx = {4, 0, 2, 2, 1, 3};
  Tensor want(DT_FLOAT, {2, 3, 3});
  for (int i = 0; i < 6; ++i)
    for (int k = 0; k < 3; ++k)
      want.data<float>()[i * 3 + k] = params.data<float>()[idx[i] * 3 + k];
  KernelTester t("Gather");
  t.Input(params).Input<int64_t>({2, 3}, idx);
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(want)));
}

// The k largest of each row, largest first, equal values by lower index,
// NaN above every number; TensorFlow's order.
TEST(TopKV2, TakesTheLargestOfEachRowInOrder) {
  KernelTester t("TopKV2");
  t.Input<float>({2, 5}, {1, 5, 3, 5, -2, NAN, 0, -1, 7, 0}).Input<int32_t>({}, {3});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_EQ(out[0].shape(), TensorShape({2, 3}));
  const std::vector<float> values = Values<float>(out[0]);
  EXPECT_THAT(std::vector<float>(values.begin(), values.begin() + 3),
              ::testing::ElementsAre(5, 5, 3));
  EXPECT_TRUE(std::isnan(values[3]));
  EXPECT_EQ(values[4], 7);
  EXPECT_EQ(values[5], 0);
  EXPECT_THAT(Values<int32_t>(out[1]), ::testing::ElementsAre(1, 3, 2, 0, 3, 1));

  for (int k : {0, 4}) {
    KernelTester all("TopKV2");
    all.Input<int64_t>({4}, {3, -9, 12, 3}).Input<int32_t>({}, {k});
    ASSERT_OK_AND_ASSIGN(out, all.Run());
    EXPECT_EQ(out[1].NumElements(), k);
    if (k == 4) {
      EXPECT_THAT(Values<int32_t>(out[1]), ::testing::ElementsAre(2, 0, 3, 1));
    }
  }
}

// Unsorted, the chosen entries come in index order.
TEST(TopKV2, UnsortedKeepsIndexOrder) {
  KernelTester t("TopKV2");
  t.Attr("sorted", false).Input<float>({6}, {1, 9, -3, 9, 4, 0}).Input<int32_t>({}, {3});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(Values<int32_t>(out[1]), ::testing::ElementsAre(1, 3, 4));
  EXPECT_THAT(Values<float>(out[0]), ::testing::ElementsAre(9, 9, 4));
}

TEST(TopKV2, RefusesAKOutsideTheRow) {
  for (int k : {-1, 4}) {
    KernelTester t("TopKV2");
    t.Input<float>({3}, {1, 2, 3}).Input<int32_t>({}, {k});
    EXPECT_THAT(t.Run(),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrFormat("TopKV2: k = %d is not in [0, 3]", k))));
  }
  KernelTester scalar("TopKV2");
  scalar.Input<float>({}, {1}).Input<int32_t>({}, {1});
  EXPECT_THAT(scalar.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank 1")));
}

TEST(GatherV2, MatchesReferenceAlongInnerAxis) {
  const Tensor params = RandomTensor(DT_DOUBLE, {2, 4, 3}, 2);
  const std::vector<int32_t> idx = {3, 1};
  Tensor want(DT_DOUBLE, {2, 2, 3});
  for (int o = 0; o < 2; ++o)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 3; ++k)
        want.data<double>()[(o * 2 + i) * 3 + k] = params.data<double>()[(o * 4 + idx[i]) * 3 + k];
  for (int axis : {1, -2}) {
    KernelTester t("GatherV2");
    t.Input(params).Input<int32_t>({2}, idx).Input<int32_t>({}, {axis});
    EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(want))) << axis;
  }
}

TEST(GatherV2, RejectsOutOfRangeIndexNamingIndexAndBound) {
  KernelTester t("GatherV2");
  t.Input(RandomTensor(DT_FLOAT, {5}, 3)).Input<int32_t>({2}, {1, 7}).Input<int32_t>({}, {0});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   AllOf(HasSubstr("indices[1] = 7"), HasSubstr("[0, 5)"))));
  KernelTester neg("Gather");
  neg.Input(RandomTensor(DT_FLOAT, {5}, 3)).Input<int32_t>({1}, {-1});
  EXPECT_THAT(neg.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-1")));
}

TEST(GatherV2, BatchDimsIsUnimplemented) {
  KernelTester t("GatherV2");
  t.Attr("batch_dims", 1)
      .Input(RandomTensor(DT_FLOAT, {2, 3}, 4))
      .Input<int32_t>({2, 1}, {0, 1})
      .Input<int32_t>({}, {1});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("batch_dims")));
}

TEST(OneHot, EncodesLastAxisAndOutOfRangeIsOff) {
  KernelTester t("OneHot");
  t.Input<int64_t>({3}, {0, 2, 5})
      .Input<int32_t>({}, {3})
      .Input<float>({}, {1})
      .Input<float>({}, {-1});
  EXPECT_THAT(
      t.RunOne(),
      IsOkAndHolds(TensorEq(MakeTensor<float>({3, 3}, {1, -1, -1, -1, -1, 1, -1, -1, -1}))));
}

TEST(OneHot, EncodesAxisZero) {
  KernelTester t("OneHot");
  t.Attr("axis", 0)
      .Input<int32_t>({2}, {1, 0})
      .Input<int32_t>({}, {2})
      .Input<int32_t>({}, {5})
      .Input<int32_t>({}, {0});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({2, 2}, {0, 5, 5, 0}))));
}

TEST(DynamicStitch, LaterIndicesWin) {
  KernelTester t("DynamicStitch");
  t.InputList({MakeTensor<int32_t>({2}, {0, 2}), MakeTensor<int32_t>({2}, {2, 1})});
  t.InputList({MakeTensor<float>({2, 2}, {1, 2, 3, 4}), MakeTensor<float>({2, 2}, {5, 6, 7, 8})});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({3, 2}, {1, 2, 7, 8, 5, 6}))));
}

TEST(DynamicStitch, RejectsNegativeIndex) {
  KernelTester t("DynamicStitch");
  t.InputList({MakeTensor<int32_t>({1}, {-1})}).InputList({MakeTensor<float>({1}, {1})});
  EXPECT_FALSE(t.RunOne().ok());
}

// Expected values are TensorFlow's.
Tensor Bools(const TensorShape& shape, const std::vector<int>& values) {
  Tensor t(DT_BOOL, shape);
  for (size_t i = 0; i < values.size(); ++i) t.data<bool>()[i] = values[i] != 0;
  return t;
}

TEST(Where, ListsTheTrueIndicesOfAVector) {
  KernelTester t("Where");
  t.Input(Bools({5}, {1, 0, 1, 1, 0}));
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({3, 1}, {0, 2, 3}))));
}

TEST(Where, ListsCoordinatesOfARank3TensorInRowMajorOrder) {
  KernelTester t("Where");
  t.Input(Bools({2, 2, 3}, {0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
  EXPECT_THAT(t.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<int64_t>({3, 3}, {0, 0, 1, 1, 0, 0, 1, 1, 2}))));
}

TEST(Where, MatchesReferenceOnRandomFloats) {
  const Tensor x = RandomTensor(DT_FLOAT, {3, 4, 5}, 7);
  std::vector<int64_t> want;
  for (int i = 0; i < 3; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 5; ++k)
        if (x.data<float>()[(i * 4 + j) * 5 + k] > 0) want.insert(want.end(), {i, j, k});
  Tensor positive(DT_FLOAT, x.shape());
  for (int64_t i = 0; i < x.NumElements(); ++i) {
    positive.data<float>()[i] = x.data<float>()[i] > 0 ? x.data<float>()[i] : 0.f;
  }
  KernelTester t("Where");
  t.Input(positive);
  const int64_t rows = static_cast<int64_t>(want.size()) / 3;
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({rows, 3}, want))));
}

TEST(Where, AScalarGivesZeroOrOneEmptyRow) {
  EXPECT_THAT(KernelTester("Where").Input(Tensor::Scalar<bool>(true)).RunOne(),
              IsOkAndHolds(TensorEq(Tensor(DT_INT64, {1, 0}))));
  EXPECT_THAT(KernelTester("Where").Input(Tensor::Scalar<float>(0.f)).RunOne(),
              IsOkAndHolds(TensorEq(Tensor(DT_INT64, {0, 0}))));
}

TEST(Where, EmptyInputsGiveNoRows) {
  EXPECT_THAT(KernelTester("Where").Input(Tensor(DT_BOOL, {0})).RunOne(),
              IsOkAndHolds(TensorEq(Tensor(DT_INT64, {0, 1}))));
  EXPECT_THAT(KernelTester("Where").Input(Tensor(DT_INT32, {2, 0, 3})).RunOne(),
              IsOkAndHolds(TensorEq(Tensor(DT_INT64, {0, 3}))));
  EXPECT_THAT(KernelTester("Where").Input(Bools({2, 2}, {0, 0, 0, 0})).RunOne(),
              IsOkAndHolds(TensorEq(Tensor(DT_INT64, {0, 2}))));
}

TEST(Where, NumericTypesCountNonZeroAsTrue) {
  const Tensor want = MakeTensor<int64_t>({2, 1}, {1, 3});
  EXPECT_THAT(KernelTester("Where").Input<int32_t>({4}, {0, -2, 0, 5}).RunOne(),
              IsOkAndHolds(TensorEq(want)));
  EXPECT_THAT(KernelTester("Where").Input<int64_t>({4}, {0, 1, 0, 1}).RunOne(),
              IsOkAndHolds(TensorEq(want)));
  EXPECT_THAT(KernelTester("Where").Input<uint8_t>({4}, {0, 255, 0, 1}).RunOne(),
              IsOkAndHolds(TensorEq(want)));
  // NaN is not zero, so it counts, as in TensorFlow.
  EXPECT_THAT(KernelTester("Where").Input<double>({4}, {0.0, std::nan(""), -0.0, 1e-300}).RunOne(),
              IsOkAndHolds(TensorEq(want)));
  EXPECT_THAT(
      KernelTester("Where").Input<half>({4}, {half(0), half(0.5f), half(0), half(-1)}).RunOne(),
      IsOkAndHolds(TensorEq(want)));
  EXPECT_THAT(
      KernelTester("Where").Input<complex64>({4}, {{0, 0}, {0, 1}, {0, 0}, {2, 0}}).RunOne(),
      IsOkAndHolds(TensorEq(want)));
}

TEST(BroadcastGradientArgs, MatchesTensorFlow) {
  struct Case {
    std::vector<int32_t> s0, s1, r0, r1;
  };
  const std::vector<Case> cases = {
      {{2, 3, 5}, {1}, {}, {0, 1, 2}}, {{2, 1, 5}, {3, 1}, {1}, {0, 2}}, {{2, 3}, {2, 3}, {}, {}},
      {{}, {4, 2}, {0, 1}, {}},        {{1, 4}, {1, 4}, {0}, {0}},
  };
  for (const Case& c : cases) {
    KernelTester t("BroadcastGradientArgs");
    t.Input<int32_t>({static_cast<int64_t>(c.s0.size())}, c.s0)
        .Input<int32_t>({static_cast<int64_t>(c.s1.size())}, c.s1);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
    EXPECT_THAT(out[0], TensorEq(MakeTensor<int32_t>({static_cast<int64_t>(c.r0.size())}, c.r0)));
    EXPECT_THAT(out[1], TensorEq(MakeTensor<int32_t>({static_cast<int64_t>(c.r1.size())}, c.r1)));
  }
}

TEST(BroadcastGradientArgs, Int64AndIncompatibleShapes) {
  KernelTester t("BroadcastGradientArgs");
  t.Input<int64_t>({2}, {4, 1}).Input<int64_t>({1}, {3});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorEq(MakeTensor<int64_t>({1}, {1})));
  EXPECT_THAT(out[1], TensorEq(MakeTensor<int64_t>({1}, {0})));
  KernelTester bad("BroadcastGradientArgs");
  bad.Input<int32_t>({1}, {3}).Input<int32_t>({1}, {4});
  EXPECT_THAT(bad.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Incompatible")));
}

// tf.gather_nd's examples: whole rows of coordinates pick elements, short
// ones pick slices.
TEST(GatherNd, AsTensorFlowsExamples) {
  KernelTester elements("GatherNd");
  elements.Input<int32_t>({2, 2}, {1, 2, 3, 4}).Input<int32_t>({2, 2}, {0, 0, 1, 1});
  ASSERT_OK_AND_ASSIGN(Tensor picked, elements.RunOne());
  EXPECT_THAT(Values<int32_t>(picked), ::testing::ElementsAre(1, 4));
  KernelTester rows("GatherNd");
  rows.Input<float>({2, 2}, {1, 2, 3, 4}).Input<int64_t>({2, 1}, {1, 0});
  ASSERT_OK_AND_ASSIGN(Tensor swapped, rows.RunOne());
  EXPECT_EQ(swapped.shape(), TensorShape({2, 2}));
  EXPECT_THAT(Values<float>(swapped), ::testing::ElementsAre(3, 4, 1, 2));
}

TEST(GatherNd, NamesAnIndexOutOfRange) {
  KernelTester t("GatherNd");
  t.Input<float>({2, 3}, {1, 2, 3, 4, 5, 6}).Input<int32_t>({2, 2}, {0, 1, 2, 0});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                   HasSubstr("indices[1] = [2, 0] does not index into shape "
                                             "[2,3]")));
}

// tf.scatter_nd's example, with a repeated index summed.
TEST(ScatterNd, AsTensorFlowsExampleWithARepeat) {
  KernelTester t("ScatterNd");
  t.Input<int32_t>({5, 1}, {4, 3, 1, 7, 4})
      .Input<float>({5}, {9, 10, 11, 12, 1})
      .Input<int32_t>({1}, {8});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(Values<float>(out), ::testing::ElementsAre(0, 11, 0, 10, 10, 0, 0, 12));
}

}  // namespace
}  // namespace rill::testing
