// GPU kernels for reductions over axes (Sum, Mean, Prod, Max, Min) and
// ArgMax/ArgMin. The axes, output shape and folded runs are the CPU
// kernels' (kernels/common/reduction_util.h); the device reduces the runs in
// reduction_kernels.cu.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/reduction_util.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/reduction_kernels.h"

namespace rill {
namespace {

using cuda::ReduceOp;
using reduction_util::ArgGeometry;
using reduction_util::FoldedReduction;

// The reduction_indices (Tidx) and ArgMax's dimension stay int32 on the
// host, where these kernels read them.
template <typename T>
class GpuReductionOp final : public OpKernel {
 public:
  GpuReductionOp(const OpKernelConstruction& c, ReduceOp op)
      : OpKernel(c), op_(op), keep_dims_(GetBoolAttr(c.def(), "keep_dims").value_or(false)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& in = ctx.input(0);
    ASSIGN_OR_RETURN(const std::vector<bool> reduced,
                     reduction_util::ReducedAxes<int32_t>(ctx.input(1), in.dims()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, reduction_util::ReducedShape(
                                                             in.shape(), reduced, keep_dims_)));
    if (out->NumElements() == 0) return absl::OkStatus();
    const FoldedReduction f = reduction_util::Fold(in.shape(), reduced);
    const int n = static_cast<int>(f.dims.size());
    const absl::InlinedVector<bool, 8> runs(f.reduced.begin(), f.reduced.end());
    const int64_t scratch_elements = cuda::ReduceScratchElements(f.dims.data(), runs.data(), n);
    Tensor scratch;
    if (scratch_elements > 0) {
      ASSIGN_OR_RETURN(scratch, ctx.AllocateTemp(in.dtype(), TensorShape({scratch_elements})));
    }
    const cudaError_t e = cuda::LaunchReduce<T>(
        op_, in.data<T>(), out->data<T>(), f.dims.data(), runs.data(), n,
        scratch_elements > 0 ? scratch.data<T>() : nullptr, gpu->compute_stream());
    if (e != cudaSuccess) return CudaError(e, absl::StrFormat("%s: %s", name(), op()));
    return absl::OkStatus();
  }

 private:
  const ReduceOp op_;
  const bool keep_dims_;
};

template <typename T, bool kMax>
class GpuArgOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& in = ctx.input(0);
    ASSIGN_OR_RETURN(const ArgGeometry g, reduction_util::ReadArgAxis<int32_t>(in, ctx.input(1)));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.out_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    const cudaError_t e = cuda::LaunchArgReduce<T>(kMax, in.data<T>(), out->data<int64_t>(),
                                                   g.outer, g.size, g.inner, gpu->compute_stream());
    if (e != cudaSuccess) return CudaError(e, absl::StrFormat("%s: %s", name(), op()));
    return absl::OkStatus();
  }
};

template <typename T>
void RegisterReductions(KernelRegistry& r) {
  const auto reduction = [&](const char* op, ReduceOp kind) {
    r.Register(KernelDef(op)
                   .Device(kDeviceGpu)
                   .TypeConstraint("T", kDataTypeOf<T>)
                   .TypeConstraint("Tidx", kDataTypeOf<int32_t>),
               [kind](const OpKernelConstruction& c) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
                 return std::unique_ptr<OpKernel>(std::make_unique<GpuReductionOp<T>>(c, kind));
               });
  };
  reduction("Sum", ReduceOp::kSum);
  reduction("Mean", ReduceOp::kMean);
  reduction("Prod", ReduceOp::kProd);
  reduction("Max", ReduceOp::kMax);
  reduction("Min", ReduceOp::kMin);
  // An int32 index would be a host tensor, written by the host: only int64.
  const auto arg = [&](const char* op, KernelFactory factory) {
    r.Register(KernelDef(op)
                   .Device(kDeviceGpu)
                   .TypeConstraint("T", kDataTypeOf<T>)
                   .TypeConstraint("Tidx", kDataTypeOf<int32_t>)
                   .TypeConstraint("output_type", kDataTypeOf<int64_t>),
               std::move(factory));
  };
  arg("ArgMax", MakeKernel<GpuArgOp<T, true>>);
  arg("ArgMin", MakeKernel<GpuArgOp<T, false>>);
}

}  // namespace

void RegisterGpuReductionKernels(KernelRegistry& registry) {
  RegisterReductions<float>(registry);
  RegisterReductions<double>(registry);
  RegisterReductions<int64_t>(registry);
}

}  // namespace rill
