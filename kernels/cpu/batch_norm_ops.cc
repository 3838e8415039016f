// CPU kernels of FusedBatchNorm, V2 and V3 and of their gradient ops, in
// training (batch statistics) and inference (given mean and variance) mode.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// The attrs both directions share, read once when the kernel is built.
struct BatchNormAttrs {
  std::string op;
  float epsilon = 0;
  float exponential_avg_factor = 1;  // Forward ops only.
  bool is_training = true;
  std::string format;
  int rank = 4;     // Of x: 4 for NHWC/NCHW, 5 for NDHWC/NCDHW.
  int channel = 3;  // x's channel dimension.
};

absl::StatusOr<BatchNormAttrs> ReadAttrs(const OpKernelConstruction& c) {
  BatchNormAttrs a;
  a.op = c.def().op();
  ASSIGN_OR_RETURN(a.epsilon, GetFloatAttr(c.def(), "epsilon"));
  if (c.def().attr().count("exponential_avg_factor") > 0) {
    ASSIGN_OR_RETURN(a.exponential_avg_factor, GetFloatAttr(c.def(), "exponential_avg_factor"));
  }
  ASSIGN_OR_RETURN(a.is_training, GetBoolAttr(c.def(), "is_training"));
  ASSIGN_OR_RETURN(a.format, GetStringAttr(c.def(), "data_format"));
  if (a.format == "NHWC" || a.format == "NCHW") {
    a.rank = 4;
  } else if (a.format == "NDHWC" || a.format == "NCDHW") {
    a.rank = 5;
  } else {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: invalid data_format '%s'", a.op, a.format));
  }
  a.channel = a.format[1] == 'C' ? 1 : a.rank - 1;
  return a;
}

// x seen as [outer, channels, inner]: NHWC is [N*H*W, C, 1] and NCHW
// [N, C, H*W], so one loop serves every layout.
struct ChannelView {
  int64_t outer = 1;
  int64_t channels = 0;
  int64_t inner = 1;
  int64_t count() const { return outer * inner; }  // Elements per channel.
};

absl::StatusOr<ChannelView> ViewOf(const BatchNormAttrs& a, const Tensor& x, const char* name) {
  if (x.dims() != a.rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be %d-D for data_format %s, got shape %s", a.op, name, a.rank,
                        a.format, x.shape().DebugString()));
  }
  ChannelView v;
  v.channels = x.dim_size(a.channel);
  for (int d = 0; d < a.channel; ++d) v.outer *= x.dim_size(d);
  for (int d = a.channel + 1; d < a.rank; ++d) v.inner *= x.dim_size(d);
  return v;
}

// A per-channel input must be a vector of `channels` elements.
absl::Status CheckChannelVector(const BatchNormAttrs& a, const Tensor& t, const char* name,
                                int64_t channels, const Tensor& x) {
  if (t.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s must be 1-D, got shape %s", a.op, name, t.shape().DebugString()));
  }
  if (t.dim_size(0) != channels) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s: %s must have one element per channel of x (%d), got shape %s (x has shape %s, "
        "data_format %s)",
        a.op, name, channels, t.shape().DebugString(), x.shape().DebugString(), a.format));
  }
  return absl::OkStatus();
}

// Calls f(flat index, channel) for every element of a [outer, C, inner] view.
template <typename F>
void ForEachElement(const ChannelView& v, F f) {
  int64_t at = 0;
  for (int64_t o = 0; o < v.outer; ++o) {
    for (int64_t c = 0; c < v.channels; ++c) {
      for (int64_t i = 0; i < v.inner; ++i) f(at++, c);
    }
  }
}

void Fill(Tensor* t, float value) {
  float* p = t->data<float>();
  for (int64_t i = 0; i < t->NumElements(); ++i) p[i] = value;
}

