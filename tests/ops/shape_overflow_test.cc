// Shape functions given sizes whose element count overflows int64, or more
// dimensions than a shape may have, fail with INVALID_ARGUMENT instead of
// aborting graph construction.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "tests/ops/shape_tester.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::Int32s;
using ::rill::testing::Int64s;
using ::rill::testing::kInvalid;
using ::rill::testing::ScalarShape;
using ::rill::testing::ShapeTester;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

constexpr int64_t k2To32 = int64_t{1} << 32;
constexpr int64_t k2To62 = int64_t{1} << 62;

const auto kOverflows = StatusIs(kInvalid, HasSubstr("overflows int64"));

TEST(ShapeOverflow, FillDims) {
  ShapeTester t("Fill");
  t.Attr("T", DT_FLOAT).Attr("index_type", DT_INT64);
  t.ConstInput(Int64s({k2To32, k2To32, k2To32})).Input(ScalarShape());
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, RandomOpShapes) {
  for (const std::string op : {"RandomUniform", "RandomStandardNormal", "TruncatedNormal"}) {
    SCOPED_TRACE(op);
    ShapeTester t(op);
    t.Attr("dtype", DT_FLOAT).Attr("T", DT_INT64).ConstInput(Int64s({k2To32, k2To32, k2To32}));
    EXPECT_THAT(t.Infer(), kOverflows);
  }
}

TEST(ShapeOverflow, TileMultiplesWhoseProductOverflows) {
  // Each tiled dimension fits; together they do not.
  ShapeTester t("Tile");
  t.Attr("T", DT_FLOAT).Attr("Tmultiples", DT_INT64).Input({k2To32, 1});
  t.ConstInput(Int64s({1, k2To32}));
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, ReshapeToMoreDimensionsThanAShapeMayHave) {
  ShapeTester t("Reshape");
  std::vector<int32_t> ones(300, 1);
  t.Attr("T", DT_FLOAT).Input({1});
  t.ConstInput(Tensor::FromVector<int32_t>(ones, TensorShape({300})));
  EXPECT_THAT(t.Infer(), StatusIs(kInvalid, HasSubstr("more than the maximum")));
}

TEST(ShapeOverflow, ExpandDimsPastTheMaximumRank) {
  ShapeTester t("ExpandDims");
  t.Attr("T", DT_FLOAT).Input(PartialTensorShape(std::vector<int64_t>(kMaxTensorRank, 1)));
  t.ConstInput(Tensor::Scalar<int32_t>(0));
  EXPECT_THAT(t.Infer(), StatusIs(kInvalid, HasSubstr("more than the maximum")));
}

TEST(ShapeOverflow, SliceSizesOfAnInputOfUnknownShape) {
  ShapeTester t("Slice");
  t.Attr("T", DT_FLOAT).Attr("Index", DT_INT64).Input({-1, -1, -1});
  t.ConstInput(Int64s({0, 0, 0})).ConstInput(Int64s({k2To32, k2To32, k2To32}));
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, ConcatenatedSizes) {
  ShapeTester t("ConcatV2");
  t.Attr("T", DT_FLOAT).Attr("N", 2).Input({k2To62, 1}).Input({k2To62, 1});
  t.ConstInput(Tensor::Scalar<int32_t>(0));
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, PackedValues) {
  ShapeTester t("Pack");
  t.Attr("T", DT_FLOAT).Attr("N", 2).Input({k2To62}).Input({k2To62});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, SplitVSizes) {
  ShapeTester t("SplitV");
  t.Attr("T", DT_FLOAT).Attr("Tlen", DT_INT64).Attr("num_split", 2).Input({-1});
  t.ConstInput(Int64s({INT64_MAX, INT64_MAX})).ConstInput(Tensor::Scalar<int32_t>(0));
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, MatMulRowsAndColumnsFromTwoInputs) {
  ShapeTester t("MatMul");
  t.Attr("T", DT_FLOAT).Input({k2To32, -1}).Input({-1, k2To32});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, BatchMatMulBatchAndMatrix) {
  ShapeTester t("BatchMatMulV2");
  t.Attr("T", DT_FLOAT).Input({k2To32, 2, -1}).Input({-1, k2To32});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, BroadcastOfTwoInputs) {
  ShapeTester t("Add");
  t.Attr("T", DT_FLOAT).Input({k2To32, 1}).Input({1, k2To32});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, MergeOfTwoInputs) {
  ShapeTester t("AddN");
  t.Attr("T", DT_FLOAT).Attr("N", 2).Input({k2To32, -1}).Input({-1, k2To32});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, GatherIndicesAndParams) {
  ShapeTester t("Gather");
  t.Attr("Tparams", DT_FLOAT).Attr("Tindices", DT_INT32).Input({-1, k2To32}).Input({k2To32});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, OneHotDepth) {
  ShapeTester t("OneHot");
  t.Attr("T", DT_FLOAT).Attr("TI", DT_INT32).Input({k2To32 * 4});
  t.ConstInput(Tensor::Scalar<int32_t>(INT32_MAX)).Input(ScalarShape()).Input(ScalarShape());
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, SparseSoftmaxBatchFromLabels) {
  ShapeTester t("SparseSoftmaxCrossEntropyWithLogits");
  t.Attr("T", DT_FLOAT).Attr("Tlabels", DT_INT32).Input({-1, k2To32}).Input({k2To32});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, ConvolutionWithHugeExplicitPaddings) {
  ShapeTester t("Conv2D");
  t.Attr("T", DT_FLOAT).Attr("strides", std::vector<int64_t>{1, 1, 1, 1});
  t.Attr("padding", std::string("EXPLICIT"));
  t.Attr("explicit_paddings", std::vector<int64_t>{0, 0, k2To62, k2To62, 0, 0, 0, 0});
  t.Input({1, 10, 10, 1}).Input({3, 3, 1, 1});
  EXPECT_THAT(t.Infer(), kOverflows);
}

TEST(ShapeOverflow, RangeLengthPastInt64) {
  ShapeTester t("Range");
  t.Attr("Tidx", DT_INT64).ConstInput(Tensor::Scalar<int64_t>(INT64_MIN));
  t.ConstInput(Tensor::Scalar<int64_t>(INT64_MAX)).ConstInput(Tensor::Scalar<int64_t>(1));
  EXPECT_THAT(t.Infer(), StatusIs(kInvalid, HasSubstr("too many")));
}

TEST(ShapeOverflow, SizesThatFitStillInfer) {
  ShapeTester t("Fill");
  t.Attr("T", DT_FLOAT).Attr("index_type", DT_INT64);
  t.ConstInput(Int64s({k2To32, k2To32 / 2 - 1})).Input(ScalarShape());
  ASSERT_OK_AND_ASSIGN(std::vector<PartialTensorShape> shapes, t.Infer());
  EXPECT_EQ(shapes[0], PartialTensorShape({k2To32, k2To32 / 2 - 1}));
}

}  // namespace
}  // namespace rill
