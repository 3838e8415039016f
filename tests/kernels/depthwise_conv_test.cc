// DepthwiseConv2dNative and its two backprops on the CPU against reference
// loops written here, in both data formats, and the inputs they reject.
#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "gmock/gmock.h"
#include "graph/node_attrs.h"
#include "graph/node_def_util.h"
#include "graph/node_signature.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "ops/registry.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

// One case, described in NHWC; the NCHW runs transpose it.
struct DepthwiseCase {
  std::vector<int64_t> input;   // [n, h, w, c]
  std::vector<int64_t> filter;  // [kh, kw, c, multiplier]
  std::array<int64_t, 2> strides = {1, 1};
  std::array<int64_t, 2> dilations = {1, 1};
  std::string padding = "SAME";
  std::array<int64_t, 4> pads = {0, 0, 0, 0};  // EXPLICIT: height, then width.
};

std::vector<DepthwiseCase> Cases() {
  return {
      {{2, 5, 7, 3}, {3, 3, 3, 1}},
      {{2, 6, 5, 2}, {2, 3, 2, 2}, {1, 2}, {1, 1}, "VALID"},
      {{1, 7, 7, 2}, {3, 2, 2, 2}, {2, 2}, {1, 1}, "SAME"},
      {{2, 9, 8, 2}, {3, 3, 2, 1}, {1, 1}, {2, 2}, "SAME"},
      {{1, 9, 9, 1}, {2, 2, 1, 3}, {3, 3}, {2, 1}, "VALID"},
      {{1, 5, 6, 2}, {2, 3, 2, 2}, {1, 2}, {1, 1}, "EXPLICIT", {1, 0, 2, 1}},
  };
}

std::string Describe(const DepthwiseCase& c) {
  return "input " + TensorShape(c.input).DebugString() + " filter " +
         TensorShape(c.filter).DebugString() + " strides " + std::to_string(c.strides[0]) + "," +
         std::to_string(c.strides[1]) + " dilations " + std::to_string(c.dilations[0]) + "," +
         std::to_string(c.dilations[1]) + " " + c.padding;
}

// Output size and leading padding along dimension `dim`, as TensorFlow's.
std::pair<int64_t, int64_t> OutAndPad(const DepthwiseCase& c, int dim) {
  const int64_t in = c.input[1 + dim];
  const int64_t stride = c.strides[dim];
  const int64_t eff = (c.filter[dim] - 1) * c.dilations[dim] + 1;
  if (c.padding == "VALID") return {(in - eff) / stride + 1, 0};
  if (c.padding == "EXPLICIT") {
    const int64_t before = c.pads[2 * dim], after = c.pads[2 * dim + 1];
    return {(in + before + after - eff) / stride + 1, before};
  }
  const int64_t out = (in + stride - 1) / stride;
  return {out, std::max<int64_t>((out - 1) * stride + eff - in, 0) / 2};
}

// Calls fn(input_index, filter_index, output_index) for every product term
// of the NHWC convolution; returns the output's NHWC shape.
template <typename Fn>
std::vector<int64_t> ForEachTerm(const DepthwiseCase& c, Fn fn) {
  const int64_t n = c.input[0], h = c.input[1], w = c.input[2], ch = c.input[3];
  const int64_t kh = c.filter[0], kw = c.filter[1], mult = c.filter[3];
  const auto [oh, ph] = OutAndPad(c, 0);
  const auto [ow, pw] = OutAndPad(c, 1);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < oh; ++y)
      for (int64_t x = 0; x < ow; ++x)
        for (int64_t i = 0; i < kh; ++i)
          for (int64_t j = 0; j < kw; ++j) {
            const int64_t iy = y * c.strides[0] - ph + i * c.dilations[0];
            const int64_t ix = x * c.strides[1] - pw + j * c.dilations[1];
            if (iy < 0 || iy >= h || ix < 0 || ix >= w) continue;
            for (int64_t k = 0; k < ch; ++k)
              for (int64_t m = 0; m < mult; ++m)
                fn(((b * h + iy) * w + ix) * ch + k, ((i * kw + j) * ch + k) * mult + m,
                   ((b * oh + y) * ow + x) * ch * mult + k * mult + m);
          }
  return {n, oh, ow, ch * mult};
}

// An NHWC float tensor in NCHW, or back when `to_nchw` is false (`t` is
// then NCHW).
Tensor Transpose(const Tensor& t, bool to_nchw) {
  const int64_t n = t.dim_size(0);
  const int64_t h = t.dim_size(to_nchw ? 1 : 2), w = t.dim_size(to_nchw ? 2 : 3);
  const int64_t c = t.dim_size(to_nchw ? 3 : 1);
  Tensor out(DT_FLOAT, to_nchw ? TensorShape({n, c, h, w}) : TensorShape({n, h, w, c}));
  for (int64_t b = 0; b < n; ++b)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x)
        for (int64_t k = 0; k < c; ++k) {
          const int64_t nhwc = ((b * h + y) * w + x) * c + k;
          const int64_t nchw = ((b * c + k) * h + y) * w + x;
          if (to_nchw) {
            out.data<float>()[nchw] = t.data<float>()[nhwc];
          } else {
            out.data<float>()[nhwc] = t.data<float>()[nchw];
          }
        }
  return out;
}

