#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::HasSubstr;

TEST(Relu, ClampsNegatives) {
  KernelTester t("Relu");
  t.Input<float>({2, 2}, {-1, 0, 2, -3});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({2, 2}, {0, 0, 2, 0}))));
}

TEST(Relu, ClampsIntegers) {
  KernelTester t("Relu");
  t.Input<int32_t>({3}, {-5, 7, 0});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<int32_t>({3}, {0, 7, 0}))));
}

TEST(Relu6, ClampsToZeroAndSix) {
  KernelTester t("Relu6");
  t.Input<float>({4}, {-1, 3, 6, 8.5});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({4}, {0, 3, 6, 6}))));
}

// tf.nn.l2_loss: sum(t ** 2) / 2.
TEST(L2Loss, IsHalfTheSumOfSquares) {
  KernelTester t("L2Loss");
  t.Input<double>({2, 2}, {1, -2, 3, 0.5});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<double>({}, {7.125}))));
}

// tf.nn.elu and tf.nn.leaky_relu on both sides of 0, and their gradients
// (EluGrad reads the output: g * (y + 1) where y <= 0).
TEST(Elu, IsExpMinusOneBelowZero) {
  KernelTester t("Elu");
  t.Input<float>({3}, {-1, 0, 2});
  ASSERT_OK_AND_ASSIGN(Tensor y, t.RunOne());
  EXPECT_THAT(Values<float>(y), ElementsAre(FloatNear(std::expm1(-1.0f), 1e-6f), 0, 2));
  KernelTester g("EluGrad");
  g.Input<float>({3}, {2, 2, 2}).Input(y);
  ASSERT_OK_AND_ASSIGN(Tensor dx, g.RunOne());
  EXPECT_THAT(Values<float>(dx), ElementsAre(FloatNear(2 * std::exp(-1.0f), 1e-6f), 2, 2));
}

TEST(LeakyRelu, ScalesNegativesByAlpha) {
  KernelTester t("LeakyRelu");
  t.Attr("alpha", 0.25f).Input<double>({3}, {-2, 0, 3});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<double>({3}, {-0.5, 0, 3}))));
  KernelTester g("LeakyReluGrad");
  g.Attr("alpha", 0.25f).Input<double>({3}, {5, 5, 5}).Input<double>({3}, {-2, 0, 3});
  EXPECT_THAT(g.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<double>({3}, {1.25, 1.25, 5}))));
  KernelTester bad("LeakyReluGrad");
  bad.UnknownInputShapes().Input<double>({2}, {1, 1}).Input<double>({3}, {1, 1, 1});
  EXPECT_THAT(bad.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument,
                                     HasSubstr("gradients and features must have the same shape")));
}

TEST(ReluGrad, PassesGradientWherePositive) {
  KernelTester t("ReluGrad");
  t.Input<float>({4}, {1, 2, 3, 4}).Input<float>({4}, {-1, 0, 0.5, 2});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({4}, {0, 0, 3, 4}))));
}

TEST(ReluGrad, RejectsShapeMismatch) {
  KernelTester t("ReluGrad");
  t.Input<float>({2}, {1, 2}).Input<float>({3}, {1, 2, 3});
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("shape")));
}

// Row-wise softmax (or log-softmax) of a [rows, classes] float tensor.
Tensor ReferenceSoftmax(const Tensor& logits, bool log) {
  const int64_t classes = logits.dim_size(logits.dims() - 1);
  const int64_t rows = logits.NumElements() / classes;
  const float* in = logits.data<float>();
  std::vector<float> out(logits.NumElements());
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0;
    for (int64_t c = 0; c < classes; ++c) sum += std::exp(double{in[r * classes + c]});
    for (int64_t c = 0; c < classes; ++c) {
      const double x = in[r * classes + c];
      out[r * classes + c] = static_cast<float>(log ? x - std::log(sum) : std::exp(x) / sum);
    }
  }
  return MakeTensor<float>(logits.shape(), out);
}

TEST(Softmax, MatchesReferenceOnLastAxis) {
  const Tensor logits = RandomTensor(DT_FLOAT, {3, 4, 7}, 1, -3, 3);
  for (int threads : {1, 2}) {
    KernelTester t("Softmax");
    t.Input(logits);
    EXPECT_THAT(t.RunOne(threads),
                IsOkAndHolds(TensorNear(ReferenceSoftmax(logits, false), 1e-6, 1e-5)));
    KernelTester lt("LogSoftmax");
    lt.Input(logits);
    EXPECT_THAT(lt.RunOne(threads),
                IsOkAndHolds(TensorNear(ReferenceSoftmax(logits, true), 1e-5, 1e-5)));
  }
}

TEST(Softmax, StaysFiniteForLargeLogits) {
  KernelTester t("Softmax");
  t.Input<float>({1, 2}, {1000, 1000});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2}, {0.5, 0.5}))));
  KernelTester lt("LogSoftmax");
  lt.Input<float>({1, 2}, {1000, 1000});
  EXPECT_THAT(lt.RunOne(), IsOkAndHolds(TensorNear(
                               MakeTensor<float>({1, 2}, {-0.6931472f, -0.6931472f}), 1e-6, 0)));
}

