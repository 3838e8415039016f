// CPU DepthwiseConv2dNative and its two backprops, NHWC or NCHW: output
// channel k * M + m convolves input channel k with filter[:, :, k, m].
// The window geometry is Conv2D's (conv_geometry.h); the arithmetic is
// plain loops over the taps, one shard of output rows, images or channels
// per thread so that no two threads write one element.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/nhwc_node.h"
#include "kernels/common/window_geometry.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using window::WindowAttrs;

// The node's data format and its window attrs in NHWC order.
struct DepthwiseAttrs {
  bool nchw = false;
  WindowAttrs window;
};

// `s` with `op` and `context` around its message, for the shared geometry
// helpers, whose messages name neither.
absl::Status WithContext(const std::string& op, const absl::Status& s,
                         const std::string& context = "") {
  if (s.ok()) return s;
  return absl::Status(s.code(), absl::StrCat(op, ": ", s.message(), context));
}

absl::StatusOr<DepthwiseAttrs> ReadAttrs(const NodeDef& def) {
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(def, "data_format"));
  if (format != "NHWC" && format != "NCHW") {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s supports the NHWC and NCHW data formats, not %s", def.op(), format));
  }
  DepthwiseAttrs attrs;
  attrs.nchw = format == "NCHW";
  // TensorFlow rejects these as invalid arguments, where the shared reader
  // below would call them unimplemented.
  const int channel = attrs.nchw ? 1 : 3;
  for (const char* name : {"strides", "dilations"}) {
    ASSIGN_OR_RETURN(std::vector<int64_t> v, GetIntListAttr(def, name));
    if (v.size() == 4 && (v[0] != 1 || v[channel] != 1)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s does not support %s along the batch or depth dimension: %s = [%s] "
                          "in data format %s",
                          def.op(), name, name, absl::StrJoin(v, ", "), format));
    }
  }
  absl::StatusOr<WindowAttrs> window =
      window::ReadWindowAttrs(attrs.nchw ? window::AsNhwcNode(def) : def, /*dilated=*/true);
  RETURN_IF_ERROR(WithContext(def.op(), window.status()));
  attrs.window = *window;
  return attrs;
}

// Element strides of an image batch in the node's layout.
struct ImageStrides {
  int64_t n, h, w, c;
};

ImageStrides StridesOf(bool nchw, int64_t rows, int64_t cols, int64_t channels) {
  if (nchw) return {channels * rows * cols, cols, 1, rows * cols};
  return {rows * cols * channels, cols * channels, channels, 1};
}

// Sizes of one depthwise convolution: `conv` is Conv2D's NHWC geometry of
// the same input and filter, whose out_depth is the channel multiplier.
struct Geometry {
  conv::ConvGeometry conv;
  bool nchw = false;

  int64_t multiplier() const { return conv.out_depth; }
  int64_t out_channels() const { return conv.depth * conv.out_depth; }
  // Output rows, one per image and output row of it: the unit of work.
  int64_t output_rows() const { return conv.batch * conv.rows.output; }
  TensorShape Image(int64_t rows, int64_t cols, int64_t channels) const {
    return nchw ? TensorShape({conv.batch, channels, rows, cols})
                : TensorShape({conv.batch, rows, cols, channels});
  }
  TensorShape output_shape() const {
    return Image(conv.rows.output, conv.cols.output, out_channels());
  }
  ImageStrides input_strides() const {
    return StridesOf(nchw, conv.rows.input, conv.cols.input, conv.depth);
  }
  ImageStrides output_strides() const {
    return StridesOf(nchw, conv.rows.output, conv.cols.output, out_channels());
  }
};

// The geometry of `input` (named `input_name` in messages) convolved with
// `filter`, or INVALID_ARGUMENT naming the op and both shapes.
absl::StatusOr<Geometry> ComputeGeometry(const std::string& op, const DepthwiseAttrs& attrs,
                                         const TensorShape& input, const char* input_name,
                                         const TensorShape& filter) {
  const std::string shapes =
      absl::StrFormat(" (%s shape %s, filter shape %s, data format %s)", input_name,
                      input.DebugString(), filter.DebugString(), attrs.nchw ? "NCHW" : "NHWC");
  if (input.dims() != 4 || filter.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrCat(op, ": ", input_name, " and filter must be 4-dimensional", shapes));
  }
  const int64_t depth = input.dim_size(attrs.nchw ? 1 : 3);
  if (depth != filter.dim_size(2)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s depth %d must equal the filter's in_channels %d%s", op, input_name,
                        depth, filter.dim_size(2), shapes));
  }
  const TensorShape nhwc =
      attrs.nchw ? TensorShape({input.dim_size(0), input.dim_size(2), input.dim_size(3), depth})
                 : input;
  absl::StatusOr<conv::ConvGeometry> g = conv::ComputeGeometry(attrs.window, nhwc, filter);
  RETURN_IF_ERROR(WithContext(op, g.status(), shapes));
  const Geometry geometry{*g, attrs.nchw};
  // in_channels * multiplier may be too large to count, unlike the
  // multiplier alone that conv::ComputeGeometry checked.
  RETURN_IF_ERROR(WithContext(
      op,
      TensorShape::Create({g->batch, g->rows.output, g->cols.output, g->depth, g->out_depth})
          .status(),
      shapes));
  return geometry;
}

