// Neural-network ops: activations, softmax and its losses, bias addition,
// 2-D convolution and pooling with their gradients, TopKV2. Names, args,
// attrs and type lists follow TensorFlow's, so GraphDefs it wrote validate.
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "ops/shape_fn_util.h"
#include "ops/window_size.h"

namespace rill {
namespace {

constexpr char kFloatTypes[] = "T: {half, bfloat16, float, double}";
constexpr char kConvPadding[] = "padding: {'SAME', 'VALID', 'EXPLICIT'}";
constexpr char kExplicitPaddings[] = "explicit_paddings: list(int) = []";
constexpr char kDataFormat[] = "data_format: {'NHWC', 'NCHW'} = 'NHWC'";

// An error naming `what` when two known dimension sizes differ.
absl::Status ExpectSameDim(int64_t a, int64_t b, std::string_view what) {
  if (a >= 0 && b >= 0 && a != b) {
    return ShapeError("Dimensions must be equal, but are %d and %d for %s", a, b, what);
  }
  return absl::OkStatus();
}

// Where the dimensions of a 4-D image tensor lie for a data_format
// (NCHW_VECT_C places them as NCHW, with a fifth dimension after).
struct ImageLayout {
  int batch;
  int height;
  int width;
  int channels;
};

absl::StatusOr<ImageLayout> LayoutOf(InferenceContext& c) {
  ASSIGN_OR_RETURN(std::string format, c.GetStringAttr("data_format"));
  if (format == "NHWC") return ImageLayout{0, 1, 2, 3};
  return ImageLayout{0, 2, 3, 1};
}

// INVALID_ARGUMENT when the element count overflows int64 (windows with
// large explicit paddings can make the spatial sizes large).
absl::StatusOr<PartialTensorShape> ImageShape(const ImageLayout& l, int64_t batch, int64_t height,
                                              int64_t width, int64_t channels) {
  std::vector<int64_t> dims(4);
  dims[l.batch] = batch;
  dims[l.height] = height;
  dims[l.width] = width;
  dims[l.channels] = channels;
  return PartialTensorShape::Create(dims);
}

// The height and width entries of a 4-entry list attr in data_format order
// (strides, ksize, dilations), whose batch and channel entries must be 1.
absl::StatusOr<std::array<int64_t, 2>> SpatialPair(InferenceContext& c, std::string_view attr,
                                                   const ImageLayout& l) {
  ASSIGN_OR_RETURN(std::vector<int64_t> v, c.GetIntListAttr(attr));
  if (v.size() != 4) {
    return ShapeError("%s must have 4 entries, one per dimension, but has %d", attr, v.size());
  }
  if (v[l.batch] != 1 || v[l.channels] != 1) {
    return ShapeError("%s over the batch or channel dimension is not supported: [%d, %d, %d, %d]",
                      attr, v[0], v[1], v[2], v[3]);
  }
  for (int64_t x : v) {
    if (x <= 0) return ShapeError("%s entries must be positive, got %d", attr, x);
  }
  return std::array<int64_t, 2>{v[l.height], v[l.width]};
}

// The output size of a sliding window along one dimension; -1 when it
// depends on an unknown size.
absl::StatusOr<int64_t> WindowedOutputSize(int64_t input, int64_t window, int64_t dilation,
                                           int64_t stride, std::string_view padding,
                                           int64_t pad_before, int64_t pad_after) {
  if (input < 0) return -1;
  if (padding == "SAME") return input / stride + (input % stride != 0 ? 1 : 0);
  if (window < 0) return -1;
  const WindowPadding kind = padding == "VALID" ? WindowPadding::kValid : WindowPadding::kExplicit;
  ASSIGN_OR_RETURN(const WindowSize size,
                   ComputeWindowSize(input, window, dilation, stride, kind, pad_before, pad_after));
  return size.output;
}

// Output height and width of Conv2D and the pools from the input's, the
// window's (`window`, -1 when unknown) and the strides, dilations (when
// `dilated`), padding and explicit_paddings attrs.
absl::StatusOr<std::array<int64_t, 2>> SpatialOutputSizes(InferenceContext& c,
                                                          const ImageLayout& l,
                                                          const PartialTensorShape& input,
                                                          std::array<int64_t, 2> window,
                                                          bool dilated) {
  ASSIGN_OR_RETURN(auto strides, SpatialPair(c, "strides", l));
  std::array<int64_t, 2> dilations = {1, 1};
  if (dilated) {
    ASSIGN_OR_RETURN(dilations, SpatialPair(c, "dilations", l));
  }
  ASSIGN_OR_RETURN(std::string padding, c.GetStringAttr("padding"));
  std::vector<int64_t> pads(8, 0);
  if (c.node().attr().count("explicit_paddings") > 0) {
    ASSIGN_OR_RETURN(std::vector<int64_t> explicit_pads, c.GetIntListAttr("explicit_paddings"));
    if (padding != "EXPLICIT" && !explicit_pads.empty()) {
      return ShapeError("explicit_paddings must be empty unless padding is EXPLICIT");
    }
    if (padding == "EXPLICIT") {
      if (explicit_pads.size() != 8) {
        return ShapeError("explicit_paddings must have 8 entries, two per dimension, but has %d",
                          explicit_pads.size());
      }
      for (int64_t p : explicit_pads) {
        if (p < 0) return ShapeError("explicit_paddings must be non-negative, got %d", p);
      }
      if (explicit_pads[2 * l.batch] + explicit_pads[2 * l.batch + 1] +
              explicit_pads[2 * l.channels] + explicit_pads[2 * l.channels + 1] != 0) {
        return ShapeError("Padding the batch or channel dimension is not supported");
      }
      pads = std::move(explicit_pads);
    }
  }
  std::array<int64_t, 2> out;
  const std::array<int, 2> dims = {l.height, l.width};
  for (int i = 0; i < 2; ++i) {
    ASSIGN_OR_RETURN(out[i], WindowedOutputSize(input.dim_size(dims[i]), window[i], dilations[i],
                                                strides[i], padding, pads[2 * dims[i]],
                                                pads[2 * dims[i] + 1]));
  }
  return out;
}

absl::Status Conv2DShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(ImageLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(PartialTensorShape input, c.WithRank(c.input(0), 4, 0));
  ASSIGN_OR_RETURN(PartialTensorShape filter, c.WithRank(c.input(1), 4, 1));
  const int64_t in_depth = input.dim_size(l.channels);
  const int64_t filter_depth = filter.dim_size(2);
  // A filter shallower than the input convolves channel groups.
  if (in_depth >= 0 && filter_depth > 0 && in_depth % filter_depth != 0) {
    return ShapeError("Depth of input (%d) is not a multiple of input depth of filter (%d)",
                      in_depth, filter_depth);
  }
  ASSIGN_OR_RETURN(auto out, SpatialOutputSizes(c, l, input,
                                                {filter.dim_size(0), filter.dim_size(1)}, true));
  ASSIGN_OR_RETURN(PartialTensorShape shape,
                   ImageShape(l, input.dim_size(l.batch), out[0], out[1], filter.dim_size(3)));
  c.set_output(0, std::move(shape));
  return absl::OkStatus();
}

// The result is the known value of input_sizes; its channels must match
// the filter's, as must out_backprop's.
absl::Status Conv2DBackpropInputShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(ImageLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(PartialTensorShape sizes, c.MakeShapeFromShapeTensor(0));
  ASSIGN_OR_RETURN(PartialTensorShape out, c.WithRank(sizes, 4, 0));
  ASSIGN_OR_RETURN(PartialTensorShape filter, c.WithRank(c.input(1), 4, 1));
  ASSIGN_OR_RETURN(PartialTensorShape backprop, c.WithRank(c.input(2), 4, 2));
  RETURN_IF_ERROR(ExpectSameDim(backprop.dim_size(l.channels), filter.dim_size(3),
                                "out_backprop channels and filter output channels"));
  RETURN_IF_ERROR(ExpectSameDim(out.dim_size(l.batch), backprop.dim_size(l.batch),
                                "input_sizes batch and out_backprop batch"));
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

// The result is the known value of filter_sizes.
absl::Status Conv2DBackpropFilterShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(ImageLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(PartialTensorShape input, c.WithRank(c.input(0), 4, 0));
  ASSIGN_OR_RETURN(PartialTensorShape sizes, c.MakeShapeFromShapeTensor(1));
  ASSIGN_OR_RETURN(PartialTensorShape out, c.WithRank(sizes, 4, 1));
  ASSIGN_OR_RETURN(PartialTensorShape backprop, c.WithRank(c.input(2), 4, 2));
  RETURN_IF_ERROR(ExpectSameDim(backprop.dim_size(l.channels), out.dim_size(3),
                                "out_backprop channels and filter_sizes output channels"));
  RETURN_IF_ERROR(ExpectSameDim(input.dim_size(l.batch), backprop.dim_size(l.batch),
                                "input batch and out_backprop batch"));
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

// DepthwiseConv2dNative: each input channel convolved with its own
// `channel_multiplier` filters (the filter is [h, w, in_channels,
// channel_multiplier]), in_channels * channel_multiplier out.
absl::Status DepthwiseConv2dShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(ImageLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(PartialTensorShape input, c.WithRank(c.input(0), 4, 0));
  ASSIGN_OR_RETURN(PartialTensorShape filter, c.WithRank(c.input(1), 4, 1));
  ASSIGN_OR_RETURN(const int64_t in_depth,
                   c.MergeDim(input.dim_size(l.channels), filter.dim_size(2)));
  ASSIGN_OR_RETURN(auto out, SpatialOutputSizes(c, l, input,
                                                {filter.dim_size(0), filter.dim_size(1)}, true));
  const int64_t multiplier = filter.dim_size(3);
  const int64_t depth = in_depth >= 0 && multiplier >= 0 ? in_depth * multiplier : -1;
  ASSIGN_OR_RETURN(PartialTensorShape shape,
                   ImageShape(l, input.dim_size(l.batch), out[0], out[1], depth));
  c.set_output(0, std::move(shape));
  return absl::OkStatus();
}

// Its backprops: the known value of input_sizes (filter_sizes), rank 4.
absl::Status DepthwiseBackpropShape(InferenceContext& c) {
  const int sizes = c.node().op() == "DepthwiseConv2dNativeBackpropInput" ? 0 : 1;
  ASSIGN_OR_RETURN(PartialTensorShape value, c.MakeShapeFromShapeTensor(sizes));
  ASSIGN_OR_RETURN(PartialTensorShape out, c.WithRank(value, 4, sizes));
  RETURN_IF_ERROR(c.WithRank(c.input(2), 4, 2).status());
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

absl::Status PoolShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(ImageLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(std::string format, c.GetStringAttr("data_format"));
  const bool vect_c = format == "NCHW_VECT_C";
  ASSIGN_OR_RETURN(PartialTensorShape input, c.WithRank(c.input(0), vect_c ? 5 : 4, 0));
  ASSIGN_OR_RETURN(auto ksize, SpatialPair(c, "ksize", l));
  ASSIGN_OR_RETURN(auto out, SpatialOutputSizes(c, l, input, ksize, false));
  ASSIGN_OR_RETURN(PartialTensorShape shape, ImageShape(l, input.dim_size(l.batch), out[0], out[1],
                                                        input.dim_size(l.channels)));
  if (!vect_c) {
    c.set_output(0, std::move(shape));
    return absl::OkStatus();
  }
  std::vector<int64_t> dims(shape.dim_sizes().begin(), shape.dim_sizes().end());
  dims.push_back(input.dim_size(4));
  return c.SetOutputDims(0, dims);
}

// The gradient has orig_input's shape; grad has orig_output's.
absl::Status MaxPoolGradShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape orig_input, c.WithRank(c.input(0), 4, 0));
  ASSIGN_OR_RETURN(PartialTensorShape orig_output, c.WithRank(c.input(1), 4, 1));
  RETURN_IF_ERROR(c.Merge(orig_output, c.input(2)).status());
  c.set_output(0, std::move(orig_input));
  return absl::OkStatus();
}

// The channel dimension BiasAdd adds along: the last for NHWC, 1 for NCHW
// (which needs rank >= 3). -1 when the rank is unknown.
absl::StatusOr<int> BiasChannelDim(InferenceContext& c, const PartialTensorShape& value) {
  ASSIGN_OR_RETURN(std::string format, c.GetStringAttr("data_format"));
  const bool nchw = format == "NCHW";
  RETURN_IF_ERROR(c.WithRankAtLeast(value, nchw ? 3 : 2, 0).status());
  if (value.unknown_rank()) return -1;
  return nchw ? 1 : value.dims() - 1;
}

absl::Status BiasAddShape(InferenceContext& c) {
  const PartialTensorShape& value = c.input(0);
  ASSIGN_OR_RETURN(int channel, BiasChannelDim(c, value));
  ASSIGN_OR_RETURN(PartialTensorShape bias, c.WithRank(c.input(1), 1, 1));
  if (channel < 0) {
    c.set_output(0, value);
    return absl::OkStatus();
  }
  std::vector<int64_t> dims(value.dim_sizes().begin(), value.dim_sizes().end());
  if (absl::Status s = ExpectSameDim(dims[channel], bias.dim_size(0), "bias length and channels");
      !s.ok()) {
    return ShapeError("%s: bias %s, value %s with channels in dimension %d", s.message(),
                      bias.DebugString(), value.DebugString(), channel);
  }
  if (dims[channel] < 0) dims[channel] = bias.dim_size(0);
  return c.SetOutputDims(0, dims);
}

absl::Status BiasAddGradShape(InferenceContext& c) {
  const PartialTensorShape& backprop = c.input(0);
  ASSIGN_OR_RETURN(int channel, BiasChannelDim(c, backprop));
  c.set_output(0, PartialTensorShape({channel < 0 ? -1 : backprop.dim_size(channel)}));
  return absl::OkStatus();
}

absl::Status SoftmaxShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape logits, c.WithRankAtLeast(c.input(0), 1, 0));
  c.set_output(0, std::move(logits));
  return absl::OkStatus();
}

// logits [batch, classes]; labels the same, or broadcastable to it.
absl::Status SoftmaxCrossEntropyShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape logits, c.WithRank(c.input(0), 2, 0));
  ASSIGN_OR_RETURN(PartialTensorShape labels, c.WithRankAtMost(c.input(1), 2, 1));
  absl::StatusOr<PartialTensorShape> both = c.Broadcast(logits, labels);
  if (!both.ok()) {
    return ShapeError("logits and labels must be broadcastable: logits_size=%s labels_size=%s",
                      logits.DebugString(), labels.DebugString());
  }
  ASSIGN_OR_RETURN(PartialTensorShape backprop, c.WithRank(*both, 2));
  c.set_output(0, PartialTensorShape({backprop.dim_size(0)}));
  c.set_output(1, std::move(backprop));
  return absl::OkStatus();
}

