// CPU 2-D convolution (NHWC) and its gradients, by im2col: each output
// position's receptive field is unrolled into a row, and the convolution
// becomes one matrix product with the filter on the intra-op pool (through
// oneDNN's GEMM for the float32 products it is faster on).
#include <algorithm>
#include <cstdint>
#include <memory>
#include <type_traits>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/window_geometry.h"
#include "kernels/cpu/onednn_gemm.h"
#include "kernels/cpu/pooling_ops.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using Index = Eigen::DenseIndex;
using conv::ConvGeometry;
using window::DimWindow;
using window::WindowAttrs;
template <typename T>
using ConstMatrixMap = Eigen::TensorMap<Eigen::Tensor<const T, 2, Eigen::RowMajor, Index>>;
template <typename T>
using MatrixMap = Eigen::TensorMap<Eigen::Tensor<T, 2, Eigen::RowMajor, Index>>;

// The input row (or column) that window tap `k` of output `o` reads;
// outside [0, input) it lies in the padding.
Index InputCoord(const DimWindow& w, Index o, Index k) {
  return o * w.stride - w.pad_before + k * w.dilation;
}

// Calls fn(patch_row, image, in_row, in_col, tap) for every in-bounds tap of
// the patches [begin, end); taps number (kr * cols.window + kc).
template <typename Fn>
void ForEachTap(const ConvGeometry& g, Index begin, Index end, Fn&& fn) {
  for (Index p = begin; p < end; ++p) {
    const Index oc = p % g.cols.output;
    const Index orow = (p / g.cols.output) % g.rows.output;
    const Index n = p / (g.cols.output * g.rows.output);
    for (Index kr = 0; kr < g.rows.window; ++kr) {
      const Index ir = InputCoord(g.rows, orow, kr);
      if (ir < 0 || ir >= g.rows.input) continue;
      for (Index kc = 0; kc < g.cols.window; ++kc) {
        const Index ic = InputCoord(g.cols, oc, kc);
        if (ic < 0 || ic >= g.cols.input) continue;
        fn(p, n, ir, ic, kr * g.cols.window + kc);
      }
    }
  }
}

// Fills patches [patches(), patch_size()] from the input; padding is zero.
template <typename T>
void Im2Col(const Eigen::ThreadPoolDevice& d, const ConvGeometry& g, const T* input, T* patches) {
  const Index size = g.patch_size();
  d.parallelFor(g.patches(), Eigen::TensorOpCost(size * sizeof(T), size * sizeof(T), 0),
                [&](Index begin, Index end) {
                  std::fill(patches + begin * size, patches + end * size, T(0));
                  ForEachTap(g, begin, end, [&](Index p, Index n, Index ir, Index ic, Index tap) {
                    const T* src = input + ((n * g.rows.input + ir) * g.cols.input + ic) * g.depth;
                    std::copy(src, src + g.depth, patches + p * size + tap * g.depth);
                  });
                });
}

// The adjoint of Im2Col: adds each patch entry back into the input
// position it was read from. Images are independent, so they run in
// parallel without write conflicts.
template <typename T>
void Col2Im(const Eigen::ThreadPoolDevice& d, const ConvGeometry& g, const T* patches, T* input) {
  const Index per_image = g.rows.output * g.cols.output;
  const Index image_size = g.rows.input * g.cols.input * g.depth;
  d.parallelFor(
      g.batch, Eigen::TensorOpCost(0, 0, per_image * g.patch_size()), [&](Index begin, Index end) {
        std::fill(input + begin * image_size, input + end * image_size, T(0));
        ForEachTap(g, begin * per_image, end * per_image,
                   [&](Index p, Index n, Index ir, Index ic, Index tap) {
                     const T* src = patches + p * g.patch_size() + tap * g.depth;
                     T* dst = input + ((n * g.rows.input + ir) * g.cols.input + ic) * g.depth;
                     for (Index c = 0; c < g.depth; ++c) dst[c] += src[c];
                   });
      });
}

