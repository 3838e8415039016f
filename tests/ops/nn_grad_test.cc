// Numeric gradient checks (float64 central differences against the
// Jacobian AddGradients builds) for every differentiable nn op.
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "tests/ops/gradient_checker.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GradientChecker;
using ::rill::testing::GradientErrorBelow;

constexpr double kTolerance = 1e-7;

TEST(NnGrad, Relu) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3}, -1, 1, 0.1);
  EXPECT_THAT(c.MaxError({ops::Relu(c.scope(), x)}), GradientErrorBelow(kTolerance));
}

TEST(NnGrad, L2Loss) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3});
  EXPECT_THAT(c.MaxError({ops::L2Loss(c.scope(), x)}), GradientErrorBelow(kTolerance));
}

// Away from ties, so that a nudge changes no choice; the indices carry no
// gradient.
TEST(NnGrad, TopKSendsEachValuesGradientToItsEntry) {
  GradientChecker c;
  const Output x =
      c.Input(Tensor::FromVector<double>({-1.5, 0.3, 4.4, 2.5, 5.7, -6.4, 8, 3}, {2, 4}));
  const ops::TopKV2 top(c.scope(), x, 2);
  EXPECT_THAT(c.MaxError({top.values}), GradientErrorBelow(kTolerance));
}

TEST(NnGrad, Relu6OnBothSidesOfItsKinks) {
  GradientChecker c;
  const Output x =
      c.Input(Tensor::FromVector<double>({-1.5, -0.3, 0.4, 2.5, 5.7, 6.4, 8, 3}, {2, 4}));
  EXPECT_THAT(c.MaxError({ops::Relu6(c.scope(), x)}), GradientErrorBelow(kTolerance));
}

TEST(NnGrad, ReluGradIsLinearInItsGradient) {
  GradientChecker c;
  const Output g = c.RandomInput({2, 3});
  const Output features = c.RandomInput({2, 3}, -1, 1, 0.1);
  EXPECT_THAT(c.MaxError({ops::ReluGrad(c.scope(), g, features)}), GradientErrorBelow(kTolerance));
}

TEST(NnGrad, Softmax) {
  GradientChecker c;
  const Output x = c.RandomInput({3, 4}, -2, 2);
  EXPECT_THAT(c.MaxError({ops::Softmax(c.scope(), x)}), GradientErrorBelow(kTolerance));
}

TEST(NnGrad, LogSoftmax) {
  GradientChecker c;
  const Output x = c.RandomInput({3, 4}, -2, 2);
  EXPECT_THAT(c.MaxError({ops::LogSoftmax(c.scope(), x)}), GradientErrorBelow(kTolerance));
}

// With respect to both logits and labels (each row a distribution).
TEST(NnGrad, SoftmaxCrossEntropyWithLogits) {
  GradientChecker c;
  const Output logits = c.RandomInput({3, 4}, -2, 2);
  const Output labels = c.Input(
      Tensor::FromVector<double>({0.1, 0.2, 0.3, 0.4, 1, 0, 0, 0, 0.25, 0.25, 0.25, 0.25}, {3, 4}));
  const ops::SoftmaxCrossEntropyWithLogits xent(c.scope(), logits, labels);
  EXPECT_THAT(c.MaxError({xent.loss}), GradientErrorBelow(kTolerance));
}

// Labels come from a softmax so that they stay a distribution: the loss
// gradient, like TensorFlow's, is backprop = softmax - labels, which
// assumes they sum to one.
TEST(NnGrad, SoftmaxCrossEntropyBackpropOutput) {
  GradientChecker c;
  const Output logits = c.RandomInput({3, 4}, -2, 2);
  const Output labels = ops::Softmax(c.scope(), c.RandomInput({3, 4}, -2, 2));
  const ops::SoftmaxCrossEntropyWithLogits xent(c.scope(), logits, labels);
  EXPECT_THAT(c.MaxError({xent.loss, xent.backprop}), GradientErrorBelow(kTolerance));
}

TEST(NnGrad, SparseSoftmaxCrossEntropyWithLogits) {
  for (bool with_backprop : {false, true}) {
    SCOPED_TRACE(with_backprop ? "loss and backprop" : "loss");
    GradientChecker c;
    const Output logits = c.RandomInput({3, 4}, -2, 2);
    const Output labels =
        ops::Const(c.scope(), Tensor::FromVector<int64_t>({2, 0, 3}, {3}), DT_INT64);
    const ops::SparseSoftmaxCrossEntropyWithLogits xent(c.scope(), logits, labels);
    std::vector<Output> ys = {xent.loss};
    if (with_backprop) ys.push_back(xent.backprop);
    EXPECT_THAT(c.MaxError(ys), GradientErrorBelow(kTolerance));
  }
}

