// CPU kernels of ResizeBilinear (NHWC images to a new height and width,
// float out) and ResizeBilinearGrad, with TensorFlow's sampling rules.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

struct ResizeAttrs {
  bool align_corners = false;
  bool half_pixel_centers = false;
};

absl::StatusOr<ResizeAttrs> ReadResizeAttrs(const OpKernelConstruction& c) {
  ResizeAttrs attrs;
  ASSIGN_OR_RETURN(attrs.align_corners, GetBoolAttr(c.def(), "align_corners"));
  ASSIGN_OR_RETURN(attrs.half_pixel_centers, GetBoolAttr(c.def(), "half_pixel_centers"));
  if (attrs.align_corners && attrs.half_pixel_centers) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: if half_pixel_centers is true, align_corners must be false", c.def().op()));
  }
  return attrs;
}

// Where output coordinate i samples an input of size `in`: between `lower`
// and `upper`, `lerp` of the way (TensorFlow's compute_interpolation_weights:
// half-pixel centers sample at (i + 0.5) * scale - 0.5, else at i * scale;
// align_corners maps the corner pixels onto each other).
struct Sample {
  int64_t lower = 0;
  int64_t upper = 0;
  float lerp = 0;
};

std::vector<Sample> Samples(int64_t out, int64_t in, const ResizeAttrs& attrs) {
  const float scale = attrs.align_corners && out > 1
                          ? static_cast<float>(in - 1) / static_cast<float>(out - 1)
                          : static_cast<float>(in) / static_cast<float>(out);
  std::vector<Sample> samples(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float at = attrs.half_pixel_centers ? (static_cast<float>(i) + 0.5f) * scale - 0.5f
                                              : static_cast<float>(i) * scale;
    const float floor = std::floor(at);
    samples[i].lower = std::max(static_cast<int64_t>(floor), int64_t{0});
    samples[i].upper = std::min(static_cast<int64_t>(std::ceil(at)), in - 1);
    samples[i].lerp = at - floor;
  }
  return samples;
}

absl::Status CheckImage(const char* op, const char* what, const Tensor& image) {
  if (image.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be 4-D [batch, height, width, channels], got shape %s", op,
                        what, image.shape().DebugString()));
  }
  if (image.dim_size(1) > std::numeric_limits<int32_t>::max() ||
      image.dim_size(2) > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s is too large: %s", op, what, image.shape().DebugString()));
  }
  return absl::OkStatus();
}