// FusedBatchNorm(x, scale, offset, mean, variance) ->
// (y, batch_mean, batch_variance, reserve_space_1, reserve_space_2[, reserve_space_3]).
// Training normalizes with the batch's mean and biased variance, outputs
// the unbiased variance (running averages of both when
// exponential_avg_factor != 1) and keeps the batch mean and biased
// variance in the reserve spaces for the gradient kernel. Inference
// normalizes with the given mean and variance and passes them through.
template <typename T>
class FusedBatchNormCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(BatchNormAttrs attrs, ReadAttrs(c));
    return std::unique_ptr<OpKernel>(new FusedBatchNormCpu(c, std::move(attrs)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const BatchNormAttrs& a = attrs_;
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(const ChannelView v, ViewOf(a, x, "x"));
    RETURN_IF_ERROR(CheckChannelVector(a, ctx.input(1), "scale", v.channels, x));
    RETURN_IF_ERROR(CheckChannelVector(a, ctx.input(2), "offset", v.channels, x));
    // Training without a running average never reads mean and variance,
    // which Keras then feeds empty.
    const bool reads_moments = !a.is_training || a.exponential_avg_factor != 1.0f;
    for (int i : {3, 4}) {
      const char* name = i == 3 ? "mean" : "variance";
      if (reads_moments) {
        RETURN_IF_ERROR(CheckChannelVector(a, ctx.input(i), name, v.channels, x));
      } else if (ctx.input(i).dims() != 1) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "%s: %s must be 1-D, got shape %s", a.op, name, ctx.input(i).shape().DebugString()));
      }
    }
    const TensorShape vec({v.channels});
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    std::vector<Tensor*> outs(5);
    outs[0] = y;
    for (int i = 1; i < 5; ++i) {
      ASSIGN_OR_RETURN(outs[i], ctx.AllocateOutput(i, vec));
    }
    if (ctx.num_outputs() > 5) {
      // V3's reserve_space_3 is cuDNN's workspace; the CPU kernel leaves a
      // zero scalar, as TensorFlow's does.
      ASSIGN_OR_RETURN(Tensor * reserve, ctx.AllocateOutput(5, TensorShape({})));
      Fill(reserve, 0);
    }
    if (x.NumElements() == 0) {
      // No batch to measure: NaN statistics, as TensorFlow.
      for (int i = 1; i < 5; ++i) Fill(outs[i], std::numeric_limits<float>::quiet_NaN());
      return absl::OkStatus();
    }
    const T* xs = x.data<T>();
    const float* scale = ctx.input(1).data<float>();
    const float* offset = ctx.input(2).data<float>();
    const size_t channels = static_cast<size_t>(v.channels);
    std::vector<double> mean(channels), variance(channels);
    if (a.is_training) {
      ForEachElement(v, [&](int64_t at, int64_t c) { mean[c] += xs[at]; });
      const double n = static_cast<double>(v.count());
      for (double& m : mean) m /= n;
      ForEachElement(v, [&](int64_t at, int64_t c) {
        const double d = xs[at] - mean[c];
        variance[c] += d * d;
      });
      for (double& s : variance) s /= n;
    } else {
      for (size_t c = 0; c < channels; ++c) {
        mean[c] = ctx.input(3).data<float>()[c];
        variance[c] = ctx.input(4).data<float>()[c];
      }
    }
    std::vector<double> multiplier(channels);
    for (size_t c = 0; c < channels; ++c) {
      multiplier[c] = scale[c] / std::sqrt(variance[c] + a.epsilon);
    }
    T* ys = y->data<T>();
    ForEachElement(v, [&](int64_t at, int64_t c) {
      ys[at] = static_cast<T>((xs[at] - mean[c]) * multiplier[c] + offset[c]);
    });
    float* batch_mean = outs[1]->data<float>();
    float* batch_variance = outs[2]->data<float>();
    float* saved_mean = outs[3]->data<float>();
    float* saved_variance = outs[4]->data<float>();
    // Bessel's correction for the reported variance, as TensorFlow (a
    // batch of one element is left as is).
    const double n = static_cast<double>(v.count());
    const double bessel = a.is_training ? n / std::max(n - 1, 1.0) : 1.0;
    const double f = a.is_training ? a.exponential_avg_factor : 1.0;
    for (size_t c = 0; c < channels; ++c) {
      double new_mean = mean[c];
      double new_variance = variance[c] * bessel;
      if (f != 1.0) {
        new_mean = (1 - f) * ctx.input(3).data<float>()[c] + f * new_mean;
        new_variance = (1 - f) * ctx.input(4).data<float>()[c] + f * new_variance;
      }
      batch_mean[c] = static_cast<float>(new_mean);
      batch_variance[c] = static_cast<float>(new_variance);
      saved_mean[c] = static_cast<float>(mean[c]);
      saved_variance[c] = static_cast<float>(variance[c]);
    }
    return absl::OkStatus();
  }

 private:
  FusedBatchNormCpu(const OpKernelConstruction& c, BatchNormAttrs attrs)
      : OpKernel(c), attrs_(std::move(attrs)) {}
  const BatchNormAttrs attrs_;
};

