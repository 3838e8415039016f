// Fused batch normalization: FusedBatchNorm, V2 and V3 (what Keras's
// BatchNormalization layer emits) and their gradient ops, as TensorFlow's.
#include <cstdint>
#include <string>
#include <vector>

#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

namespace rill {
namespace {

constexpr char kDataFormat2D[] = "data_format: {'NHWC', 'NCHW'} = 'NHWC'";
constexpr char kDataFormat2D3D[] = "data_format: {'NHWC', 'NCHW', 'NDHWC', 'NCDHW'} = 'NHWC'";

// The rank of x and the index of its channel dimension under data_format.
struct BatchNormLayout {
  int rank;
  int channels;
};

absl::StatusOr<BatchNormLayout> LayoutOf(const InferenceContext& c) {
  const absl::StatusOr<std::string> format = c.GetStringAttr("data_format");
  if (!format.ok()) return format.status();
  if (*format == "NHWC") return BatchNormLayout{4, 3};
  if (*format == "NCHW") return BatchNormLayout{4, 1};
  if (*format == "NDHWC") return BatchNormLayout{5, 4};
  if (*format == "NCDHW") return BatchNormLayout{5, 1};
  return ShapeError("%s: invalid data_format '%s'", c.node().op(), *format);
}

// Merges input i, a vector, into the channel count; the error names it.
absl::Status MergeChannelVector(const InferenceContext& c, int i, int64_t* channels) {
  ASSIGN_OR_RETURN(const PartialTensorShape vec, c.WithRank(c.input(i), 1, i));
  const int64_t size = vec.dim_size(0);
  if (*channels >= 0 && size >= 0 && *channels != size) {
    return ShapeError("%s: %s has %d elements but x has %d channels", c.node().op(),
                      c.op_def().input_arg(i).name(), size, *channels);
  }
  if (*channels < 0) *channels = size;
  return absl::OkStatus();
}

// y has x's shape (its channels merged with scale's and offset's, and with
// mean's and variance's when they are read); the per-channel outputs are
// [C]. Mean and variance may be empty in training without a running average.
absl::Status FusedBatchNormShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const BatchNormLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(PartialTensorShape x, c.WithRank(c.input(0), l.rank, 0));
  ASSIGN_OR_RETURN(const bool is_training, c.GetBoolAttr("is_training"));
  float factor = 1.0f;
  if (c.node().attr().count("exponential_avg_factor") > 0) {
    ASSIGN_OR_RETURN(factor, c.GetFloatAttr("exponential_avg_factor"));
  }
  const int vectors = is_training && factor == 1.0f ? 3 : 5;
  int64_t channels = x.dim_size(l.channels);
  for (int i = 1; i < vectors; ++i) RETURN_IF_ERROR(MergeChannelVector(c, i, &channels));
  std::vector<int64_t> dims(x.dims());
  for (int d = 0; d < x.dims(); ++d) dims[d] = x.dim_size(d);
  dims[l.channels] = channels;
  RETURN_IF_ERROR(c.SetOutputDims(0, dims));
  for (int i = 1; i <= 4; ++i) RETURN_IF_ERROR(c.SetOutputDims(i, {channels}));
  // reserve_space_3 is device-specific scratch: TensorFlow leaves it unknown.
  if (c.num_outputs() > 5) c.set_output(5, PartialTensorShape());
  return absl::OkStatus();
}

// x_backprop has x's shape; scale_backprop and offset_backprop are [C]; the
// two placeholders are empty vectors.
absl::Status FusedBatchNormGradShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(const BatchNormLayout l, LayoutOf(c));
  ASSIGN_OR_RETURN(const PartialTensorShape y_backprop, c.WithRank(c.input(0), l.rank, 0));
  ASSIGN_OR_RETURN(const PartialTensorShape x, c.WithRank(c.input(1), l.rank, 1));
  ASSIGN_OR_RETURN(const PartialTensorShape merged, c.Merge(y_backprop, x));
  int64_t channels = merged.dim_size(l.channels);
  for (int i = 2; i < 5; ++i) RETURN_IF_ERROR(MergeChannelVector(c, i, &channels));
  std::vector<int64_t> dims(merged.dims());
  for (int d = 0; d < merged.dims(); ++d) dims[d] = merged.dim_size(d);
  dims[l.channels] = channels;
  RETURN_IF_ERROR(c.SetOutputDims(0, dims));
  RETURN_IF_ERROR(c.SetOutputDims(1, {channels}));
  RETURN_IF_ERROR(c.SetOutputDims(2, {channels}));
  RETURN_IF_ERROR(c.SetOutputDims(3, {0}));
  return c.SetOutputDims(4, {0});
}

