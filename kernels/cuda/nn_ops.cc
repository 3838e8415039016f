// GPU kernels for the softmax cross-entropy losses and BiasAddGrad, with
// the CPU kernels' checks (kernels/common/nn_util.h) and the device
// reductions of reduction_kernels.cu.
#include <cstdint>
#include <memory>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/reduction_util.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/reduction_kernels.h"
#include "kernels/cuda/xent_kernels.h"

namespace rill {
namespace {

absl::Status Launched(const OpKernel& kernel, cudaError_t error) {
  if (error == cudaSuccess) return absl::OkStatus();
  return CudaError(error, absl::StrFormat("%s: %s", kernel.name(), kernel.op()));
}

template <typename T>
class GpuSoftmaxXentOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& logits = ctx.input(0);
    const Tensor& labels = ctx.input(1);
    RETURN_IF_ERROR(nn_util::CheckXentShapes(logits, labels));
    const int64_t rows = logits.dim_size(0);
    ASSIGN_OR_RETURN(Tensor * loss, ctx.AllocateOutput(0, TensorShape({rows})));
    ASSIGN_OR_RETURN(Tensor * backprop, ctx.AllocateOutput(1, logits.shape()));
    if (rows == 0) return absl::OkStatus();
    return Launched(*this, cuda::LaunchSoftmaxXent<T>(logits.data<T>(), labels.data<T>(),
                                                      loss->data<T>(), backprop->data<T>(), rows,
                                                      logits.dim_size(1), gpu->compute_stream()));
  }
};

// The CPU rejects a label outside [0, classes); here the labels are read
// on the device only, and that row's loss and backprop are NaN, as in
// TensorFlow's GPU kernel (xent_kernels.h).
template <typename T, typename L>
class GpuSparseSoftmaxXentOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& logits = ctx.input(0);
    RETURN_IF_ERROR(nn_util::CheckSparseXentShapes(logits, ctx.input(1)));
    const int64_t rows = logits.dim_size(0);
    ASSIGN_OR_RETURN(Tensor * loss, ctx.AllocateOutput(0, TensorShape({rows})));
    ASSIGN_OR_RETURN(Tensor * backprop, ctx.AllocateOutput(1, logits.shape()));
    if (rows == 0) return absl::OkStatus();
    // int32 labels arrive in host memory.
    ASSIGN_OR_RETURN(const Tensor labels, InputOnDevice(ctx, *gpu, 1));
    return Launched(*this,
                    cuda::LaunchSparseSoftmaxXent<T, L>(logits.data<T>(), labels.data<L>(),
                                                        loss->data<T>(), backprop->data<T>(), rows,
                                                        logits.dim_size(1), gpu->compute_stream()));
  }
};

// Sums out_backprop over every dimension but the channel one, as a
// reduction of the [outer, channels, inner] view.
template <typename T>
class GpuBiasAddGradOp final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool nchw, nn_util::ReadIsNchw(c));
    return std::unique_ptr<OpKernel>(new GpuBiasAddGradOp(c, nchw));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& backprop = ctx.input(0);
    ASSIGN_OR_RETURN(const auto view, nn_util::ChannelView(backprop.shape(), nchw_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({view[1]})));
    if (view[1] == 0) return absl::OkStatus();
    const reduction_util::FoldedReduction f =
        reduction_util::Fold(TensorShape({view[0], view[1], view[2]}), {true, false, true});
    const int n = static_cast<int>(f.dims.size());
    const absl::InlinedVector<bool, 3> runs(f.reduced.begin(), f.reduced.end());
    const int64_t scratch_elements = cuda::ReduceScratchElements(f.dims.data(), runs.data(), n);
    Tensor scratch;
    if (scratch_elements > 0) {
      ASSIGN_OR_RETURN(scratch,
                       ctx.AllocateTemp(backprop.dtype(), TensorShape({scratch_elements})));
    }
    return Launched(*this, cuda::LaunchReduce<T>(cuda::ReduceOp::kSum, backprop.data<T>(),
                                                 out->data<T>(), f.dims.data(), runs.data(), n,
                                                 scratch_elements > 0 ? scratch.data<T>() : nullptr,
                                                 gpu->compute_stream()));
  }

 private:
  GpuBiasAddGradOp(const OpKernelConstruction& c, bool nchw) : OpKernel(c), nchw_(nchw) {}
  const bool nchw_;
};

template <typename T, typename L>
void RegisterSparseXent(KernelRegistry& r) {
  r.Register(KernelDef("SparseSoftmaxCrossEntropyWithLogits")
                 .Device(kDeviceGpu)
                 .TypeConstraint("T", kDataTypeOf<T>)
                 .TypeConstraint("Tlabels", kDataTypeOf<L>),
             &MakeKernel<GpuSparseSoftmaxXentOp<T, L>>);
}

}  // namespace

void RegisterGpuNnKernels(KernelRegistry& registry) {
  RegisterForTypes<GpuSoftmaxXentOp, float, double>(registry, kDeviceGpu,
                                                    "SoftmaxCrossEntropyWithLogits");
  RegisterSparseXent<float, int32_t>(registry);
  RegisterSparseXent<float, int64_t>(registry);
  RegisterSparseXent<double, int32_t>(registry);
  RegisterSparseXent<double, int64_t>(registry);
  RegisterForTypes<GpuBiasAddGradOp, float, double, int64_t>(registry, kDeviceGpu, "BiasAddGrad");
}

}  // namespace rill
