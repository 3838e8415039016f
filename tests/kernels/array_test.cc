#include <cstdint>
#include <string>
#include <vector>

#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::HasSubstr;

TEST(Const, OutputsTheDecodedValue) {
  const Tensor value = MakeTensor<float>({2, 2}, {1, 2, 3, 4});
  KernelTester t("Const");
  t.Attr("value", TensorToProto(value)).Attr("dtype", DT_FLOAT);
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(value)));
}

TEST(Const, RejectsValueOfAnotherType) {
  KernelTester t("Const");
  t.Attr("value", TensorToProto(MakeTensor<int32_t>({1}, {1}))).Attr("dtype", DT_FLOAT);
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dtype")));
}

TEST(Identity, ForwardsInputSharingItsBuffer) {
  const Tensor in = RandomTensor(DT_DOUBLE, {3, 4}, 1);
  for (const char* op : {"Identity", "StopGradient"}) {
    KernelTester t(op);
    t.Input(in);
    ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
    EXPECT_TRUE(out.SharesBufferWith(in)) << op;
    EXPECT_THAT(out, TensorEq(in));
  }
}

TEST(Identity, ForwardsStrings) {
  KernelTester t("Identity");
  t.Input<std::string>({2}, {"a", "bc"});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<std::string>({2}, {"a", "bc"}))));
}

TEST(IdentityN, ForwardsEachInput) {
  const Tensor a = MakeTensor<int32_t>({2}, {1, 2});
  const Tensor b = MakeTensor<float>({}, {3});
  KernelTester t("IdentityN");
  t.InputList({a, b});
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_THAT(out[0], TensorEq(a));
  EXPECT_THAT(out[1], TensorEq(b));
}

TEST(PlaceholderWithDefault, OutputsItsInput) {
  const Tensor in = MakeTensor<float>({2}, {5, 6});
  KernelTester t("PlaceholderWithDefault");
  t.Attr("shape", PartialTensorShape({-1})).Input(in);
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(in)));
}

TEST(NoOp, RunsWithNoOutputs) {
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, KernelTester("NoOp").Run());
  EXPECT_TRUE(out.empty());
}

TEST(Shape, GivesDimsAsInt32OrInt64) {
  const Tensor in = RandomTensor(DT_FLOAT, {2, 0, 5}, 2);
  KernelTester t("Shape");
  t.Input(in);
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({3}, {2, 0, 5}))));
  KernelTester t64("Shape");
  t64.Attr("out_type", DT_INT64).Input(in);
  EXPECT_THAT(t64.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({3}, {2, 0, 5}))));
}

TEST(Size, CountsElements) {
  KernelTester t("Size");
  t.Input(RandomTensor(DT_FLOAT, {3, 7}, 3));
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({}, {21}))));
  KernelTester t64("Size");
  t64.Attr("out_type", DT_INT64).Input<uint8_t>({0}, {});
  EXPECT_THAT(t64.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({}, {0}))));
}

TEST(Rank, CountsDims) {
  KernelTester t("Rank");
  t.Input(RandomTensor(DT_FLOAT, {1, 2, 3, 4}, 4));
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({}, {4}))));
}

TEST(Reshape, InfersMinusOneAndSharesBuffer) {
  const Tensor in = RandomTensor(DT_FLOAT, {4, 6}, 5);
  KernelTester t("Reshape");
  t.Input(in).Input<int32_t>({3}, {2, -1, 3});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_EQ(out.shape(), TensorShape({2, 4, 3}));
  EXPECT_TRUE(out.SharesBufferWith(in));
  for (int i = 0; i < 24; ++i) EXPECT_EQ(out.data<float>()[i], in.data<float>()[i]);
}

TEST(Reshape, AcceptsInt64Shape) {
  KernelTester t("Reshape");
  t.Input<int32_t>({6}, {1, 2, 3, 4, 5, 6}).Input<int64_t>({2}, {3, 2});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({3, 2}, {1, 2, 3, 4, 5, 6}))));
}

TEST(Reshape, RejectsElementCountMismatch) {
  KernelTester t("Reshape");
  t.Input(RandomTensor(DT_FLOAT, {2, 3}, 6)).Input<int32_t>({2}, {4, 2});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("6")));
  KernelTester t2("Reshape");
  t2.Input(RandomTensor(DT_FLOAT, {7}, 6)).Input<int32_t>({2}, {-1, 2});
  EXPECT_THAT(t2.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("7")));
}

TEST(ExpandDims, InsertsDimAtPositiveAndNegativePositions) {
  const Tensor in = RandomTensor(DT_FLOAT, {2, 3}, 7);
  const std::vector<std::pair<int32_t, TensorShape>> cases = {
      {0, {1, 2, 3}}, {2, {2, 3, 1}}, {-1, {2, 3, 1}}, {-3, {1, 2, 3}}};
  for (const auto& [dim, shape] : cases) {
    KernelTester t("ExpandDims");
    t.Input(in).Input<int32_t>({}, {dim});
    ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
    EXPECT_EQ(out.shape(), shape) << dim;
    EXPECT_TRUE(out.SharesBufferWith(in));
  }
}

TEST(ExpandDims, RejectsOutOfRangeDim) {
  KernelTester t("ExpandDims");
  t.Input(RandomTensor(DT_FLOAT, {2, 3}, 7)).Input<int32_t>({}, {4});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("4")));
}

TEST(Squeeze, RemovesAllOrListedUnitDims) {
  const Tensor in = RandomTensor(DT_FLOAT, {1, 2, 1, 3, 1}, 8);
  KernelTester all("Squeeze");
  all.Input(in);
  ASSERT_OK_AND_ASSIGN(Tensor out, all.RunOne());
  EXPECT_EQ(out.shape(), TensorShape({2, 3}));
  KernelTester some("Squeeze");
  some.Attr("squeeze_dims", std::vector<int64_t>{0, -1}).Input(in);
  ASSERT_OK_AND_ASSIGN(out, some.RunOne());
  EXPECT_EQ(out.shape(), TensorShape({2, 1, 3}));
}

