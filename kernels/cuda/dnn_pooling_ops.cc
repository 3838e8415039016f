// GPU pooling and softmax through cuDNN: MaxPool, MaxPoolGrad, AvgPool,
// Softmax and LogSoftmax; float and double.
//
// cuDNN runs on NCHW tensors and OIHW filters, the layouts every cuDNN
// algorithm takes in float and in double. Each kernel copies its operands
// there (dnn_layout.h, with random_kernels.cu's Relayout4d), padding the spatial dimensions
// explicitly on the way, so that cuDNN itself never pads: TensorFlow's SAME
// padding puts the odd row or column after the image, which cuDNN's
// symmetric padding cannot express, and the copy is needed for the layout
// anyway. Results are copied back into the node's layout (NHWC, or NCHW,
// which only GPUs run, as in TensorFlow), cropping the padding.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/pooling_geometry.h"
#include "kernels/common/window_geometry.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/dnn_layout.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/random_kernels.h"

namespace rill {
namespace dnn {
namespace {

using pooling::PoolAttrs;
using pooling::PoolGeometry;
using window::DimWindow;

template <typename T>
absl::StatusOr<PoolDesc> MakePoolDesc(const KernelContext& ctx, cudnnPoolingMode_t mode,
                                      const PoolGeometry& g) {
  RETURN_IF_ERROR(CheckFitsInt(ctx, {g.rows.window, g.cols.window, g.rows.stride, g.cols.stride}));
  cudnnPoolingDescriptor_t desc;
  RETURN_IF_ERROR(CudnnResult(cudnnCreatePoolingDescriptor(&desc), "cudnnCreatePoolingDescriptor"));
  PoolDesc owned(desc);
  // No padding: the input is padded explicitly. NaN is not propagated, as
  // the CPU's max skips it.
  RETURN_IF_ERROR(CudnnResult(
      cudnnSetPooling2dDescriptor(desc, mode, CUDNN_NOT_PROPAGATE_NAN,
                                  static_cast<int>(g.rows.window), static_cast<int>(g.cols.window),
                                  0, 0, static_cast<int>(g.rows.stride),
                                  static_cast<int>(g.cols.stride)),
      ctx.node().name() + ": cudnnSetPooling2dDescriptor"));
  return owned;
}

// How many of an output's window taps along one dimension fall inside the
// image.
int64_t InBounds(const DimWindow& w, int64_t o) {
  const int64_t start = o * w.stride - w.pad_before;
  return std::min(start + w.window, w.input) - std::max<int64_t>(start, 0);
}

// kMax: MaxPool, whose padding holds the lowest value so that it never
// wins; otherwise AvgPool, whose padding holds zeros: cuDNN divides each
// sum by the whole window, and the padded windows are then rescaled to
// TensorFlow's average over the in-bounds values only.
template <typename T, bool kMax>
class PoolGpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(Layout layout, ReadLayout(c.def()));
    ASSIGN_OR_RETURN(PoolAttrs attrs, pooling::ReadPoolAttrs(layout.nhwc));
    return std::unique_ptr<OpKernel>(new PoolGpu(c, layout.format, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& input = ctx.input(0);
    ASSIGN_OR_RETURN(PoolGeometry g,
                     pooling::ComputeGeometry(attrs_, ToNhwc(format_, input.shape())));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, FromNhwc(format_, g.output_shape())));
    if (out->NumElements() == 0) return absl::OkStatus();

    const Dims4 in_dims = DimsOf(TensorShape({g.batch, g.rows.input, g.cols.input, g.depth}));
    const Dims4 out_dims = DimsOf(g.output_shape());
    const Spatial s = PaddedSpatial(g.rows, g.cols);
    Tensor x = input;
    if (!IsUnpadded(format_, in_dims, s)) {
      const T fill = kMax ? std::numeric_limits<T>::lowest() : T(0);
      ASSIGN_OR_RETURN(x, ToNchw<T>(ctx, *gpu, format_, input, in_dims, s, fill));
    }
    // The in-bounds share of each window, when some window reaches into
    // the padding.
    std::vector<T> scale;
    if (!kMax) scale = AverageScale(g);
    const bool direct = format_ == Format::kNchw && scale.empty();
    Tensor y = *out;
    if (!direct) {
      ASSIGN_OR_RETURN(y,
                       ctx.AllocateTemp(kDataTypeOf<T>, FromNhwc(Format::kNchw, g.output_shape())));
    }
    Tensor scaled = y;
    Tensor factors;
    if (!scale.empty()) {
      if (format_ == Format::kNchw) {
        scaled = *out;
      } else {
        ASSIGN_OR_RETURN(scaled, ctx.AllocateTemp(kDataTypeOf<T>, y.shape()));
      }
      ASSIGN_OR_RETURN(
          factors, ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({g.rows.output, g.cols.output})));
      RETURN_IF_ERROR(ctx.device_context()->CopyHostBytesToDevice(scale.data(), factors.raw_data(),
                                                                  scale.size() * sizeof(T)));
    }
    {
      absl::MutexLock lock(&gpu->library_mu());
      ASSIGN_OR_RETURN(TensorDesc x_desc,
                       MakeTensorDesc<T>(ctx, Dims4{g.batch, g.depth, s.height, s.width}));
      ASSIGN_OR_RETURN(TensorDesc y_desc, MakeTensorDesc<T>(ctx, out_dims));
      ASSIGN_OR_RETURN(PoolDesc pool,
                       MakePoolDesc<T>(ctx,
                                       kMax ? CUDNN_POOLING_MAX_DETERMINISTIC
                                            : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING,
                                       g));
      const T one = 1, zero = 0;
      RETURN_IF_ERROR(
          CudnnResult(cudnnPoolingForward(gpu->cudnn(), pool.get(), &one, x_desc.get(), x.data<T>(),
                                          &zero, y_desc.get(), y.data<T>()),
                      ctx.node().name() + ": cudnnPoolingForward"));
      if (!scale.empty()) RETURN_IF_ERROR(Rescale(ctx, *gpu, y, factors, y_desc.get(), scaled));
    }
    if (format_ == Format::kNchw) return absl::OkStatus();
    return FromNchw<T>(ctx, *gpu, scaled, Spatial{0, 0, out_dims.h, out_dims.w}, format_, out_dims,
                       *out);
  }