// out [m, n] = a' b' (or += when `accumulate`), where a' is a [a_rows,
// a_cols] or its transpose, and so for b'.
template <typename T>
absl::Status Contract(const Eigen::ThreadPoolDevice& d, const T* a, Index a_rows, Index a_cols,
                      bool transpose_a, const T* b, Index b_rows, Index b_cols, bool transpose_b,
                      T* out, Index out_rows, Index out_cols, bool accumulate = false) {
  MatrixMap<T> result(out, out_rows, out_cols);
  if (a_rows * a_cols == 0 || b_rows * b_cols == 0) {
    if (!accumulate) result.device(d) = result.constant(T(0));
    return absl::OkStatus();
  }
  const Index inner = transpose_a ? a_rows : a_cols;
  if constexpr (std::is_same_v<T, float>) {
    if (PreferOneDnnSgemm(out_rows, out_cols, inner)) {
      return OneDnnSgemm(d, transpose_a, transpose_b, out_rows, out_cols, inner, a, b, out,
                         accumulate);
    }
  }
  const Eigen::array<Eigen::IndexPair<Index>, 1> pair = {
      Eigen::IndexPair<Index>(transpose_a ? 0 : 1, transpose_b ? 1 : 0)};
  const auto product =
      ConstMatrixMap<T>(a, a_rows, a_cols).contract(ConstMatrixMap<T>(b, b_rows, b_cols), pair);
  if (accumulate) {
    result.device(d) += product;
  } else {
    result.device(d) = product;
  }
  return absl::OkStatus();
}

// The patch matrix is built for a few images at a time so that its size
// stays bounded (about 64 MiB of floats) however large the batch.
constexpr Index kMaxPatchElements = Index{16} << 20;

// Calls fn(first_image, chunk) -> absl::Status for consecutive chunks of
// the batch, where chunk is `g` restricted to the chunk's images, up to the
// first error.
template <typename Fn>
absl::Status ForEachImageChunk(const ConvGeometry& g, Fn&& fn) {
  const Index per_image = std::max<Index>(g.rows.output * g.cols.output * g.patch_size(), 1);
  const Index images = std::max<Index>(kMaxPatchElements / per_image, 1);
  for (Index first = 0; first < g.batch; first += images) {
    ConvGeometry chunk = g;
    chunk.batch = std::min(images, g.batch - first);
    RETURN_IF_ERROR(fn(first, chunk));
  }
  return absl::OkStatus();
}

// The three kernels share attr parsing; kOp selects the computation.
enum class ConvOp { kForward, kBackpropInput, kBackpropFilter };