TEST(Squeeze, RejectsNonUnitDim) {
  KernelTester t("Squeeze");
  t.Attr("squeeze_dims", std::vector<int64_t>{1}).Input(RandomTensor(DT_FLOAT, {1, 2}, 9));
  EXPECT_FALSE(t.RunOne().ok());
}

TEST(Fill, RepeatsScalar) {
  KernelTester t("Fill");
  t.Input<int32_t>({2}, {2, 3}).Input<double>({}, {2.5});
  EXPECT_THAT(t.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<double>({2, 3}, std::vector<double>(6, 2.5)))));
}

TEST(Fill, RejectsNegativeDim) {
  KernelTester t("Fill");
  t.Input<int32_t>({2}, {2, -3}).Input<float>({}, {1});
  EXPECT_FALSE(t.RunOne().ok());
}

constexpr int64_t k2To32 = int64_t{1} << 32;

TEST(Fill, RejectsDimsWhoseElementCountOverflows) {
  KernelTester t("Fill");
  t.Input<int64_t>({3}, {k2To32, k2To32, k2To32}).Input<float>({}, {1});
  EXPECT_THAT(t.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
}

TEST(Fill, DimsPastTheTensorLimitAreResourceExhausted) {
  const ScopedMaxTensorBytes limit(1 << 20);
  KernelTester t("Fill");
  t.Input<int64_t>({1}, {k2To32}).Input<float>({}, {1});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kResourceExhausted,
                                   HasSubstr("output 0: float tensor of shape [4294967296]")));
}

TEST(Const, ValuePastTheTensorLimitIsResourceExhausted) {
  const ScopedMaxTensorBytes limit(1 << 20);
  TensorProto value;
  value.set_dtype(DT_INT32);
  value.mutable_tensor_shape()->add_dim()->set_size(k2To32);
  value.add_int_val(1);
  KernelTester t("Const");
  t.Attr("value", value).Attr("dtype", DT_INT32);
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kResourceExhausted,
                                   HasSubstr("int32 tensor of shape [4294967296]")));
}

TEST(ZerosLikeOnesLike, FillWithZeroAndOne) {
  const Tensor in = RandomTensor(DT_FLOAT, {2, 2}, 10);
  KernelTester z("ZerosLike");
  z.Input(in);
  EXPECT_THAT(z.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({2, 2}, {0, 0, 0, 0}))));
  KernelTester o("OnesLike");
  o.Input<int64_t>({3}, {5, -1, 7});
  EXPECT_THAT(o.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({3}, {1, 1, 1}))));
}

TEST(Range, MatchesLoopForEachType) {
  KernelTester i32("Range");
  i32.Input<int32_t>({}, {3}).Input<int32_t>({}, {12}).Input<int32_t>({}, {4});
  EXPECT_THAT(i32.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({3}, {3, 7, 11}))));
  KernelTester i64("Range");
  i64.Input<int64_t>({}, {5}).Input<int64_t>({}, {0}).Input<int64_t>({}, {-2});
  EXPECT_THAT(i64.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({3}, {5, 3, 1}))));
  KernelTester f("Range");
  f.Input<float>({}, {0}).Input<float>({}, {1}).Input<float>({}, {0.25});
  EXPECT_THAT(f.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({4}, {0, 0.25, 0.5, 0.75}))));
  KernelTester d("Range");
  d.Input<double>({}, {1}).Input<double>({}, {1}).Input<double>({}, {1});
  EXPECT_THAT(d.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<double>({0}, {}))));
}

TEST(Range, RejectsZeroDeltaAndUnreachableLimit) {
  KernelTester zero("Range");
  zero.Input<int32_t>({}, {0}).Input<int32_t>({}, {3}).Input<int32_t>({}, {0});
  EXPECT_FALSE(zero.RunOne().ok());
  KernelTester back("Range");
  back.Input<int32_t>({}, {5}).Input<int32_t>({}, {3}).Input<int32_t>({}, {1});
  EXPECT_FALSE(back.RunOne().ok());
}

TEST(Range, RejectsMoreElementsThanInt64Counts) {
  KernelTester t("Range");
  t.Input<int64_t>({}, {INT64_MIN}).Input<int64_t>({}, {INT64_MAX}).Input<int64_t>({}, {1});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("too many")));
}

TEST(Range, StepsOfTheMostNegativeDelta) {
  KernelTester t("Range");
  t.Input<int64_t>({}, {0}).Input<int64_t>({}, {INT64_MIN}).Input<int64_t>({}, {INT64_MIN});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int64_t>({1}, {0}))));
  KernelTester wide("Range");
  wide.Input<int32_t>({}, {INT32_MIN})
      .Input<int32_t>({}, {INT32_MAX})
      .Input<int32_t>({}, {1 << 30});
  EXPECT_THAT(
      wide.RunOne(),
      IsOkAndHolds(TensorEq(MakeTensor<int32_t>({4}, {INT32_MIN, -(1 << 30), 0, 1 << 30}))));
}

TEST(Range, LengthPastTheTensorLimitIsResourceExhausted) {
  const ScopedMaxTensorBytes limit(1 << 20);
  KernelTester t("Range");
  t.Input<int32_t>({}, {INT32_MIN}).Input<int32_t>({}, {INT32_MAX}).Input<int32_t>({}, {1});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kResourceExhausted, HasSubstr("output 0")));
}

}  // namespace
}  // namespace rill::testing