 private:
  PoolGpu(const OpKernelConstruction& c, Format format, PoolAttrs attrs)
      : OpKernel(c), format_(format), attrs_(attrs) {}

  // window size / in-bounds taps per output position, [rows, cols]; empty
  // when every window lies inside the image.
  static std::vector<T> AverageScale(const PoolGeometry& g) {
    std::vector<T> scale(g.rows.output * g.cols.output);
    bool padded = false;
    const int64_t window = g.rows.window * g.cols.window;
    for (int64_t r = 0; r < g.rows.output; ++r) {
      for (int64_t c = 0; c < g.cols.output; ++c) {
        const int64_t count = InBounds(g.rows, r) * InBounds(g.cols, c);
        padded = padded || count != window;
        // A window wholly in the padding averages nothing: 0, as the CPU.
        scale[r * g.cols.output + c] =
            count > 0 ? static_cast<T>(window) / static_cast<T>(count) : T(0);
      }
    }
    if (!padded) scale.clear();
    return scale;
  }

  // out = y * factors, the [rows, cols] factors broadcast over batch and
  // channels.
  static absl::Status Rescale(const KernelContext& ctx, GpuDeviceContext& gpu, const Tensor& y,
                              const Tensor& factors, cudnnTensorDescriptor_t y_desc, Tensor& out)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.library_mu()) {
    ASSIGN_OR_RETURN(TensorDesc f_desc,
                     MakeTensorDesc<T>(ctx, Dims4{1, 1, factors.dim_size(0), factors.dim_size(1)}));
    cudnnOpTensorDescriptor_t op;
    RETURN_IF_ERROR(
        CudnnResult(cudnnCreateOpTensorDescriptor(&op), "cudnnCreateOpTensorDescriptor"));
    OpTensorDesc owned(op);
    RETURN_IF_ERROR(CudnnResult(
        cudnnSetOpTensorDescriptor(op, CUDNN_OP_TENSOR_MUL, kCudnnType<T>, CUDNN_NOT_PROPAGATE_NAN),
        ctx.node().name() + ": cudnnSetOpTensorDescriptor"));
    const T one = 1, zero = 0;
    return CudnnResult(cudnnOpTensor(gpu.cudnn(), op, &one, y_desc, y.data<T>(), &one, f_desc.get(),
                                     factors.data<T>(), &zero, y_desc, out.data<T>()),
                       ctx.node().name() + ": cudnnOpTensor");
  }

  const Format format_;
  const PoolAttrs attrs_;
};