// logits [batch, classes]; labels [batch] of class indices.
absl::Status SparseSoftmaxCrossEntropyShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape logits, c.WithRank(c.input(0), 2, 0));
  ASSIGN_OR_RETURN(PartialTensorShape labels, c.WithRank(c.input(1), 1, 1));
  if (logits.dim_size(0) >= 0 && labels.dim_size(0) >= 0 &&
      logits.dim_size(0) != labels.dim_size(0)) {
    return ShapeError("logits and labels must have the same first dimension, got logits shape %s "
                      "and labels shape %s",
                      logits.DebugString(), labels.DebugString());
  }
  const int64_t batch = logits.dim_size(0) >= 0 ? logits.dim_size(0) : labels.dim_size(0);
  c.set_output(0, PartialTensorShape({batch}));
  // The batch may come from labels, so the pair is checked.
  return c.SetOutputDims(1, {batch, logits.dim_size(1)});
}

// TopKV2: the input's shape with its last dimension k, for both outputs.
absl::Status TopKShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const PartialTensorShape input, c.WithRankAtLeast(c.input(0), 1, 0));
  RETURN_IF_ERROR(c.WithRank(c.input(1), 0, 1).status());
  ASSIGN_OR_RETURN(const std::optional<int64_t> k, shape_util::KnownScalar(c, 1, "TopKV2: k"));
  PartialTensorShape out = input;
  if (!input.unknown_rank()) {
    const int64_t length = input.dim_size(input.dims() - 1);
    if (k.has_value() && (*k < 0 || (length >= 0 && *k > length))) {
      return ShapeError("TopKV2: k = %d is not in [0, %d], the length of input's last dimension",
                        *k, length);
    }
    ASSIGN_OR_RETURN(out, shape_util::WithDim(input, input.dims() - 1, k.value_or(-1)));
  }
  c.set_output(0, out);
  c.set_output(1, out);
  return absl::OkStatus();
}