// The five inputs and five outputs shared by the forward ops; `t` and `u`
// are the element types of x and of the per-channel vectors.
OpDefBuilder ForwardOp(const char* name, const char* t, const char* u) {
  return OpDefBuilder(name)
      .Input(std::string("x: ") + t)
      .Input(std::string("scale: ") + u)
      .Input(std::string("offset: ") + u)
      .Input(std::string("mean: ") + u)
      .Input(std::string("variance: ") + u)
      .Output(std::string("y: ") + t)
      .Output(std::string("batch_mean: ") + u)
      .Output(std::string("batch_variance: ") + u)
      .Output(std::string("reserve_space_1: ") + u)
      .Output(std::string("reserve_space_2: ") + u);
}

}  // namespace

void RegisterBatchNormOps(OpRegistry& r) {
  r.Add(ForwardOp("FusedBatchNorm", "T", "T")
            .Attr("T: {float}")
            .Attr("epsilon: float = 0.0001")
            .Attr("exponential_avg_factor: float = 1.0")
            .Attr(kDataFormat2D)
            .Attr("is_training: bool = true")
            .SetShapeFn(FusedBatchNormShape));
  r.Add(ForwardOp("FusedBatchNormV2", "T", "U")
            .Attr("T: {half, bfloat16, float}")
            .Attr("U: {float}")
            .Attr("epsilon: float = 0.0001")
            .Attr("exponential_avg_factor: float = 1.0")
            .Attr(kDataFormat2D)
            .Attr("is_training: bool = true")
            .SetShapeFn(FusedBatchNormShape));
  r.Add(ForwardOp("FusedBatchNormV3", "T", "U")
            .Output("reserve_space_3: U")
            .Attr("T: {half, bfloat16, float}")
            .Attr("U: {bfloat16, float}")
            .Attr("epsilon: float = 0.0001")
            .Attr("exponential_avg_factor: float = 1.0")
            .Attr(kDataFormat2D3D)
            .Attr("is_training: bool = true")
            .SetShapeFn(FusedBatchNormShape));
  r.Add(OpDefBuilder("FusedBatchNormGrad")
            .Input("y_backprop: T")
            .Input("x: T")
            .Input("scale: T")
            .Input("reserve_space_1: T")
            .Input("reserve_space_2: T")
            .Output("x_backprop: T")
            .Output("scale_backprop: T")
            .Output("offset_backprop: T")
            .Output("reserve_space_3: T")
            .Output("reserve_space_4: T")
            .Attr("T: {float}")
            .Attr("epsilon: float = 0.0001")
            .Attr(kDataFormat2D)
            .Attr("is_training: bool = true")
            .SetShapeFn(FusedBatchNormGradShape));
  r.Add(OpDefBuilder("FusedBatchNormGradV2")
            .Input("y_backprop: T")
            .Input("x: T")
            .Input("scale: float")
            .Input("reserve_space_1: U")
            .Input("reserve_space_2: U")
            .Output("x_backprop: T")
            .Output("scale_backprop: U")
            .Output("offset_backprop: U")
            .Output("reserve_space_3: U")
            .Output("reserve_space_4: U")
            .Attr("T: {half, bfloat16, float}")
            .Attr("U: {float}")
            .Attr("epsilon: float = 0.0001")
            .Attr(kDataFormat2D)
            .Attr("is_training: bool = true")
            .SetShapeFn(FusedBatchNormGradShape));
  r.Add(OpDefBuilder("FusedBatchNormGradV3")
            .Input("y_backprop: T")
            .Input("x: T")
            .Input("scale: float")
            .Input("reserve_space_1: U")
            .Input("reserve_space_2: U")
            .Input("reserve_space_3: U")
            .Output("x_backprop: T")
            .Output("scale_backprop: U")
            .Output("offset_backprop: U")
            .Output("reserve_space_4: U")
            .Output("reserve_space_5: U")
            .Attr("T: {half, bfloat16, float}")
            .Attr("U: {float}")
            .Attr("epsilon: float = 0.0001")
            .Attr(kDataFormat2D3D)
            .Attr("is_training: bool = true")
            .SetShapeFn(FusedBatchNormGradShape));
}

}  // namespace rill