absl::Status CheckOutBackprop(const std::string& op, const Geometry& g, const TensorShape& input,
                              const TensorShape& filter, const TensorShape& out_backprop) {
  if (out_backprop != g.output_shape()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: out_backprop must have the convolution's output shape %s, got %s (input shape %s, "
        "filter shape %s)",
        op, g.output_shape().DebugString(), out_backprop.DebugString(), input.DebugString(),
        filter.DebugString()));
  }
  return absl::OkStatus();
}

// Calls fn(output_at, input_at, filter_at) for every in-bounds tap of the
// output rows [begin, end): the offsets of an output position, of the
// input position its tap reads and of the tap's filter entries, each at
// channel 0.
template <typename Fn>
void ForEachTap(const Geometry& g, int64_t begin, int64_t end, Fn&& fn) {
  const ImageStrides in = g.input_strides();
  const ImageStrides out = g.output_strides();
  const window::DimWindow& rows = g.conv.rows;
  const window::DimWindow& cols = g.conv.cols;
  for (int64_t r = begin; r < end; ++r) {
    const int64_t n = r / rows.output;
    const int64_t oh = r % rows.output;
    for (int64_t ow = 0; ow < cols.output; ++ow) {
      const int64_t output_at = n * out.n + oh * out.h + ow * out.w;
      for (int64_t kr = 0; kr < rows.window; ++kr) {
        const int64_t ih = oh * rows.stride - rows.pad_before + kr * rows.dilation;
        if (ih < 0 || ih >= rows.input) continue;
        for (int64_t kc = 0; kc < cols.window; ++kc) {
          const int64_t iw = ow * cols.stride - cols.pad_before + kc * cols.dilation;
          if (iw < 0 || iw >= cols.input) continue;
          fn(output_at, n * in.n + ih * in.h + iw * in.w,
             (kr * cols.window + kc) * g.out_channels());
        }
      }
    }
  }
}

// The cost of one output row's products, for sharding.
Eigen::TensorOpCost RowCost(const Geometry& g, int64_t element_size) {
  const double taps = static_cast<double>(g.conv.cols.output) * g.conv.rows.window *
                      g.conv.cols.window * g.out_channels();
  return Eigen::TensorOpCost(2 * taps * element_size, taps * element_size, 2 * taps);
}

enum class DepthwiseOp { kForward, kBackpropInput, kBackpropFilter };