template <typename T>
class ResizeBilinearOp final : public OpKernel {
 public:
  ResizeBilinearOp(const OpKernelConstruction& c, ResizeAttrs attrs) : OpKernel(c), attrs_(attrs) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const ResizeAttrs attrs, ReadResizeAttrs(c));
    return std::unique_ptr<OpKernel>(std::make_unique<ResizeBilinearOp>(c, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& images = ctx.input(0);
    const Tensor& size = ctx.input(1);
    RETURN_IF_ERROR(CheckImage("ResizeBilinear", "images", images));
    if (size.dims() != 1 || size.NumElements() != 2) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ResizeBilinear: size must be a vector of 2 values (height, width), got shape %s",
          size.shape().DebugString()));
    }
    const int64_t out_h = size.data<int32_t>()[0];
    const int64_t out_w = size.data<int32_t>()[1];
    if (out_h <= 0 || out_w <= 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ResizeBilinear: the output size must be positive, got [%d, %d]", out_h, out_w));
    }
    const int64_t batch = images.dim_size(0), in_h = images.dim_size(1), in_w = images.dim_size(2),
                  channels = images.dim_size(3);
    if ((in_h == 0 || in_w == 0) && batch * channels > 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("ResizeBilinear: the input image must have a non-zero size, got shape %s",
                          images.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, {batch, out_h, out_w, channels}));
    if (out->NumElements() == 0) return absl::OkStatus();
    const std::vector<Sample> ys = Samples(out_h, in_h, attrs_);
    const std::vector<Sample> xs = Samples(out_w, in_w, attrs_);
    const T* src = images.data<T>();
    float* dst = out->data<float>();
    const auto at = [&](int64_t b, int64_t y, int64_t x, int64_t c) {
      return static_cast<float>(src[((b * in_h + y) * in_w + x) * channels + c]);
    };
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t y = 0; y < out_h; ++y) {
        const Sample& sy = ys[y];
        for (int64_t x = 0; x < out_w; ++x) {
          const Sample& sx = xs[x];
          for (int64_t c = 0; c < channels; ++c) {
            const float top_left = at(b, sy.lower, sx.lower, c);
            const float top_right = at(b, sy.lower, sx.upper, c);
            const float bottom_left = at(b, sy.upper, sx.lower, c);
            const float bottom_right = at(b, sy.upper, sx.upper, c);
            const float top = top_left + (top_right - top_left) * sx.lerp;
            const float bottom = bottom_left + (bottom_right - bottom_left) * sx.lerp;
            *dst++ = top + (bottom - top) * sy.lerp;
          }
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  const ResizeAttrs attrs_;
};

// Each output gradient goes back to the four pixels its value mixed, in
// the proportions it mixed them.
template <typename T>
class ResizeBilinearGradOp final : public OpKernel {
 public:
  ResizeBilinearGradOp(const OpKernelConstruction& c, ResizeAttrs attrs)
      : OpKernel(c), attrs_(attrs) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const ResizeAttrs attrs, ReadResizeAttrs(c));
    return std::unique_ptr<OpKernel>(std::make_unique<ResizeBilinearGradOp>(c, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& grads = ctx.input(0);
    const Tensor& original = ctx.input(1);
    RETURN_IF_ERROR(CheckImage("ResizeBilinearGrad", "grads", grads));
    RETURN_IF_ERROR(CheckImage("ResizeBilinearGrad", "original_image", original));
    const int64_t batch = original.dim_size(0), in_h = original.dim_size(1),
                  in_w = original.dim_size(2), channels = original.dim_size(3);
    const int64_t out_h = grads.dim_size(1), out_w = grads.dim_size(2);
    if (grads.dim_size(0) != batch || grads.dim_size(3) != channels) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ResizeBilinearGrad: grads %s and original_image %s differ in batch or channels",
          grads.shape().DebugString(), original.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, original.shape()));
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T{});
    if (grads.NumElements() == 0 || out->NumElements() == 0) return absl::OkStatus();
    const std::vector<Sample> ys = Samples(out_h, in_h, attrs_);
    const std::vector<Sample> xs = Samples(out_w, in_w, attrs_);
    const float* g = grads.data<float>();
    const auto add = [&](int64_t b, int64_t y, int64_t x, int64_t c, float v) {
      dst[((b * in_h + y) * in_w + x) * channels + c] += static_cast<T>(v);
    };
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t y = 0; y < out_h; ++y) {
        const Sample& sy = ys[y];
        for (int64_t x = 0; x < out_w; ++x) {
          const Sample& sx = xs[x];
          for (int64_t c = 0; c < channels; ++c) {
            const float top = (1 - sy.lerp) * *g;
            const float bottom = sy.lerp * *g++;
            add(b, sy.lower, sx.lower, c, top * (1 - sx.lerp));
            add(b, sy.lower, sx.upper, c, top * sx.lerp);
            add(b, sy.upper, sx.lower, c, bottom * (1 - sx.lerp));
            add(b, sy.upper, sx.upper, c, bottom * sx.lerp);
          }
        }
      }
    }
    return absl::OkStatus();
  }

 private:
  const ResizeAttrs attrs_;
};

}  // namespace

void RegisterCpuResizeBilinearKernels(KernelRegistry& r) {
  RegisterForTypes<ResizeBilinearOp, float, double, uint8_t, int32_t>(r, kDeviceCpu,
                                                                      "ResizeBilinear");
  RegisterForTypes<ResizeBilinearGradOp, float, double>(r, kDeviceCpu, "ResizeBilinearGrad");
}

}  // namespace rill
