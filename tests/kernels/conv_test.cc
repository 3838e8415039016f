#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::HasSubstr;

// One convolution case: NHWC input, HWIO filter.
struct ConvCase {
  std::vector<int64_t> input;   // [n, h, w, c]
  std::vector<int64_t> filter;  // [kh, kw, c, oc]
  int64_t stride_h, stride_w;
  int64_t dilation_h, dilation_w;
  std::string padding;
};

// Output size and leading padding along one dimension, as TensorFlow.
std::pair<int64_t, int64_t> OutAndPad(int64_t in, int64_t k, int64_t stride, int64_t dilation,
                                      const std::string& padding) {
  const int64_t eff = (k - 1) * dilation + 1;
  if (padding == "VALID") return {(in - eff) / stride + 1, 0};
  const int64_t out = (in + stride - 1) / stride;
  return {out, std::max<int64_t>((out - 1) * stride + eff - in, 0) / 2};
}

// Calls fn(input_index, filter_index, output_index) for every product term
// of the convolution.
template <typename Fn>
std::vector<int64_t> ForEachTerm(const ConvCase& c, Fn fn) {
  const int64_t n = c.input[0], h = c.input[1], w = c.input[2], ch = c.input[3];
  const int64_t kh = c.filter[0], kw = c.filter[1], oc = c.filter[3];
  const auto [oh, ph] = OutAndPad(h, kh, c.stride_h, c.dilation_h, c.padding);
  const auto [ow, pw] = OutAndPad(w, kw, c.stride_w, c.dilation_w, c.padding);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t iy = y * c.stride_h - ph + i * c.dilation_h;
            const int64_t ix = x * c.stride_w - pw + j * c.dilation_w;
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            for (int64_t d = 0; d < ch; ++d)
              for (int64_t o = 0; o < oc; ++o)
                fn(((b * h + iy) * w + ix) * ch + d, ((i * kw + j) * ch + d) * oc + o,
                   ((b * oh + y) * ow + x) * oc + o);
          }
  return {n, oh, ow, oc};
}

void SetConvAttrs(KernelTester& t, const ConvCase& c) {
  t.Attr("strides", std::vector<int64_t>{1, c.stride_h, c.stride_w, 1})
      .Attr("dilations", std::vector<int64_t>{1, c.dilation_h, c.dilation_w, 1})
      .Attr("padding", c.padding);
}

std::vector<ConvCase> Cases() {
  return {
      {{2, 5, 7, 3}, {3, 3, 3, 4}, 2, 2, 1, 1, "SAME"},
      {{2, 6, 5, 2}, {2, 3, 2, 3}, 1, 2, 1, 1, "VALID"},
      {{1, 7, 7, 2}, {3, 2, 2, 2}, 2, 1, 1, 1, "SAME"},
      {{2, 9, 8, 2}, {3, 3, 2, 3}, 1, 1, 2, 2, "SAME"},
      {{1, 9, 9, 1}, {2, 2, 1, 2}, 3, 3, 2, 1, "VALID"},
  };
}

std::string Describe(const ConvCase& c) {
  return "input " + TensorShape(c.input).DebugString() + " filter " +
         TensorShape(c.filter).DebugString() + " strides " + std::to_string(c.stride_h) + "," +
         std::to_string(c.stride_w) + " dilations " + std::to_string(c.dilation_h) + "," +
         std::to_string(c.dilation_w) + " " + c.padding;
}

TEST(Conv2D, MatchesReferenceLoops) {
  int seed = 0;
  for (const ConvCase& c : Cases()) {
    const Tensor input = RandomTensor(DT_FLOAT, TensorShape(c.input), ++seed);
    const Tensor filter = RandomTensor(DT_FLOAT, TensorShape(c.filter), ++seed);
    const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
    std::vector<float> out(TensorShape(out_shape).num_elements());
    ForEachTerm(c, [&](int64_t i, int64_t f, int64_t o) {
      out[o] += input.data<float>()[i] * filter.data<float>()[f];
    });
    KernelTester t("Conv2D");
    SetConvAttrs(t, c);
    t.Input(input).Input(filter);
    for (int threads : {1, 2}) {
      EXPECT_THAT(
          t.RunOne(threads),
          IsOkAndHolds(TensorNear(MakeTensor<float>(TensorShape(out_shape), out), 1e-5, 1e-5)))
          << Describe(c);
    }
  }
}

TEST(Conv2D, ComputesSmallCaseByHand) {
  // 3x3 image, 2x2 all-ones filter, VALID: sums of each 2x2 block.
  KernelTester t("Conv2D");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", "VALID");
  t.Input<float>({1, 3, 3, 1}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  t.Input<float>({2, 2, 1, 1}, {1, 1, 1, 1});
  EXPECT_THAT(t.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<float>({1, 2, 2, 1}, {12, 16, 24, 28}))));
}

TEST(Conv2D, RejectsDepthMismatch) {
  KernelTester t("Conv2D");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", "SAME");
  t.Input(Tensor(DT_FLOAT, {1, 3, 3, 4})).Input(Tensor(DT_FLOAT, {2, 2, 3, 1}));
  EXPECT_FALSE(t.RunOne().ok());
}