TEST(NnGrad, BiasAddInBothDataFormats) {
  for (const char* format : {"NHWC", "NCHW"}) {
    SCOPED_TRACE(format);
    GradientChecker c;
    const bool nchw = std::string(format) == "NCHW";
    const Output value = c.RandomInput(nchw ? TensorShape({2, 3, 2, 2}) : TensorShape({2, 2, 3}));
    const Output bias = c.RandomInput({3});
    const Output y = ops::BiasAdd(c.scope(), value, bias, ops::BiasAdd::DataFormat(format));
    EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
  }
}

TEST(NnGrad, BiasAddGradInBothDataFormats) {
  for (const char* format : {"NHWC", "NCHW"}) {
    SCOPED_TRACE(format);
    GradientChecker c;
    const Output backprop = c.RandomInput({2, 3, 2, 2});
    const Output y = ops::BiasAddGrad(c.scope(), backprop, ops::BiasAddGrad::DataFormat(format));
    EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
  }
}

struct ConvCase {
  std::string name;
  std::vector<int64_t> strides;
  std::string padding;
  std::vector<int64_t> explicit_paddings;
  std::vector<int64_t> dilations;

  friend void PrintTo(const ConvCase& c, std::ostream* os) { *os << c.name; }
};

class ConvGradTest : public ::testing::TestWithParam<ConvCase> {
 protected:
  ops::Conv2D::Attrs Attrs() const {
    return ops::Conv2D::ExplicitPaddings(GetParam().explicit_paddings)
        .Dilations(GetParam().dilations);
  }
};

TEST_P(ConvGradTest, Conv2DInInputAndFilter) {
  const ConvCase& p = GetParam();
  GradientChecker c;
  const Output input = c.RandomInput({2, 5, 5, 2});
  const Output filter = c.RandomInput({3, 3, 2, 3});
  const Output y = ops::Conv2D(c.scope(), input, filter, p.strides, p.padding, Attrs());
  EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
}

// The backprops are linear in their two tensor inputs; their gradients
// are what a second derivative of Conv2D needs.
TEST_P(ConvGradTest, Conv2DBackpropInputInFilterAndOutBackprop) {
  const ConvCase& p = GetParam();
  GradientChecker c;
  // Only gives the forward convolution's output shape; never run.
  const Output input =
      ops::Placeholder(c.scope(), DT_DOUBLE, ops::Placeholder::Shape({2, 5, 5, 2}));
  const Output filter = c.RandomInput({3, 3, 2, 3});
  const Output conv = ops::Conv2D(c.scope(), input, filter, p.strides, p.padding, Attrs());
  ASSERT_TRUE(conv.shape().IsFullyDefined()) << conv.shape().DebugString();
  const Output out_backprop = c.RandomInput(conv.shape().AsTensorShape().value());
  const Output y = ops::Conv2DBackpropInput(
      c.scope(), ops::Const(c.scope(), Tensor::FromVector<int32_t>({2, 5, 5, 2}, {4}), DT_INT32),
      filter, out_backprop, p.strides, p.padding,
      ops::Conv2DBackpropInput::ExplicitPaddings(p.explicit_paddings).Dilations(p.dilations));
  EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
}

TEST_P(ConvGradTest, Conv2DBackpropFilterInInputAndOutBackprop) {
  const ConvCase& p = GetParam();
  GradientChecker c;
  const Output input = c.RandomInput({2, 5, 5, 2});
  // Only gives the forward convolution's output shape; never run.
  const Output filter =
      ops::Placeholder(c.scope(), DT_DOUBLE, ops::Placeholder::Shape({3, 3, 2, 3}));
  const Output conv = ops::Conv2D(c.scope(), input, filter, p.strides, p.padding, Attrs());
  ASSERT_TRUE(conv.shape().IsFullyDefined()) << conv.shape().DebugString();
  const Output out_backprop = c.RandomInput(conv.shape().AsTensorShape().value());
  const Output y = ops::Conv2DBackpropFilter(
      c.scope(), input,
      ops::Const(c.scope(), Tensor::FromVector<int32_t>({3, 3, 2, 3}, {4}), DT_INT32), out_backprop,
      p.strides, p.padding,
      ops::Conv2DBackpropFilter::ExplicitPaddings(p.explicit_paddings).Dilations(p.dilations));
  EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
}