Tensor InFormat(const Tensor& nhwc, bool nchw) { return nchw ? Transpose(nhwc, true) : nhwc; }

// The case's attrs in the run's data format.
void SetAttrs(KernelTester& t, const DepthwiseCase& c, bool nchw) {
  const auto spatial = [nchw](std::array<int64_t, 2> hw) {
    return nchw ? std::vector<int64_t>{1, 1, hw[0], hw[1]}
                : std::vector<int64_t>{1, hw[0], hw[1], 1};
  };
  t.Attr("strides", spatial(c.strides))
      .Attr("dilations", spatial(c.dilations))
      .Attr("padding", c.padding)
      .Attr("data_format", std::string(nchw ? "NCHW" : "NHWC"));
  if (c.padding == "EXPLICIT") {
    const auto& p = c.pads;
    t.Attr("explicit_paddings", nchw ? std::vector<int64_t>{0, 0, 0, 0, p[0], p[1], p[2], p[3]}
                                     : std::vector<int64_t>{0, 0, p[0], p[1], p[2], p[3], 0, 0});
  }
}

std::vector<int32_t> Sizes(absl::Span<const int64_t> dims) {
  return std::vector<int32_t>(dims.begin(), dims.end());
}

TEST(DepthwiseConv2dNative, ComputesSmallCaseByHand) {
  // Channel 0 is 1..9 and channel 1 its negation. Channel 0's filters are
  // all ones and all twos (2x2 block sums); channel 1's pick the top-left
  // and the bottom-right tap.
  KernelTester t("DepthwiseConv2dNative");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", std::string("VALID"));
  t.Input<float>({1, 3, 3, 2}, {1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8, 9, -9});
  t.Input<float>({2, 2, 2, 2}, {1, 2, 1, 0, 1, 2, 0, 0, 1, 2, 0, 0, 1, 2, 0, 1});
  EXPECT_THAT(
      t.RunOne(),
      IsOkAndHolds(TensorEq(MakeTensor<float>(
          {1, 2, 2, 4}, {12, 24, -1, -5, 16, 32, -2, -6, 24, 48, -4, -8, 28, 56, -5, -9}))));
}

TEST(DepthwiseConv2dNative, MatchesReferenceLoopsInBothFormats) {
  int seed = 0;
  for (const DepthwiseCase& c : Cases()) {
    const Tensor input = RandomTensor(DT_FLOAT, TensorShape(c.input), ++seed);
    const Tensor filter = RandomTensor(DT_FLOAT, TensorShape(c.filter), ++seed);
    const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
    std::vector<float> out(TensorShape(out_shape).num_elements());
    ForEachTerm(c, [&](int64_t i, int64_t f, int64_t o) {
      out[o] += input.data<float>()[i] * filter.data<float>()[f];
    });
    const Tensor expected = MakeTensor<float>(TensorShape(out_shape), out);
    for (bool nchw : {false, true}) {
      KernelTester t("DepthwiseConv2dNative");
      SetAttrs(t, c, nchw);
      t.Input(InFormat(input, nchw)).Input(filter);
      for (int threads : {1, 2}) {
        ASSERT_OK_AND_ASSIGN(Tensor y, t.RunOne(threads));
        EXPECT_THAT(nchw ? Transpose(y, false) : y, TensorNear(expected, 1e-5, 1e-5))
            << Describe(c) << (nchw ? " NCHW" : " NHWC");
      }
    }
  }
}

