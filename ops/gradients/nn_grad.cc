// Gradients of the neural-network ops, after TensorFlow's nn_grad.py:
// activations, softmax and its losses, bias addition, convolution
// (depthwise too), pooling and top-k.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/node_attrs.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/gradients/grad_helpers.h"

namespace rill {
namespace {

using grad::In;
using grad::Ints;
using grad::OrZeros;
using grad::Out;
using grad::Scalar;
using Outputs = std::vector<Output>;

absl::Status ReluGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::ReluGrad(s, dy[0], Out(op, 0))};
  return absl::OkStatus();
}

// L2Loss(t) = sum(t^2) / 2: dt = t dy.
absl::Status L2LossGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::Mul(s, In(op, 0), dy[0])};
  return absl::OkStatus();
}

absl::Status Relu6Grad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output x = In(op, 0);
  const DataType t = BaseType(x.type());
  const Output linear =
      ops::LogicalAnd(s, ops::Greater(s, x, Scalar(s, 0, t)), ops::Less(s, x, Scalar(s, 6, t)));
  *dx = {ops::Select(s, linear, dy[0], ops::ZerosLike(s, dy[0]))};
  return absl::OkStatus();
}

// ReluGrad(g, features) is linear in g; features only pick where it passes.
absl::Status ReluGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output features = In(op, 1);
  *dx = {ops::ReluGrad(s, dy[0], features), ops::ZerosLike(s, features)};
  return absl::OkStatus();
}

absl::Status EluGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  *dx = {ops::EluGrad(s, dy[0], Out(op, 0))};
  return absl::OkStatus();
}

// EluGrad(g, y) = g where y > 0, g * (y + 1) elsewhere: linear in g, and
// in y with slope g where y <= 0 (TensorFlow's _EluGradGrad).
absl::Status EluGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output y = In(op, 1);
  const Output negative = ops::Less(s, y, Scalar(s, 0, BaseType(y.type())));
  *dx = {ops::EluGrad(s, dy[0], y),
         ops::Select(s, negative, ops::Mul(s, dy[0], In(op, 0)), ops::ZerosLike(s, y))};
  return absl::OkStatus();
}

absl::StatusOr<float> Alpha(const Operation& op) { return GetFloatAttr(grad::Def(op), "alpha"); }

absl::Status LeakyReluGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(const float alpha, Alpha(op));
  *dx = {ops::LeakyReluGrad(s, dy[0], In(op, 0), ops::LeakyReluGrad::Alpha(alpha))};
  return absl::OkStatus();
}

absl::Status LeakyReluGradGrad(const Scope& s, const Operation& op, const Outputs& dy,
                               Outputs* dx) {
  ASSIGN_OR_RETURN(const float alpha, Alpha(op));
  const Output features = In(op, 1);
  *dx = {ops::LeakyReluGrad(s, dy[0], features, ops::LeakyReluGrad::Alpha(alpha)),
         ops::ZerosLike(s, features)};
  return absl::OkStatus();
}

Output SumLastAxis(const Scope& s, const Output& x) {
  return ops::Sum(s, x, -1, ops::Sum::KeepDims(true));
}

absl::Status SoftmaxGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output y = Out(op, 0);
  *dx = {ops::Mul(s, ops::Sub(s, dy[0], SumLastAxis(s, ops::Mul(s, dy[0], y))), y)};
  return absl::OkStatus();
}

absl::Status LogSoftmaxGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output softmax = ops::Exp(s, Out(op, 0));
  *dx = {ops::Sub(s, dy[0], ops::Mul(s, SumLastAxis(s, dy[0]), softmax))};
  return absl::OkStatus();
}

// Each value's gradient goes back to the entry it was taken from; the
// indices and k carry none (TensorFlow's _TopKGrad, with DynamicStitch for
// its scatter_nd: the indices of one row are distinct).
absl::Status TopKGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const Output input = In(op, 0);
  const Output in_shape = ops::Shape(s, input);
  const Output total = ops::Size(s, input);
  const Output row_length =
      ops::Maximum(s, ops::Gather(s, in_shape, ops::Sub(s, ops::Size(s, in_shape), 1)), 1);
  // Indices into the flattened input: each row's index plus its row's start.
  const Output rows =
      ops::Reshape(s, Out(op, 1), ops::Pack(s, {ops::Input(-1), ops::Input(In(op, 1))}));
  const Output starts = ops::ExpandDims(s, ops::Range(s, 0, total, row_length), -1);
  const Output flat_indices = ops::Reshape(s, ops::Add(s, rows, starts), Ints(s, {-1}));
  const Output values_grad = OrZeros(s, dy[0], Out(op, 0));
  const Output stitched =
      ops::DynamicStitch(s, {ops::Input(ops::Range(s, 0, total, 1)), ops::Input(flat_indices)},
                         {ops::Input(ops::Reshape(s, ops::ZerosLike(s, input), Ints(s, {-1}))),
                          ops::Input(ops::Reshape(s, values_grad, Ints(s, {-1})))});
  *dx = {ops::Reshape(s, stitched, in_shape), Output()};
  return absl::OkStatus();
}