INSTANTIATE_TEST_SUITE_P(
    NnGrad, ConvGradTest,
    ::testing::Values(
        ConvCase{"Same", {1, 1, 1, 1}, "SAME", {}, {1, 1, 1, 1}},
        ConvCase{"ValidStride2", {1, 2, 2, 1}, "VALID", {}, {1, 1, 1, 1}},
        ConvCase{"SameStride2", {1, 2, 2, 1}, "SAME", {}, {1, 1, 1, 1}},
        ConvCase{"Explicit", {1, 1, 2, 1}, "EXPLICIT", {0, 0, 1, 0, 2, 1, 0, 0}, {1, 1, 1, 1}},
        ConvCase{"Dilated", {1, 1, 1, 1}, "VALID", {}, {1, 2, 1, 1}}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

// The same cases for DepthwiseConv2dNative (channel multiplier 2), each in
// both data formats: the NCHW run permutes the NHWC case.
class DepthwiseGradTest : public ::testing::TestWithParam<ConvCase> {
 protected:
  struct Format {
    std::string name;
    bool nchw;
    // An NHWC shape or 4-entry attr in this format.
    std::vector<int64_t> Dims(const std::vector<int64_t>& v) const {
      return nchw ? std::vector<int64_t>{v[0], v[3], v[1], v[2]} : v;
    }
    // An NHWC image shape in this format, as an input_sizes value.
    std::vector<int32_t> ImageSizes(const std::vector<int64_t>& v) const {
      const std::vector<int64_t> dims = Dims(v);
      return std::vector<int32_t>(dims.begin(), dims.end());
    }
    std::vector<int64_t> Pads(const std::vector<int64_t>& p) const {
      if (!nchw || p.empty()) return p;
      return {p[0], p[1], p[6], p[7], p[2], p[3], p[4], p[5]};
    }
  };
  static std::vector<Format> Formats() { return {{"NHWC", false}, {"NCHW", true}}; }

  template <typename Op>
  typename Op::Attrs Attrs(const Format& f) const {
    return typename Op::Attrs()
        .ExplicitPaddings(f.Pads(GetParam().explicit_paddings))
        .DataFormat(f.name)
        .Dilations(f.Dims(GetParam().dilations));
  }

  Output Forward(const Scope& s, const Format& f, const Output& input, const Output& filter) const {
    return ops::DepthwiseConv2dNative(s, input, filter, f.Dims(GetParam().strides),
                                      GetParam().padding, Attrs<ops::DepthwiseConv2dNative>(f));
  }

  static std::vector<int64_t> InputDims() { return {2, 5, 5, 2}; }
  static std::vector<int64_t> FilterDims() { return {3, 3, 2, 2}; }
};

TEST_P(DepthwiseGradTest, DepthwiseConv2dNativeInInputAndFilter) {
  for (const Format& f : Formats()) {
    SCOPED_TRACE(f.name);
    GradientChecker c;
    const Output input = c.RandomInput(TensorShape(f.Dims(InputDims())));
    const Output filter = c.RandomInput(TensorShape(FilterDims()));
    const Output y = Forward(c.scope(), f, input, filter);
    EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
  }
}

TEST_P(DepthwiseGradTest, BackpropInputInFilterAndOutBackprop) {
  const ConvCase& p = GetParam();
  for (const Format& f : Formats()) {
    SCOPED_TRACE(f.name);
    GradientChecker c;
    // Only gives the forward convolution's output shape; never run.
    const Output input = ops::Placeholder(
        c.scope(), DT_DOUBLE, ops::Placeholder::Shape(TensorShape(f.Dims(InputDims()))));
    const Output filter = c.RandomInput(TensorShape(FilterDims()));
    const Output conv = Forward(c.scope(), f, input, filter);
    ASSERT_TRUE(conv.shape().IsFullyDefined()) << conv.shape().DebugString();
    const Output out_backprop = c.RandomInput(conv.shape().AsTensorShape().value());
    const Output y = ops::DepthwiseConv2dNativeBackpropInput(
        c.scope(),
        ops::Const(c.scope(), Tensor::FromVector<int32_t>(f.ImageSizes(InputDims()), {4}),
                   DT_INT32),
        filter, out_backprop, f.Dims(p.strides), p.padding,
        Attrs<ops::DepthwiseConv2dNativeBackpropInput>(f));
    EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
  }
}

TEST_P(DepthwiseGradTest, BackpropFilterInInputAndOutBackprop) {
  const ConvCase& p = GetParam();
  for (const Format& f : Formats()) {
    SCOPED_TRACE(f.name);
    GradientChecker c;
    const Output input = c.RandomInput(TensorShape(f.Dims(InputDims())));
    // Only gives the forward convolution's output shape; never run.
    const Output filter =
        ops::Placeholder(c.scope(), DT_DOUBLE, ops::Placeholder::Shape(TensorShape(FilterDims())));
    const Output conv = Forward(c.scope(), f, input, filter);
    ASSERT_TRUE(conv.shape().IsFullyDefined()) << conv.shape().DebugString();
    const Output out_backprop = c.RandomInput(conv.shape().AsTensorShape().value());
    const Output y = ops::DepthwiseConv2dNativeBackpropFilter(
        c.scope(), input,
        ops::Const(c.scope(), Tensor::FromVector<int32_t>({3, 3, 2, 2}, {4}), DT_INT32),
        out_backprop, f.Dims(p.strides), p.padding,
        Attrs<ops::DepthwiseConv2dNativeBackpropFilter>(f));
    EXPECT_THAT(c.MaxError({y}), GradientErrorBelow(kTolerance));
  }
}

INSTANTIATE_TEST_SUITE_P(
    NnGrad, DepthwiseGradTest,
    ::testing::Values(
        ConvCase{"Same", {1, 1, 1, 1}, "SAME", {}, {1, 1, 1, 1}},
        ConvCase{"ValidStride2", {1, 2, 2, 1}, "VALID", {}, {1, 1, 1, 1}},
        ConvCase{"SameStride2", {1, 2, 2, 1}, "SAME", {}, {1, 1, 1, 1}},
        ConvCase{"Explicit", {1, 1, 2, 1}, "EXPLICIT", {0, 0, 1, 0, 2, 1, 0, 0}, {1, 1, 1, 1}},
        ConvCase{"Dilated", {1, 1, 1, 1}, "VALID", {}, {1, 2, 1, 1}}),
    [](const ::testing::TestParamInfo<ConvCase>& info) { return info.param.name; });

struct PoolCase {
  std::string name;
  std::vector<int64_t> ksize;
  std::vector<int64_t> strides;
  std::string padding;

  friend void PrintTo(const PoolCase& c, std::ostream* os) { *os << c.name; }
};

class PoolGradTest : public ::testing::TestWithParam<PoolCase> {};

// Distinct, well separated values keep each window's maximum unique.
TEST_P(PoolGradTest, MaxPool) {
  const PoolCase& p = GetParam();
  GradientChecker c;
  std::vector<double> values(2 * 5 * 5 * 2);
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] = static_cast<double>((i * 37) % values.size()) / 10.0;
  }
  const Output x = c.Input(Tensor::FromVector<double>(values, {2, 5, 5, 2}));
  EXPECT_THAT(c.MaxError({ops::MaxPool(c.scope(), x, p.ksize, p.strides, p.padding)}),
              GradientErrorBelow(kTolerance));
}