TEST(DepthwiseConv2dNativeBackprops, MatchReferenceLoopsInBothFormats) {
  int seed = 100;
  for (const DepthwiseCase& c : Cases()) {
    const Tensor x = RandomTensor(DT_FLOAT, TensorShape(c.input), ++seed);
    const Tensor f = RandomTensor(DT_FLOAT, TensorShape(c.filter), ++seed);
    const std::vector<int64_t> out_shape = ForEachTerm(c, [](int64_t, int64_t, int64_t) {});
    const Tensor dy = RandomTensor(DT_FLOAT, TensorShape(out_shape), ++seed);
    // The adjoints of the forward's terms.
    std::vector<float> dx(x.NumElements()), df(f.NumElements());
    ForEachTerm(c, [&](int64_t i, int64_t k, int64_t o) {
      dx[i] += dy.data<float>()[o] * f.data<float>()[k];
      df[k] += x.data<float>()[i] * dy.data<float>()[o];
    });
    const Tensor expected_dx = MakeTensor<float>(x.shape(), dx);
    for (bool nchw : {false, true}) {
      const Tensor input = InFormat(x, nchw);
      KernelTester input_grad("DepthwiseConv2dNativeBackpropInput");
      SetAttrs(input_grad, c, nchw);
      input_grad.Input<int32_t>({4}, Sizes(input.shape().dim_sizes()))
          .Input(f)
          .Input(InFormat(dy, nchw));
      ASSERT_OK_AND_ASSIGN(Tensor got_dx, input_grad.RunOne());
      EXPECT_THAT(nchw ? Transpose(got_dx, false) : got_dx, TensorNear(expected_dx, 1e-5, 1e-5))
          << Describe(c) << (nchw ? " NCHW" : " NHWC");
      KernelTester filter_grad("DepthwiseConv2dNativeBackpropFilter");
      SetAttrs(filter_grad, c, nchw);
      filter_grad.Input(input).Input<int32_t>({4}, Sizes(c.filter)).Input(InFormat(dy, nchw));
      for (int threads : {1, 2}) {
        EXPECT_THAT(filter_grad.RunOne(threads),
                    IsOkAndHolds(TensorNear(MakeTensor<float>(f.shape(), df), 1e-4, 1e-5)))
            << Describe(c) << (nchw ? " NCHW" : " NHWC");
      }
    }
  }
}

TEST(DepthwiseConv2dNative, RunsInDouble) {
  KernelTester t("DepthwiseConv2dNative");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", std::string("SAME"));
  t.Input<double>({1, 1, 2, 1}, {3, 4}).Input<double>({1, 2, 1, 1}, {1, 10});
  EXPECT_THAT(t.RunOne(), IsOkAndHolds(TensorEq(MakeTensor<double>({1, 1, 2, 1}, {43, 4}))));
}

TEST(DepthwiseConv2dNativeBackpropFilter, IsZeroForAnEmptyBatch) {
  KernelTester t("DepthwiseConv2dNativeBackpropFilter");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", std::string("SAME"));
  t.Input(Tensor(DT_FLOAT, {0, 3, 3, 2}))
      .Input<int32_t>({4}, {2, 2, 2, 1})
      .Input(Tensor(DT_FLOAT, {0, 3, 3, 2}));
  EXPECT_THAT(t.RunOne(),
              IsOkAndHolds(TensorEq(MakeTensor<float>({2, 2, 2, 1}, {0, 0, 0, 0, 0, 0, 0, 0}))));
}

// The kernel's own checks, reached as when shapes are unknown before the
// run; each message names the op and the shapes.
absl::StatusOr<Tensor> RunUnknownShapes(KernelTester& t) { return t.UnknownInputShapes().RunOne(); }

KernelTester Forward(const Tensor& input, const Tensor& filter) {
  KernelTester t("DepthwiseConv2dNative");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", std::string("VALID"));
  t.Input(input).Input(filter);
  return t;
}

TEST(DepthwiseConv2dNative, RejectsInputOfRankOtherThanFour) {
  KernelTester t = Forward(Tensor(DT_FLOAT, {3, 3, 2}), Tensor(DT_FLOAT, {2, 2, 2, 1}));
  EXPECT_THAT(RunUnknownShapes(t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("DepthwiseConv2dNative"), HasSubstr("4-dimensional"),
                             HasSubstr("[3,3,2]"))));
}

TEST(DepthwiseConv2dNative, RejectsFilterForOtherInputChannels) {
  KernelTester t = Forward(Tensor(DT_FLOAT, {1, 3, 3, 4}), Tensor(DT_FLOAT, {2, 2, 3, 1}));
  EXPECT_THAT(RunUnknownShapes(t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("DepthwiseConv2dNative"), HasSubstr("in_channels"),
                             HasSubstr("[1,3,3,4]"), HasSubstr("[2,2,3,1]"))));
}

TEST(DepthwiseConv2dNative, RejectsWindowLargerThanValidInput) {
  // A window two larger than the input leaves a negative output size (one
  // larger leaves an empty output, as in TensorFlow).
  KernelTester t = Forward(Tensor(DT_FLOAT, {1, 1, 1, 1}), Tensor(DT_FLOAT, {3, 3, 1, 1}));
  EXPECT_THAT(RunUnknownShapes(t),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("DepthwiseConv2dNative"), HasSubstr("[3,3,1,1]"))));
}