Output AddOptional(const Scope& s, const Output& a, const Output& b) {
  if (!a.ok()) return b;
  if (!b.ok()) return a;
  return ops::Add(s, a, b);
}

// The features gradient shared by both cross entropies: backprop (=
// softmax - labels) scaled by the loss gradient, plus the gradient through
// backprop itself when that output is used.
Output CrossEntropyFeaturesGrad(const Scope& s, const Operation& op, const Outputs& dy) {
  Output grad;
  if (dy[0].ok()) grad = ops::Mul(s, ops::ExpandDims(s, dy[0], -1), Out(op, 1));
  if (dy[1].ok()) {
    const Output softmax = ops::Softmax(s, In(op, 0));
    const Output inner = SumLastAxis(s, ops::Mul(s, dy[1], softmax));
    grad = AddOptional(s, grad, ops::Mul(s, ops::Sub(s, dy[1], inner), softmax));
  }
  return grad;
}

absl::Status SoftmaxCrossEntropyGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                     Outputs* dx) {
  Output labels_grad;
  if (dy[0].ok()) {
    labels_grad =
        ops::Mul(s, ops::ExpandDims(s, dy[0], -1), ops::Neg(s, ops::LogSoftmax(s, In(op, 0))));
  }
  if (dy[1].ok()) labels_grad = AddOptional(s, labels_grad, ops::Neg(s, dy[1]));
  *dx = {CrossEntropyFeaturesGrad(s, op, dy), labels_grad};
  return absl::OkStatus();
}

absl::Status SparseSoftmaxCrossEntropyGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                           Outputs* dx) {
  *dx = {CrossEntropyFeaturesGrad(s, op, dy), Output()};
  return absl::OkStatus();
}

absl::Status BiasAddGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(grad::Def(op), "data_format"));
  *dx = {dy[0], ops::BiasAddGrad(s, dy[0], ops::BiasAddGrad::DataFormat(format))};
  return absl::OkStatus();
}

// BiasAddGrad sums over all but the channel dimension, so its gradient
// repeats the channel vector along them.
absl::Status BiasAddGradGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(grad::Def(op), "data_format"));
  const Output backprop = In(op, 0);
  Output channels = dy[0];
  if (format == "NCHW") {
    const Output inner_ones =
        ops::Fill(s, ops::ExpandDims(s, ops::Sub(s, ops::Rank(s, backprop), 2), 0), 1);
    channels =
        ops::Reshape(s, channels, ops::ConcatV2(s, {Output(ops::Shape(s, dy[0])), inner_ones}, 0));
  }
  *dx = {ops::Mul(s, ops::OnesLike(s, backprop), channels)};
  return absl::OkStatus();
}

// The attrs of Conv2D or DepthwiseConv2dNative and their backprops; a
// gradient is built from the same family's ops.
struct ConvAttrs {
  bool depthwise = false;
  std::vector<int64_t> strides;
  std::string padding;
  std::vector<int64_t> explicit_paddings;
  std::string data_format;
  std::vector<int64_t> dilations;
  bool use_cudnn_on_gpu = true;  // Conv2D's only.
};

absl::StatusOr<ConvAttrs> ReadConvAttrs(const Operation& op) {
  const NodeDef& def = grad::Def(op);
  ConvAttrs a;
  a.depthwise = def.op().starts_with("DepthwiseConv2dNative");
  ASSIGN_OR_RETURN(a.strides, GetIntListAttr(def, "strides"));
  ASSIGN_OR_RETURN(a.padding, GetStringAttr(def, "padding"));
  ASSIGN_OR_RETURN(a.explicit_paddings, GetIntListAttr(def, "explicit_paddings"));
  ASSIGN_OR_RETURN(a.data_format, GetStringAttr(def, "data_format"));
  ASSIGN_OR_RETURN(a.dilations, GetIntListAttr(def, "dilations"));
  if (!a.depthwise) {
    ASSIGN_OR_RETURN(a.use_cudnn_on_gpu, GetBoolAttr(def, "use_cudnn_on_gpu"));
  }
  return a;
}