// FusedBatchNormGrad(y_backprop, x, scale, reserve_space_1, reserve_space_2
// [, reserve_space_3]) -> (x_backprop, scale_backprop, offset_backprop, two
// empty placeholders). In training the reserve spaces hold the batch mean
// and biased variance the forward kernel saved, and the gradient includes
// the statistics' dependence on x; in inference they are the population
// mean and variance, constants.
template <typename T>
class FusedBatchNormGradCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(BatchNormAttrs attrs, ReadAttrs(c));
    return std::unique_ptr<OpKernel>(new FusedBatchNormGradCpu(c, std::move(attrs)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    const BatchNormAttrs& a = attrs_;
    const Tensor& dy = ctx.input(0);
    const Tensor& x = ctx.input(1);
    ASSIGN_OR_RETURN(const ChannelView v, ViewOf(a, x, "x"));
    if (dy.shape() != x.shape()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: x and y_backprop must have the same shape, got %s and %s", a.op,
                          x.shape().DebugString(), dy.shape().DebugString()));
    }
    RETURN_IF_ERROR(CheckChannelVector(a, ctx.input(2), "scale", v.channels, x));
    RETURN_IF_ERROR(CheckChannelVector(a, ctx.input(3), "reserve_space_1", v.channels, x));
    RETURN_IF_ERROR(CheckChannelVector(a, ctx.input(4), "reserve_space_2", v.channels, x));
    const TensorShape vec({v.channels});
    ASSIGN_OR_RETURN(Tensor * dx, ctx.AllocateOutput(0, x.shape()));
    ASSIGN_OR_RETURN(Tensor * dscale, ctx.AllocateOutput(1, vec));
    ASSIGN_OR_RETURN(Tensor * doffset, ctx.AllocateOutput(2, vec));
    for (int i : {3, 4}) {
      RETURN_IF_ERROR(ctx.AllocateOutput(i, TensorShape({0})).status());
    }
    const size_t channels = static_cast<size_t>(v.channels);
    const float* scale = ctx.input(2).data<float>();
    const float* mean = ctx.input(3).data<float>();
    const float* variance = ctx.input(4).data<float>();
    const T* dys = dy.data<T>();
    const T* xs = x.data<T>();
    std::vector<double> inv_std(channels), sum_dy(channels), sum_dy_xc(channels);
    for (size_t c = 0; c < channels; ++c) inv_std[c] = 1.0 / std::sqrt(variance[c] + a.epsilon);
    ForEachElement(v, [&](int64_t at, int64_t c) {
      sum_dy[c] += dys[at];
      sum_dy_xc[c] += dys[at] * (xs[at] - mean[c]);
    });
    float* dscales = dscale->data<float>();
    float* doffsets = doffset->data<float>();
    for (size_t c = 0; c < channels; ++c) {
      dscales[c] = static_cast<float>(sum_dy_xc[c] * inv_std[c]);
      doffsets[c] = static_cast<float>(sum_dy[c]);
    }
    T* dxs = dx->data<T>();
    if (!a.is_training) {
      ForEachElement(v, [&](int64_t at, int64_t c) {
        dxs[at] = static_cast<T>(dys[at] * scale[c] * inv_std[c]);
      });
      return absl::OkStatus();
    }
    // dx = scale / std * (dy - mean(dy) - (x - mean) * mean(dy * (x - mean)) / var).
    const double n = static_cast<double>(v.count());
    ForEachElement(v, [&](int64_t at, int64_t c) {
      const double centered = xs[at] - mean[c];
      const double along = centered * inv_std[c] * inv_std[c] * sum_dy_xc[c] / n;
      dxs[at] = static_cast<T>(scale[c] * inv_std[c] * (dys[at] - sum_dy[c] / n - along));
    });
    return absl::OkStatus();
  }

 private:
  FusedBatchNormGradCpu(const OpKernelConstruction& c, BatchNormAttrs attrs)
      : OpKernel(c), attrs_(std::move(attrs)) {}
  const BatchNormAttrs attrs_;
};

}  // namespace

void RegisterCpuBatchNormKernels(KernelRegistry& registry) {
  registry.Register(KernelDef("FusedBatchNorm").Device(kDeviceCpu).TypeConstraint<float>("T"),
                    &FusedBatchNormCpu<float>::Create);
  registry.Register(KernelDef("FusedBatchNormGrad").Device(kDeviceCpu).TypeConstraint<float>("T"),
                    &FusedBatchNormGradCpu<float>::Create);
  for (const char* op : {"FusedBatchNormV2", "FusedBatchNormV3"}) {
    registry.Register(
        KernelDef(op).Device(kDeviceCpu).TypeConstraint<float>("T").TypeConstraint<float>("U"),
        &FusedBatchNormCpu<float>::Create);
  }
  for (const char* op : {"FusedBatchNormGradV2", "FusedBatchNormGradV3"}) {
    registry.Register(
        KernelDef(op).Device(kDeviceCpu).TypeConstraint<float>("T").TypeConstraint<float>("U"),
        &FusedBatchNormGradCpu<float>::Create);
  }
}

}  // namespace rill