// The gradient of each output goes to the maximum of its window, found
// again by cuDNN from orig_input and orig_output.
template <typename T>
class MaxPoolGradGpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(Layout layout, ReadLayout(c.def()));
    ASSIGN_OR_RETURN(PoolAttrs attrs, pooling::ReadPoolAttrs(layout.nhwc));
    return std::unique_ptr<OpKernel>(new MaxPoolGradGpu(c, layout.format, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& orig_input = ctx.input(0);
    const Tensor& orig_output = ctx.input(1);
    const Tensor& grad = ctx.input(2);
    ASSIGN_OR_RETURN(PoolGeometry g,
                     pooling::ComputeGeometry(attrs_, ToNhwc(format_, orig_input.shape())));
    RETURN_IF_ERROR(pooling::CheckPooledShapes(g, ToNhwc(format_, orig_output.shape()),
                                               ToNhwc(format_, grad.shape())));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, orig_input.shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (grad.NumElements() == 0) return ZeroFill(ctx, *gpu, *out);

    const Dims4 in_dims = DimsOf(TensorShape({g.batch, g.rows.input, g.cols.input, g.depth}));
    const Dims4 out_dims = DimsOf(g.output_shape());
    const Spatial s = PaddedSpatial(g.rows, g.cols);
    const bool direct = IsUnpadded(format_, in_dims, s);
    Tensor x = orig_input;
    Tensor dx = *out;
    if (!direct) {
      ASSIGN_OR_RETURN(x, ToNchw<T>(ctx, *gpu, format_, orig_input, in_dims, s,
                                    std::numeric_limits<T>::lowest()));
      ASSIGN_OR_RETURN(dx, ctx.AllocateTemp(kDataTypeOf<T>, x.shape()));
    }
    ASSIGN_OR_RETURN(Tensor y, ToNchw<T>(ctx, *gpu, format_, orig_output, out_dims));
    ASSIGN_OR_RETURN(Tensor dy, ToNchw<T>(ctx, *gpu, format_, grad, out_dims));
    {
      absl::MutexLock lock(&gpu->library_mu());
      ASSIGN_OR_RETURN(TensorDesc x_desc,
                       MakeTensorDesc<T>(ctx, Dims4{g.batch, g.depth, s.height, s.width}));
      ASSIGN_OR_RETURN(TensorDesc y_desc, MakeTensorDesc<T>(ctx, out_dims));
      ASSIGN_OR_RETURN(PoolDesc pool, MakePoolDesc<T>(ctx, CUDNN_POOLING_MAX_DETERMINISTIC, g));
      const T one = 1, zero = 0;
      RETURN_IF_ERROR(
          CudnnResult(cudnnPoolingBackward(gpu->cudnn(), pool.get(), &one, y_desc.get(),
                                           y.data<T>(), y_desc.get(), dy.data<T>(), x_desc.get(),
                                           x.data<T>(), &zero, x_desc.get(), dx.data<T>()),
                      ctx.node().name() + ": cudnnPoolingBackward"));
    }
    if (direct) return absl::OkStatus();
    return FromNchw<T>(ctx, *gpu, dx, s, format_, in_dims, *out);
  }

 private:
  MaxPoolGradGpu(const OpKernelConstruction& c, Format format, PoolAttrs attrs)
      : OpKernel(c), format_(format), attrs_(attrs) {}

  const Format format_;
  const PoolAttrs attrs_;
};

// Softmax and LogSoftmax along the last axis: the logits as [rows, classes,
// 1, 1], normalized over the channels.
template <typename T, bool kLog>
class SoftmaxGpu final : public OpKernel {
 public:
  explicit SoftmaxGpu(const OpKernelConstruction& c) : OpKernel(c) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& in = ctx.input(0);
    if (in.dims() < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("logits must have rank >= 1, got shape %s", in.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, in.shape()));
    if (in.NumElements() == 0) return absl::OkStatus();
    const int64_t classes = in.dim_size(in.dims() - 1);
    const Dims4 dims{in.NumElements() / classes, classes, 1, 1};
    absl::MutexLock lock(&gpu->library_mu());
    ASSIGN_OR_RETURN(TensorDesc desc, MakeTensorDesc<T>(ctx, dims));
    const T one = 1, zero = 0;
    return CudnnResult(
        cudnnSoftmaxForward(gpu->cudnn(), kLog ? CUDNN_SOFTMAX_LOG : CUDNN_SOFTMAX_ACCURATE,
                            CUDNN_SOFTMAX_MODE_CHANNEL, &one, desc.get(), in.data<T>(), &zero,
                            desc.get(), out->data<T>()),
        ctx.node().name() + ": cudnnSoftmaxForward");
  }
};

template <typename T>
using MaxPoolGpu = PoolGpu<T, true>;
template <typename T>
using AvgPoolGpu = PoolGpu<T, false>;

template <bool kLog, typename... Ts>
void RegisterSoftmax(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceGpu).TypeConstraint<Ts>("T"),
              MakeKernel<SoftmaxGpu<Ts, kLog>>),
   ...);
}

}  // namespace
}  // namespace dnn

// The CPU's types, less MaxPool's integers (int32 runs on the host;
// cuDNN pools no int64).
void RegisterGpuPoolingKernels(KernelRegistry& registry) {
  RegisterForTypes<dnn::MaxPoolGpu, float, double>(registry, kDeviceGpu, "MaxPool");
  RegisterForTypes<dnn::MaxPoolGradGpu, float, double>(registry, kDeviceGpu, "MaxPoolGrad");
  RegisterForTypes<dnn::AvgPoolGpu, float, double>(registry, kDeviceGpu, "AvgPool");
  dnn::RegisterSoftmax<false, float, double>(registry, "Softmax");
  dnn::RegisterSoftmax<true, float, double>(registry, "LogSoftmax");
}

}  // namespace rill