TEST(SoftmaxCrossEntropyWithLogits, MatchesReference) {
  const Tensor logits = RandomTensor(DT_FLOAT, {5, 6}, 2, -4, 4);
  const Tensor labels = RandomTensor(DT_FLOAT, {5, 6}, 3, 0, 1);
  const Tensor log_softmax = ReferenceSoftmax(logits, true);
  std::vector<float> loss(5), backprop(30);
  for (int r = 0; r < 5; ++r) {
    for (int c = 0; c < 6; ++c) {
      const float label = labels.data<float>()[r * 6 + c];
      const float ls = log_softmax.data<float>()[r * 6 + c];
      loss[r] -= label * ls;
      backprop[r * 6 + c] = std::exp(ls) - label;
    }
  }
  KernelTester t("SoftmaxCrossEntropyWithLogits");
  t.Input(logits).Input(labels);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorNear(MakeTensor<float>({5}, loss), 1e-5, 1e-5));
  EXPECT_THAT(out[1], TensorNear(MakeTensor<float>({5, 6}, backprop), 1e-5, 1e-5));
}

TEST(SoftmaxCrossEntropyWithLogits, RejectsLabelsOfAnotherShape) {
  KernelTester t("SoftmaxCrossEntropyWithLogits");
  t.Input(Tensor(DT_FLOAT, {2, 3})).Input(Tensor(DT_FLOAT, {1, 3}));
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("labels_size")));
}

template <typename L>
void CheckSparseMatchesReference() {
  const Tensor logits = RandomTensor(DT_FLOAT, {4, 5}, 4, -4, 4);
  const std::vector<L> labels = {3, 0, 4, 1};
  const Tensor log_softmax = ReferenceSoftmax(logits, true);
  std::vector<float> loss(4), backprop(20);
  for (int r = 0; r < 4; ++r) {
    for (int c = 0; c < 5; ++c) {
      const float ls = log_softmax.data<float>()[r * 5 + c];
      const float onehot = c == labels[r] ? 1.0f : 0.0f;
      loss[r] -= onehot * ls;
      backprop[r * 5 + c] = std::exp(ls) - onehot;
    }
  }
  KernelTester t("SparseSoftmaxCrossEntropyWithLogits");
  t.Input(logits).Input<L>({4}, labels);
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorNear(MakeTensor<float>({4}, loss), 1e-5, 1e-5));
  EXPECT_THAT(out[1], TensorNear(MakeTensor<float>({4, 5}, backprop), 1e-5, 1e-5));
}

TEST(SparseSoftmaxCrossEntropyWithLogits, MatchesReferenceForBothLabelTypes) {
  CheckSparseMatchesReference<int32_t>();
  CheckSparseMatchesReference<int64_t>();
}

TEST(SparseSoftmaxCrossEntropyWithLogits, RejectsLabelOutOfRange) {
  KernelTester t("SparseSoftmaxCrossEntropyWithLogits");
  t.Input(Tensor(DT_FLOAT, {2, 3})).Input<int64_t>({2}, {1, 3});
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("label value of 3 which is outside the valid range "
                                          "of [0, 3). Label index: 1")));
  KernelTester negative("SparseSoftmaxCrossEntropyWithLogits");
  negative.Input(Tensor(DT_FLOAT, {2, 3})).Input<int32_t>({2}, {-1, 0});
  EXPECT_THAT(negative.Run(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("label value of -1")));
}

TEST(BiasAdd, AddsAlongLastDimensionForNhwc) {
  KernelTester t("BiasAdd");
  t.Input<float>({2, 3}, {1, 2, 3, 4, 5, 6}).Input<float>({3}, {10, 20, 30});
  EXPECT_THAT(t.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<float>({2, 3}, {11, 22, 33, 14, 25, 36}))));
}

// value [2, 3, 2, 2] in NCHW or [2, 2, 2, 3] in NHWC: channel of each flat
// element.
int64_t ChannelOf(int64_t i, bool nchw) { return nchw ? (i / 4) % 3 : i % 3; }

TEST(BiasAdd, MatchesReferenceForBothFormats) {
  const Tensor bias = RandomTensor(DT_FLOAT, {3}, 5);
  for (bool nchw : {false, true}) {
    const Tensor value =
        RandomTensor(DT_FLOAT, nchw ? TensorShape{2, 3, 2, 2} : TensorShape{2, 2, 2, 3}, 6);
    std::vector<float> expected(24);
    for (int64_t i = 0; i < 24; ++i) {
      expected[i] = value.data<float>()[i] + bias.data<float>()[ChannelOf(i, nchw)];
    }
    KernelTester t("BiasAdd");
    t.Attr("data_format", nchw ? "NCHW" : "NHWC").Input(value).Input(bias);
    EXPECT_THAT(t.RunOne(),
                IsOkAndHolds(TensorNear(MakeTensor<float>(value.shape(), expected), 1e-6, 1e-6)));
  }
}

TEST(BiasAdd, RejectsBiasOfWrongLength) {
  KernelTester t("BiasAdd");
  t.Input(Tensor(DT_FLOAT, {2, 3})).Input(Tensor(DT_FLOAT, {2}));
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bias")));
}

TEST(BiasAddGrad, SumsAllButChannelDimensionForBothFormats) {
  for (bool nchw : {false, true}) {
    const Tensor backprop =
        RandomTensor(DT_FLOAT, nchw ? TensorShape{2, 3, 2, 2} : TensorShape{2, 2, 2, 3}, 7);
    std::vector<float> expected(3);
    for (int64_t i = 0; i < 24; ++i) expected[ChannelOf(i, nchw)] += backprop.data<float>()[i];
    KernelTester t("BiasAddGrad");
    t.Attr("data_format", nchw ? "NCHW" : "NHWC").Input(backprop);
    for (int threads : {1, 2}) {
      EXPECT_THAT(t.RunOne(threads),
                  IsOkAndHolds(TensorNear(MakeTensor<float>({3}, expected), 1e-5, 1e-5)));
    }
  }
}

}  // namespace
}  // namespace rill::testing