// The optional attrs of a convolution op, which each family's three ops
// share.
template <typename ConvOp>
typename ConvOp::Attrs OptionalAttrs(const ConvAttrs& a) {
  const auto attrs = typename ConvOp::Attrs()
                         .ExplicitPaddings(a.explicit_paddings)
                         .DataFormat(a.data_format)
                         .Dilations(a.dilations);
  if constexpr (requires { attrs.UseCudnnOnGpu(true); }) {
    return attrs.UseCudnnOnGpu(a.use_cudnn_on_gpu);
  } else {
    return attrs;
  }
}

Output Conv(const Scope& s, const ConvAttrs& a, const Output& input, const Output& filter) {
  if (a.depthwise) {
    return ops::DepthwiseConv2dNative(s, input, filter, a.strides, a.padding,
                                      OptionalAttrs<ops::DepthwiseConv2dNative>(a));
  }
  return ops::Conv2D(s, input, filter, a.strides, a.padding, OptionalAttrs<ops::Conv2D>(a));
}

Output ConvInputGrad(const Scope& s, const ConvAttrs& a, const Output& input_sizes,
                     const Output& filter, const Output& out_backprop) {
  if (a.depthwise) {
    return ops::DepthwiseConv2dNativeBackpropInput(
        s, input_sizes, filter, out_backprop, a.strides, a.padding,
        OptionalAttrs<ops::DepthwiseConv2dNativeBackpropInput>(a));
  }
  return ops::Conv2DBackpropInput(s, input_sizes, filter, out_backprop, a.strides, a.padding,
                                  OptionalAttrs<ops::Conv2DBackpropInput>(a));
}

Output ConvFilterGrad(const Scope& s, const ConvAttrs& a, const Output& input,
                      const Output& filter_sizes, const Output& out_backprop) {
  if (a.depthwise) {
    return ops::DepthwiseConv2dNativeBackpropFilter(
        s, input, filter_sizes, out_backprop, a.strides, a.padding,
        OptionalAttrs<ops::DepthwiseConv2dNativeBackpropFilter>(a));
  }
  return ops::Conv2DBackpropFilter(s, input, filter_sizes, out_backprop, a.strides, a.padding,
                                   OptionalAttrs<ops::Conv2DBackpropFilter>(a));
}

// Conv2D's and DepthwiseConv2dNative's (TensorFlow's
// _DepthwiseConv2dNativeGrad has the same form).
absl::Status Conv2DGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(op));
  const Output input = In(op, 0);
  const Output filter = In(op, 1);
  *dx = {ConvInputGrad(s, a, ops::Shape(s, input), filter, dy[0]),
         ConvFilterGrad(s, a, input, ops::Shape(s, filter), dy[0])};
  return absl::OkStatus();
}

// Conv2DBackpropInput(sizes, filter, out_backprop) is linear in each of
// filter and out_backprop; so is the depthwise one, and so for the filter
// backprops below.
absl::Status Conv2DBackpropInputGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                     Outputs* dx) {
  ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(op));
  const Output filter = In(op, 1);
  *dx = {Output(), ConvFilterGrad(s, a, dy[0], ops::Shape(s, filter), In(op, 2)),
         Conv(s, a, dy[0], filter)};
  return absl::OkStatus();
}

absl::Status Conv2DBackpropFilterGrad(const Scope& s, const Operation& op, const Outputs& dy,
                                      Outputs* dx) {
  ASSIGN_OR_RETURN(ConvAttrs a, ReadConvAttrs(op));
  const Output input = In(op, 0);
  *dx = {ConvInputGrad(s, a, ops::Shape(s, input), dy[0], In(op, 2)), Output(),
         Conv(s, a, input, dy[0])};
  return absl::OkStatus();
}

absl::Status MaxPoolGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const NodeDef& def = grad::Def(op);
  ASSIGN_OR_RETURN(std::vector<int64_t> ksize, GetIntListAttr(def, "ksize"));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, GetIntListAttr(def, "strides"));
  ASSIGN_OR_RETURN(std::string padding, GetStringAttr(def, "padding"));
  ASSIGN_OR_RETURN(std::vector<int64_t> explicit_paddings,
                   GetIntListAttr(def, "explicit_paddings"));
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(def, "data_format"));
  *dx = {
      ops::MaxPoolGrad(s, In(op, 0), Out(op, 0), dy[0], ksize, strides, padding,
                       ops::MaxPoolGrad::ExplicitPaddings(explicit_paddings).DataFormat(format))};
  return absl::OkStatus();
}