TEST(Conv2D, NchwIsUnimplementedOnCpu) {
  KernelTester t("Conv2D");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
      .Attr("padding", "SAME")
      .Attr("data_format", "NCHW");
  t.Input(Tensor(DT_FLOAT, {1, 1, 3, 3})).Input(Tensor(DT_FLOAT, {2, 2, 1, 1}));
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kUnimplemented, HasSubstr("NHWC")));
}

TEST(Conv2DBackpropInput, MatchesReferenceLoops) {
  int seed = 100;
  for (const ConvCase& c : Cases()) {
    const Tensor filter = RandomTensor(DT_FLOAT, TensorShape(c.filter), ++seed);
    const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
    const Tensor out_backprop = RandomTensor(DT_FLOAT, TensorShape(out_shape), ++seed);
    std::vector<float> expected(TensorShape(c.input).num_elements());
    ForEachTerm(c, [&](int64_t i, int64_t f, int64_t o) {
      expected[i] += filter.data<float>()[f] * out_backprop.data<float>()[o];
    });
    KernelTester t("Conv2DBackpropInput");
    SetConvAttrs(t, c);
    t.Input<int32_t>({4}, std::vector<int32_t>(c.input.begin(), c.input.end()))
        .Input(filter)
        .Input(out_backprop);
    for (int threads : {1, 2}) {
      EXPECT_THAT(
          t.RunOne(threads),
          IsOkAndHolds(TensorNear(MakeTensor<float>(TensorShape(c.input), expected), 1e-5, 1e-5)))
          << Describe(c);
    }
  }
}

TEST(Conv2DBackpropFilter, MatchesReferenceLoops) {
  int seed = 200;
  for (const ConvCase& c : Cases()) {
    const Tensor input = RandomTensor(DT_FLOAT, TensorShape(c.input), ++seed);
    const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
    const Tensor out_backprop = RandomTensor(DT_FLOAT, TensorShape(out_shape), ++seed);
    std::vector<float> expected(TensorShape(c.filter).num_elements());
    ForEachTerm(c, [&](int64_t i, int64_t f, int64_t o) {
      expected[f] += input.data<float>()[i] * out_backprop.data<float>()[o];
    });
    KernelTester t("Conv2DBackpropFilter");
    SetConvAttrs(t, c);
    t.Input(input)
        .Input<int32_t>({4}, std::vector<int32_t>(c.filter.begin(), c.filter.end()))
        .Input(out_backprop);
    for (int threads : {1, 2}) {
      EXPECT_THAT(
          t.RunOne(threads),
          IsOkAndHolds(TensorNear(MakeTensor<float>(TensorShape(c.filter), expected), 1e-4, 1e-5)))
          << Describe(c);
    }
  }
}

// With no image, or no output position, there is nothing to sum: the
// filter's gradient is zeros (its buffer comes from the allocator
// uninitialized, so the kernel must write them).
TEST(Conv2DBackpropFilter, AnEmptyBatchOrOutputGivesZeros) {
  for (const ConvCase& c : {ConvCase{{0, 5, 5, 2}, {3, 3, 2, 4}, 1, 1, 1, 1, "SAME"},
                            ConvCase{{2, 2, 2, 2}, {3, 3, 2, 4}, 1, 1, 1, 1, "VALID"}}) {
    const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
    // Again: a buffer the allocator reuses holds what was there.
    for (int attempt = 0; attempt < 3; ++attempt) {
      KernelTester t("Conv2DBackpropFilter");
      SetConvAttrs(t, c);
      t.Input(RandomTensor(DT_FLOAT, TensorShape(c.input), 500))
          .Input<int32_t>({4}, std::vector<int32_t>(c.filter.begin(), c.filter.end()))
          .Input(Tensor(DT_FLOAT, TensorShape(out_shape)));
      const Tensor zeros = MakeTensor<float>(TensorShape(c.filter), std::vector<float>(72, 0.0f));
      EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorNear(zeros, 0, 0))) << Describe(c);
    }
  }
}

float Dot(const Tensor& a, const Tensor& b) {
  double sum = 0;
  for (int64_t i = 0; i < a.NumElements(); ++i) sum += a.data<float>()[i] * b.data<float>()[i];
  return static_cast<float>(sum);
}