// TensorFlow's DepthwiseConv2dNative family: Conv2D's attrs without
// use_cudnn_on_gpu.
OpDefBuilder DepthwiseAttrs(OpDefBuilder op) {
  return op.Attr(kFloatTypes).Attr("strides: list(int)").Attr(kConvPadding)
      .Attr(kExplicitPaddings).Attr(kDataFormat).Attr("dilations: list(int) = [1, 1, 1, 1]");
}

OpDefBuilder Conv2DAttrs(OpDefBuilder op, std::string types) {
  return op.Attr(std::move(types)).Attr("strides: list(int)")
      .Attr("use_cudnn_on_gpu: bool = true").Attr(kConvPadding).Attr(kExplicitPaddings)
      .Attr(kDataFormat).Attr("dilations: list(int) = [1, 1, 1, 1]");
}

}  // namespace

void RegisterNnOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Relu").Input("features: T").Output("activations: T")
            .Attr("T: {float, double, int32, uint8, int16, int8, int64, bfloat16, uint16, half, "
                  "uint32, uint64, qint8}")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("Relu6").Input("features: T").Output("activations: T")
            .Attr("T: realnumbertype").SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("L2Loss").Input("t: T").Output("output: T").Attr(kFloatTypes)
            .SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("ReluGrad").Input("gradients: T").Input("features: T")
            .Output("backprops: T").Attr("T: realnumbertype")
            .SetShapeFn(shape_fn::MergeAllInputs));
  r.Add(OpDefBuilder("Elu").Input("features: T").Output("activations: T").Attr(kFloatTypes)
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("EluGrad").Input("gradients: T").Input("outputs: T")
            .Output("backprops: T").Attr(kFloatTypes).SetShapeFn(shape_fn::MergeAllInputs));
  r.Add(OpDefBuilder("LeakyRelu").Input("features: T").Output("activations: T")
            .Attr("alpha: float = 0.2").Attr("T: {half, bfloat16, float, double} = DT_FLOAT")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("LeakyReluGrad").Input("gradients: T").Input("features: T")
            .Output("backprops: T").Attr("alpha: float = 0.2")
            .Attr("T: {half, bfloat16, float, double} = DT_FLOAT")
            .SetShapeFn(shape_fn::MergeAllInputs));
  r.Add(OpDefBuilder("Softmax").Input("logits: T").Output("softmax: T").Attr(kFloatTypes)
            .SetShapeFn(SoftmaxShape));
  r.Add(OpDefBuilder("LogSoftmax").Input("logits: T").Output("logsoftmax: T").Attr(kFloatTypes)
            .SetShapeFn(SoftmaxShape));
  r.Add(OpDefBuilder("SoftmaxCrossEntropyWithLogits").Input("features: T").Input("labels: T")
            .Output("loss: T").Output("backprop: T").Attr(kFloatTypes)
            .SetShapeFn(SoftmaxCrossEntropyShape));
  r.Add(OpDefBuilder("SparseSoftmaxCrossEntropyWithLogits").Input("features: T")
            .Input("labels: Tlabels").Output("loss: T").Output("backprop: T").Attr(kFloatTypes)
            .Attr("Tlabels: {int32, int64} = DT_INT64")
            .SetShapeFn(SparseSoftmaxCrossEntropyShape));

  r.Add(OpDefBuilder("TopKV2").Input("input: T").Input("k: int32").Output("values: T")
            .Output("indices: int32").Attr("sorted: bool = true").Attr("T: realnumbertype")
            .SetShapeFn(TopKShape));

  r.Add(OpDefBuilder("BiasAdd").Input("value: T").Input("bias: T").Output("output: T")
            .Attr("T: numbertype").Attr(kDataFormat).SetShapeFn(BiasAddShape));
  r.Add(OpDefBuilder("BiasAddGrad").Input("out_backprop: T").Output("output: T")
            .Attr("T: numbertype").Attr(kDataFormat).SetShapeFn(BiasAddGradShape));

  r.Add(Conv2DAttrs(OpDefBuilder("Conv2D").Input("input: T").Input("filter: T")
                        .Output("output: T"),
                    "T: {half, bfloat16, float, double, int32}")
            .SetShapeFn(Conv2DShape));
  r.Add(Conv2DAttrs(OpDefBuilder("Conv2DBackpropInput").Input("input_sizes: int32")
                        .Input("filter: T").Input("out_backprop: T").Output("output: T"),
                    "T: {half, bfloat16, float, double, int32}")
            .SetShapeFn(Conv2DBackpropInputShape));
  r.Add(Conv2DAttrs(OpDefBuilder("Conv2DBackpropFilter").Input("input: T")
                        .Input("filter_sizes: int32").Input("out_backprop: T")
                        .Output("output: T"),
                    kFloatTypes)
            .SetShapeFn(Conv2DBackpropFilterShape));
  r.Add(DepthwiseAttrs(OpDefBuilder("DepthwiseConv2dNative").Input("input: T")
                           .Input("filter: T").Output("output: T"))
            .SetShapeFn(DepthwiseConv2dShape));
  r.Add(DepthwiseAttrs(OpDefBuilder("DepthwiseConv2dNativeBackpropInput")
                           .Input("input_sizes: int32").Input("filter: T")
                           .Input("out_backprop: T").Output("output: T"))
            .SetShapeFn(DepthwiseBackpropShape));
  r.Add(DepthwiseAttrs(OpDefBuilder("DepthwiseConv2dNativeBackpropFilter").Input("input: T")
                           .Input("filter_sizes: int32").Input("out_backprop: T")
                           .Output("output: T"))
            .SetShapeFn(DepthwiseBackpropShape));

  r.Add(OpDefBuilder("MaxPool").Input("input: T").Output("output: T")
            .Attr("T: {half, bfloat16, float, double, int32, int64, uint8, int16, int8, uint16, "
                  "qint8} = DT_FLOAT")
            .Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4").Attr(kConvPadding)
            .Attr(kExplicitPaddings).Attr("data_format: {'NHWC', 'NCHW', 'NCHW_VECT_C'} = 'NHWC'")
            .SetShapeFn(PoolShape));
  r.Add(OpDefBuilder("MaxPoolGrad").Input("orig_input: T").Input("orig_output: T")
            .Input("grad: T").Output("output: T").Attr("ksize: list(int) >= 4")
            .Attr("strides: list(int) >= 4").Attr(kConvPadding).Attr(kExplicitPaddings)
            .Attr(kDataFormat).Attr("T: realnumbertype = DT_FLOAT")
            .SetShapeFn(MaxPoolGradShape));
  r.Add(OpDefBuilder("AvgPool").Input("value: T").Output("output: T")
            .Attr("ksize: list(int) >= 4").Attr("strides: list(int) >= 4")
            .Attr("padding: {'SAME', 'VALID'}").Attr(kDataFormat).Attr(kFloatTypes)
            .SetShapeFn(PoolShape));
}

}  // namespace rill