// Each output of AvgPool is the mean of its in-bounds window, so the
// gradient spreads dy / count over the window: a transposed convolution of
// dy / count with a window of ones, run on every (example, channel) plane
// as a one-channel image.
absl::Status AvgPoolGrad(const Scope& s, const Operation& op, const Outputs& dy, Outputs* dx) {
  const NodeDef& def = grad::Def(op);
  ASSIGN_OR_RETURN(std::vector<int64_t> ksize, GetIntListAttr(def, "ksize"));
  ASSIGN_OR_RETURN(std::vector<int64_t> strides, GetIntListAttr(def, "strides"));
  ASSIGN_OR_RETURN(std::string padding, GetStringAttr(def, "padding"));
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(def, "data_format"));
  if (ksize.size() != 4 || strides.size() != 4) {
    return absl::InvalidArgumentError("AvgPool ksize and strides must have 4 entries");
  }
  const bool nchw = format == "NCHW";
  const int h = nchw ? 2 : 1;
  const std::vector<int64_t> window_strides = {1, strides[h], strides[h + 1], 1};
  const Output x = In(op, 0);
  const DataType t = BaseType(x.type());

  const Output g = nchw ? dy[0] : Output(ops::Transpose(s, dy[0], Ints(s, {0, 3, 1, 2})));
  const Output x_shape = nchw ? Output(ops::Shape(s, x))
                              : Output(ops::Gather(s, ops::Shape(s, x), Ints(s, {0, 3, 1, 2})));
  const Output planes = ops::Reshape(s, ops::Prod(s, ops::Slice(s, x_shape, {0}, {2}), 0), {1});
  const Output x_hw = ops::Slice(s, x_shape, {2}, {2});
  const Output g_hw = ops::Slice(s, ops::Shape(s, g), {2}, {2});
  const Output g_planes =
      ops::Reshape(s, g, ops::ConcatV2(s, {Output(Ints(s, {-1})), g_hw, Ints(s, {1})}, 0));

  const Output one = Scalar(s, 1, t);
  const Output window = ops::Fill(
      s, Ints(s, {static_cast<int32_t>(ksize[h]), static_cast<int32_t>(ksize[h + 1]), 1, 1}), one);
  const Output ones_plane =
      ops::Fill(s, ops::ConcatV2(s, {Output(Ints(s, {1})), x_hw, Ints(s, {1})}, 0), one);
  const Output counts = ops::Conv2D(s, ones_plane, window, window_strides, padding);
  const Output planes_shape = ops::ConcatV2(s, {planes, x_hw, Ints(s, {1})}, 0);
  const Output dx_planes = ops::Conv2DBackpropInput(
      s, planes_shape, window, ops::Div(s, g_planes, counts), window_strides, padding);
  const Output dx_nchw = ops::Reshape(s, dx_planes, x_shape);
  *dx = {nchw ? dx_nchw : Output(ops::Transpose(s, dx_nchw, Ints(s, {0, 2, 3, 1})))};
  return absl::OkStatus();
}

}  // namespace

void RegisterNnGradients(GradientRegistry& r) {
  r.Register("Relu", ReluGrad);
  r.Register("TopKV2", TopKGrad);
  r.Register("Relu6", Relu6Grad);
  r.Register("L2Loss", L2LossGrad);
  r.Register("ReluGrad", ReluGradGrad);
  r.Register("Elu", EluGrad);
  r.Register("EluGrad", EluGradGrad);
  r.Register("LeakyRelu", LeakyReluGrad);
  r.Register("LeakyReluGrad", LeakyReluGradGrad);
  r.Register("Softmax", SoftmaxGrad);
  r.Register("LogSoftmax", LogSoftmaxGrad);
  r.Register("SoftmaxCrossEntropyWithLogits", SoftmaxCrossEntropyGrad);
  r.Register("SparseSoftmaxCrossEntropyWithLogits", SparseSoftmaxCrossEntropyGrad);
  r.Register("BiasAdd", BiasAddGrad);
  r.Register("BiasAddGrad", BiasAddGradGrad);
  r.Register("Conv2D", Conv2DGrad);
  r.Register("Conv2DBackpropInput", Conv2DBackpropInputGrad);
  r.Register("Conv2DBackpropFilter", Conv2DBackpropFilterGrad);
  r.Register("DepthwiseConv2dNative", Conv2DGrad);
  r.Register("DepthwiseConv2dNativeBackpropInput", Conv2DBackpropInputGrad);
  r.Register("DepthwiseConv2dNativeBackpropFilter", Conv2DBackpropFilterGrad);
  r.Register("MaxPool", MaxPoolGrad);
  r.Register("AvgPool", AvgPoolGrad);
}

}  // namespace rill