// <conv(x, f), dy> = <x, backprop_input(f, dy)> = <f, backprop_filter(x, dy)>:
// both gradients are adjoints of the forward convolution.
TEST(Conv2DBackprop, GradientsAreAdjointsOfConv2D) {
  const ConvCase c = {{2, 7, 6, 3}, {3, 2, 3, 2}, 2, 2, 1, 1, "SAME"};
  const Tensor x = RandomTensor(DT_FLOAT, TensorShape(c.input), 300);
  const Tensor f = RandomTensor(DT_FLOAT, TensorShape(c.filter), 301);
  KernelTester forward("Conv2D");
  SetConvAttrs(forward, c);
  forward.Input(x).Input(f);
  ASSERT_OK_AND_ASSIGN(Tensor y, forward.RunOne());
  const Tensor dy = RandomTensor(DT_FLOAT, y.shape(), 302);
  KernelTester input_grad("Conv2DBackpropInput");
  SetConvAttrs(input_grad, c);
  input_grad.Input<int32_t>({4}, {2, 7, 6, 3}).Input(f).Input(dy);
  ASSERT_OK_AND_ASSIGN(Tensor dx, input_grad.RunOne());
  KernelTester filter_grad("Conv2DBackpropFilter");
  SetConvAttrs(filter_grad, c);
  filter_grad.Input(x).Input<int32_t>({4}, {3, 2, 3, 2}).Input(dy);
  ASSERT_OK_AND_ASSIGN(Tensor df, filter_grad.RunOne());
  EXPECT_NEAR(Dot(y, dy), Dot(x, dx), 1e-3);
  EXPECT_NEAR(Dot(y, dy), Dot(f, df), 1e-3);
}

// Each image's patch matrix here (32 * 32 rows of 3 * 3 * 700) is over a
// third of the kernels' patch buffer bound (16 Mi elements), so the batch
// of 3 runs as chunks of 2 and 1 images; results must not depend on that.
TEST(Conv2D, ChunkedBatchMatchesReferenceForAllThreeOps) {
  const ConvCase c = {{3, 32, 32, 700}, {3, 3, 700, 2}, 1, 1, 1, 1, "SAME"};
  const Tensor x = RandomTensor(DT_FLOAT, TensorShape(c.input), 400);
  const Tensor f = RandomTensor(DT_FLOAT, TensorShape(c.filter), 401);
  const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
  const Tensor dy = RandomTensor(DT_FLOAT, TensorShape(out_shape), 402);
  std::vector<float> y(dy.NumElements()), dx(x.NumElements()), df(f.NumElements());
  ForEachTerm(c, [&](int64_t i, int64_t w, int64_t o) {
    y[o] += x.data<float>()[i] * f.data<float>()[w];
    dx[i] += f.data<float>()[w] * dy.data<float>()[o];
    df[w] += x.data<float>()[i] * dy.data<float>()[o];
  });
  KernelTester forward("Conv2D");
  SetConvAttrs(forward, c);
  forward.Input(x).Input(f);
  EXPECT_THAT(forward.RunOne(),
              IsOkAndHolds(TensorNear(MakeTensor<float>(TensorShape(out_shape), y), 1e-3, 1e-4)));
  KernelTester input_grad("Conv2DBackpropInput");
  SetConvAttrs(input_grad, c);
  input_grad.Input<int32_t>({4}, {3, 32, 32, 700}).Input(f).Input(dy);
  EXPECT_THAT(input_grad.RunOne(),
              IsOkAndHolds(TensorNear(MakeTensor<float>(x.shape(), dx), 1e-4, 1e-4)));
  KernelTester filter_grad("Conv2DBackpropFilter");
  SetConvAttrs(filter_grad, c);
  filter_grad.Input(x).Input<int32_t>({4}, {3, 3, 700, 2}).Input(dy);
  EXPECT_THAT(filter_grad.RunOne(),
              IsOkAndHolds(TensorNear(MakeTensor<float>(f.shape(), df), 1e-3, 1e-4)));
}

TEST(Conv2DBackpropInput, RejectsOutBackpropOfWrongShape) {
  KernelTester t("Conv2DBackpropInput");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", "VALID");
  t.Input<int32_t>({4}, {1, 4, 4, 1})
      .Input(Tensor(DT_FLOAT, {2, 2, 1, 1}))
      .Input(Tensor(DT_FLOAT, {1, 2, 2, 1}));
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("out_backprop")));
}

TEST(Conv2D, RejectsPaddingsWhoseArithmeticOverflows) {
  constexpr int64_t k2To62 = int64_t{1} << 62;
  KernelTester t("Conv2D");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
      .Attr("padding", std::string("EXPLICIT"))
      .Attr("explicit_paddings", std::vector<int64_t>{0, 0, k2To62, k2To62, 0, 0, 0, 0})
      .Input(RandomTensor(DT_FLOAT, {1, 4, 4, 1}, 1))
      .Input(RandomTensor(DT_FLOAT, {2, 2, 1, 1}, 2));
  EXPECT_THAT(t.RunOne(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows")));
  // Large paddings whose sum fits still give an output too large to count.
  KernelTester wide("Conv2D");
  wide.Attr("strides", std::vector<int64_t>{1, 1, 1, 1})
      .Attr("padding", std::string("EXPLICIT"))
      .Attr("explicit_paddings",
            std::vector<int64_t>{0, 0, k2To62 / 2, k2To62 / 2, k2To62 / 2, k2To62 / 2, 0, 0})
      .Input(RandomTensor(DT_FLOAT, {1, 4, 4, 1}, 1))
      .Input(RandomTensor(DT_FLOAT, {2, 2, 1, 1}, 2));
  EXPECT_THAT(wide.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("overflows int64")));
}

}  // namespace
}  // namespace rill::testing