// The kernel is created directly, so that its own attr checks are reached
// (the shape function rejects these too).
absl::Status CreateForward(const std::vector<int64_t>& strides, const std::string& format) {
  NodeDef node;
  node.set_name("depthwise");
  node.set_op("DepthwiseConv2dNative");
  (*node.mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  (*node.mutable_attr())["strides"] = MakeAttr(strides);
  (*node.mutable_attr())["padding"] = MakeAttr("SAME");
  (*node.mutable_attr())["data_format"] = MakeAttr(format);
  ASSIGN_OR_RETURN(const OpRegistration* op, StandardOps().LookUp(node.op()));
  AddDefaultsToNodeDef(op->op_def, &node);
  ASSIGN_OR_RETURN(NodeSignature sig, ComputeNodeSignature(node, op->op_def));
  return StandardKernels().CreateKernel(node, op->op_def, sig, kDeviceCpu).status();
}

TEST(DepthwiseConv2dNative, RejectsStridesAlongBatchOrDepth) {
  EXPECT_OK(CreateForward({1, 2, 2, 1}, "NHWC"));
  EXPECT_OK(CreateForward({1, 1, 2, 2}, "NCHW"));
  for (const auto& [strides, format] : std::vector<std::pair<std::vector<int64_t>, std::string>>{
           {{2, 1, 1, 1}, "NHWC"}, {{1, 1, 1, 2}, "NHWC"}, {{1, 2, 1, 1}, "NCHW"}}) {
    EXPECT_THAT(CreateForward(strides, format),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         AllOf(HasSubstr("DepthwiseConv2dNative"), HasSubstr("strides"))))
        << format;
  }
}

KernelTester BackpropInput(std::vector<int32_t> sizes, const Tensor& filter,
                           const Tensor& out_backprop) {
  KernelTester t("DepthwiseConv2dNativeBackpropInput");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", std::string("VALID"));
  t.Input<int32_t>({static_cast<int64_t>(sizes.size())}, sizes).Input(filter).Input(out_backprop);
  return t;
}

TEST(DepthwiseConv2dNativeBackpropInput, RejectsBadInputSizes) {
  const Tensor filter(DT_FLOAT, {2, 2, 2, 1});
  const Tensor dy(DT_FLOAT, {1, 3, 3, 2});
  KernelTester short_sizes = BackpropInput({1, 4, 4}, filter, dy);
  EXPECT_THAT(
      RunUnknownShapes(short_sizes),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("DepthwiseConv2dNativeBackpropInput"), HasSubstr("input_sizes"))));
  KernelTester negative = BackpropInput({1, -4, 4, 2}, filter, dy);
  EXPECT_THAT(RunUnknownShapes(negative),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("input_sizes")));
  KernelTester channels = BackpropInput({1, 4, 4, 3}, filter, dy);
  EXPECT_THAT(RunUnknownShapes(channels),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("in_channels"), HasSubstr("[1,4,4,3]"))));
}

TEST(DepthwiseConv2dNativeBackpropInput, RejectsOutBackpropOfWrongShape) {
  KernelTester t =
      BackpropInput({1, 4, 4, 2}, Tensor(DT_FLOAT, {2, 2, 2, 1}), Tensor(DT_FLOAT, {1, 3, 3, 1}));
  EXPECT_THAT(RunUnknownShapes(t), StatusIs(absl::StatusCode::kInvalidArgument,
                                            AllOf(HasSubstr("out_backprop"), HasSubstr("[1,3,3,2]"),
                                                  HasSubstr("[1,3,3,1]"))));
}

KernelTester BackpropFilter(const Tensor& input, std::vector<int32_t> sizes,
                            const Tensor& out_backprop) {
  KernelTester t("DepthwiseConv2dNativeBackpropFilter");
  t.Attr("strides", std::vector<int64_t>{1, 1, 1, 1}).Attr("padding", std::string("VALID"));
  t.Input(input).Input<int32_t>({static_cast<int64_t>(sizes.size())}, sizes).Input(out_backprop);
  return t;
}

TEST(DepthwiseConv2dNativeBackpropFilter, RejectsBadFilterSizes) {
  const Tensor x(DT_FLOAT, {1, 4, 4, 2});
  const Tensor dy(DT_FLOAT, {1, 3, 3, 2});
  KernelTester long_sizes = BackpropFilter(x, {2, 2, 2, 1, 1}, dy);
  EXPECT_THAT(
      RunUnknownShapes(long_sizes),
      StatusIs(absl::StatusCode::kInvalidArgument,
               AllOf(HasSubstr("DepthwiseConv2dNativeBackpropFilter"), HasSubstr("filter_sizes"))));
  KernelTester channels = BackpropFilter(x, {2, 2, 3, 1}, dy);
  EXPECT_THAT(RunUnknownShapes(channels),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("in_channels")));
  KernelTester wrong_dy = BackpropFilter(x, {2, 2, 2, 2}, dy);
  EXPECT_THAT(RunUnknownShapes(wrong_dy),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("out_backprop"), HasSubstr("[1,3,3,4]"))));
}

}  // namespace
}  // namespace rill::testing