template <typename T, ConvOp kOp>
class ConvCpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(WindowAttrs attrs, window::ReadWindowAttrs(c.def(), /*dilated=*/true));
    return std::unique_ptr<OpKernel>(new ConvCpu(c, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    if constexpr (kOp == ConvOp::kForward) {
      return Forward(ctx);
    } else if constexpr (kOp == ConvOp::kBackpropInput) {
      return BackpropInput(ctx);
    } else {
      return BackpropFilter(ctx);
    }
  }

 private:
  ConvCpu(const OpKernelConstruction& c, WindowAttrs attrs) : OpKernel(c), attrs_(attrs) {}

  // Room for the patches of the largest chunk of images.
  absl::StatusOr<Tensor> Patches(KernelContext& ctx, const ConvGeometry& g) const {
    Index rows = 0;
    RETURN_IF_ERROR(ForEachImageChunk(g, [&](Index, const ConvGeometry& chunk) {
      rows = std::max(rows, chunk.patches());
      return absl::OkStatus();
    }));
    return ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({rows, g.patch_size()}));
  }

  absl::Status Forward(KernelContext& ctx) const {
    const Tensor& input = ctx.input(0);
    const Tensor& filter = ctx.input(1);
    ASSIGN_OR_RETURN(ConvGeometry g, conv::ComputeGeometry(attrs_, input.shape(), filter.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.output_shape()));
    if (out->NumElements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(Tensor patches, Patches(ctx, g));
    return ForEachImageChunk(g, [&](Index first, const ConvGeometry& c) {
      Im2Col<T>(ctx.eigen_cpu(), c, input.data<T>() + first * g.input_image_size(),
                patches.data<T>());
      return Contract<T>(ctx.eigen_cpu(), patches.data<T>(), c.patches(), c.patch_size(), false,
                         filter.data<T>(), c.patch_size(), c.out_depth, false,
                         out->data<T>() + first * g.output_image_size(), c.patches(), c.out_depth);
    });
  }

  absl::Status BackpropInput(KernelContext& ctx) const {
    ASSIGN_OR_RETURN(TensorShape input_shape, conv::ShapeFromInput(ctx.input(0), "input_sizes"));
    const Tensor& filter = ctx.input(1);
    const Tensor& out_backprop = ctx.input(2);
    ASSIGN_OR_RETURN(ConvGeometry g, conv::ComputeGeometry(attrs_, input_shape, filter.shape()));
    RETURN_IF_ERROR(conv::CheckOutBackprop(g, out_backprop.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, input_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(Tensor patches, Patches(ctx, g));
    return ForEachImageChunk(g, [&](Index first, const ConvGeometry& c) {
      RETURN_IF_ERROR(
          Contract<T>(ctx.eigen_cpu(), out_backprop.data<T>() + first * g.output_image_size(),
                      c.patches(), c.out_depth, false, filter.data<T>(), c.patch_size(),
                      c.out_depth, true, patches.data<T>(), c.patches(), c.patch_size()));
      Col2Im<T>(ctx.eigen_cpu(), c, patches.data<T>(),
                out->data<T>() + first * g.input_image_size());
      return absl::OkStatus();
    });
  }

  absl::Status BackpropFilter(KernelContext& ctx) const {
    const Tensor& input = ctx.input(0);
    ASSIGN_OR_RETURN(TensorShape filter_shape, conv::ShapeFromInput(ctx.input(1), "filter_sizes"));
    const Tensor& out_backprop = ctx.input(2);
    ASSIGN_OR_RETURN(ConvGeometry g, conv::ComputeGeometry(attrs_, input.shape(), filter_shape));
    RETURN_IF_ERROR(conv::CheckOutBackprop(g, out_backprop.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, filter_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    // The gradient is a sum over the batch's output positions, which the
    // chunks below accumulate: with none (an empty batch or output) it is 0.
    if (input.NumElements() == 0 || out_backprop.NumElements() == 0) {
      std::fill_n(out->data<T>(), out->NumElements(), T(0));
      return absl::OkStatus();
    }
    ASSIGN_OR_RETURN(Tensor patches, Patches(ctx, g));
    return ForEachImageChunk(g, [&](Index first, const ConvGeometry& c) {
      Im2Col<T>(ctx.eigen_cpu(), c, input.data<T>() + first * g.input_image_size(),
                patches.data<T>());
      return Contract<T>(ctx.eigen_cpu(), patches.data<T>(), c.patches(), c.patch_size(), true,
                         out_backprop.data<T>() + first * g.output_image_size(), c.patches(),
                         c.out_depth, false, out->data<T>(), c.patch_size(), c.out_depth,
                         /*accumulate=*/first > 0);
    });
  }

  const WindowAttrs attrs_;
};

template <ConvOp kOp, typename... Ts>
void RegisterConv(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceCpu).TypeConstraint<Ts>("T"), &ConvCpu<Ts, kOp>::Create),
   ...);
}

}  // namespace

void RegisterCpuConvKernels(KernelRegistry& registry) {
  RegisterConv<ConvOp::kForward, float, double>(registry, "Conv2D");
  RegisterConv<ConvOp::kBackpropInput, float, double>(registry, "Conv2DBackpropInput");
  RegisterConv<ConvOp::kBackpropFilter, float, double>(registry, "Conv2DBackpropFilter");
  RegisterCpuPoolingKernels(registry);
}

}  // namespace rill