template <typename T, DepthwiseOp kOp>
class DepthwiseConvCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(DepthwiseAttrs attrs, ReadAttrs(c.def()));
    return std::unique_ptr<OpKernel>(new DepthwiseConvCpu(c, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    if constexpr (kOp == DepthwiseOp::kForward) {
      return Forward(ctx);
    } else if constexpr (kOp == DepthwiseOp::kBackpropInput) {
      return BackpropInput(ctx);
    } else {
      return BackpropFilter(ctx);
    }
  }

 private:
  DepthwiseConvCpu(const OpKernelConstruction& c, DepthwiseAttrs attrs)
      : OpKernel(c), attrs_(attrs) {}

  absl::Status Forward(KernelContext& ctx) const {
    const Tensor& input = ctx.input(0);
    const Tensor& filter = ctx.input(1);
    ASSIGN_OR_RETURN(Geometry g,
                     ComputeGeometry(op(), attrs_, input.shape(), "input", filter.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.output_shape()));
    T* y = out->data<T>();
    std::fill_n(y, out->NumElements(), T(0));
    if (out->NumElements() == 0) return absl::OkStatus();
    const T* x = input.data<T>();
    const T* f = filter.data<T>();
    const int64_t depth = g.conv.depth;
    const int64_t mult = g.multiplier();
    const int64_t in_c = g.input_strides().c;
    const int64_t out_c = g.output_strides().c;
    ctx.eigen_cpu().parallelFor(
        g.output_rows(), RowCost(g, sizeof(T)), [&](Eigen::Index begin, Eigen::Index end) {
          ForEachTap(g, begin, end, [&](int64_t output_at, int64_t input_at, int64_t filter_at) {
            for (int64_t k = 0; k < depth; ++k) {
              const T value = x[input_at + k * in_c];
              for (int64_t m = 0; m < mult; ++m) {
                y[output_at + (k * mult + m) * out_c] += value * f[filter_at + k * mult + m];
              }
            }
          });
        });
    return absl::OkStatus();
  }

  absl::Status BackpropInput(KernelContext& ctx) const {
    absl::StatusOr<TensorShape> input_shape = conv::ShapeFromInput(ctx.input(0), "input_sizes");
    RETURN_IF_ERROR(WithContext(op(), input_shape.status()));
    const Tensor& filter = ctx.input(1);
    const Tensor& out_backprop = ctx.input(2);
    ASSIGN_OR_RETURN(Geometry g,
                     ComputeGeometry(op(), attrs_, *input_shape, "input_sizes", filter.shape()));
    RETURN_IF_ERROR(CheckOutBackprop(op(), g, *input_shape, filter.shape(), out_backprop.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, *input_shape));
    T* dx = out->data<T>();
    std::fill_n(dx, out->NumElements(), T(0));
    if (out->NumElements() == 0 || out_backprop.NumElements() == 0) return absl::OkStatus();
    const T* dy = out_backprop.data<T>();
    const T* f = filter.data<T>();
    const int64_t depth = g.conv.depth;
    const int64_t mult = g.multiplier();
    const int64_t in_c = g.input_strides().c;
    const int64_t out_c = g.output_strides().c;
    // Taps of one image write only that image's gradient.
    const int64_t rows_per_image = g.conv.rows.output;
    Eigen::TensorOpCost cost = RowCost(g, sizeof(T)) * static_cast<double>(rows_per_image);
    ctx.eigen_cpu().parallelFor(g.conv.batch, cost, [&](Eigen::Index begin, Eigen::Index end) {
      ForEachTap(g, begin * rows_per_image, end * rows_per_image,
                 [&](int64_t output_at, int64_t input_at, int64_t filter_at) {
                   for (int64_t k = 0; k < depth; ++k) {
                     T sum = T(0);
                     for (int64_t m = 0; m < mult; ++m) {
                       sum += dy[output_at + (k * mult + m) * out_c] * f[filter_at + k * mult + m];
                     }
                     dx[input_at + k * in_c] += sum;
                   }
                 });
    });
    return absl::OkStatus();
  }

  absl::Status BackpropFilter(KernelContext& ctx) const {
    const Tensor& input = ctx.input(0);
    absl::StatusOr<TensorShape> filter_shape = conv::ShapeFromInput(ctx.input(1), "filter_sizes");
    RETURN_IF_ERROR(WithContext(op(), filter_shape.status()));
    const Tensor& out_backprop = ctx.input(2);
    ASSIGN_OR_RETURN(Geometry g,
                     ComputeGeometry(op(), attrs_, input.shape(), "input", *filter_shape));
    RETURN_IF_ERROR(CheckOutBackprop(op(), g, input.shape(), *filter_shape, out_backprop.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, *filter_shape));
    T* df = out->data<T>();
    // A sum over the batch's output positions: 0 when there are none.
    std::fill_n(df, out->NumElements(), T(0));
    if (out->NumElements() == 0 || out_backprop.NumElements() == 0) return absl::OkStatus();
    const T* x = input.data<T>();
    const T* dy = out_backprop.data<T>();
    const int64_t mult = g.multiplier();
    const int64_t in_c = g.input_strides().c;
    const int64_t out_c = g.output_strides().c;
    // Each shard owns a range of input channels and their filter entries,
    // and visits every output position for them.
    const int64_t rows = g.output_rows();
    Eigen::TensorOpCost cost =
        RowCost(g, sizeof(T)) * (static_cast<double>(rows) / static_cast<double>(g.conv.depth));
    ctx.eigen_cpu().parallelFor(g.conv.depth, cost, [&](Eigen::Index begin, Eigen::Index end) {
      ForEachTap(g, 0, rows, [&](int64_t output_at, int64_t input_at, int64_t filter_at) {
        for (int64_t k = begin; k < end; ++k) {
          const T value = x[input_at + k * in_c];
          for (int64_t m = 0; m < mult; ++m) {
            df[filter_at + k * mult + m] += value * dy[output_at + (k * mult + m) * out_c];
          }
        }
      });
    });
    return absl::OkStatus();
  }

  const DepthwiseAttrs attrs_;
};

template <DepthwiseOp kOp, typename... Ts>
void RegisterDepthwise(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceCpu).TypeConstraint<Ts>("T"),
              &DepthwiseConvCpu<Ts, kOp>::Create),
   ...);
}

}  // namespace

void RegisterCpuDepthwiseConvKernels(KernelRegistry& registry) {
  RegisterDepthwise<DepthwiseOp::kForward, float, double>(registry, "DepthwiseConv2dNative");
  RegisterDepthwise<DepthwiseOp::kBackpropInput, float, double>(
      registry, "DepthwiseConv2dNativeBackpropInput");
  RegisterDepthwise<DepthwiseOp::kBackpropFilter, float, double>(
      registry, "DepthwiseConv2dNativeBackpropFilter");
}

}  // namespace rill