TEST_P(PoolGradTest, AvgPool) {
  const PoolCase& p = GetParam();
  GradientChecker c;
  const Output x = c.RandomInput({2, 5, 5, 2});
  EXPECT_THAT(c.MaxError({ops::AvgPool(c.scope(), x, p.ksize, p.strides, p.padding)}),
              GradientErrorBelow(kTolerance));
}

INSTANTIATE_TEST_SUITE_P(
    NnGrad, PoolGradTest,
    ::testing::Values(PoolCase{"Valid2x2Stride2", {1, 2, 2, 1}, {1, 2, 2, 1}, "VALID"},
                      PoolCase{"Same3x3Stride2", {1, 3, 3, 1}, {1, 2, 2, 1}, "SAME"},
                      PoolCase{"Same2x3Stride1", {1, 2, 3, 1}, {1, 1, 1, 1}, "SAME"}),
    [](const ::testing::TestParamInfo<PoolCase>& info) { return info.param.name; });

TEST(NnGrad, EluAndLeakyRelu) {
  GradientChecker c;
  const Output x = c.RandomInput({2, 3}, -2, 2, /*min_abs=*/0.1);
  EXPECT_THAT(c.MaxError({ops::Elu(c.scope(), x)}), GradientErrorBelow(1e-7));
  EXPECT_THAT(c.MaxError({ops::LeakyRelu(c.scope(), x, ops::LeakyRelu::Alpha(0.3f))}),
              GradientErrorBelow(1e-7));
}

// Second derivatives: the gradient of EluGrad and LeakyReluGrad in both
// inputs.
TEST(NnGrad, EluGradAndLeakyReluGrad) {
  GradientChecker c;
  const Output g = c.RandomInput({4});
  const Output x = c.RandomInput({4}, -2, 2, /*min_abs=*/0.1);
  EXPECT_THAT(c.MaxError({ops::EluGrad(c.scope(), g, ops::Elu(c.scope(), x))}),
              GradientErrorBelow(1e-7));
  EXPECT_THAT(
      c.MaxError({ops::Square(
          c.scope(), ops::LeakyReluGrad(c.scope(), g, x, ops::LeakyReluGrad::Alpha(0.3f)))}),
      GradientErrorBelow(1e-7));
}

}  // namespace
}  // namespace rill
