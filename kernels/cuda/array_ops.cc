// GPU kernels that make or convert whole tensors: Cast, Fill, ZerosLike,
// OnesLike and Select. Each validates as its CPU twin, sizes its output on
// the host and queues one kernel (array_kernels.cu).
#include <cstdint>
#include <memory>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/cwise_checks.h"
#include "kernels/common/transform_util.h"
#include "kernels/cuda/array_kernels.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"

namespace rill {
namespace {

// The types Cast, Fill, ZerosLike and OnesLike take on a GPU.
constexpr DataType kCastTypes[] = {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL, DT_HALF};

cuda::CastType CastTypeOf(DataType dtype) {
  switch (dtype) {
    case DT_FLOAT:
      return cuda::CastType::kFloat;
    case DT_DOUBLE:
      return cuda::CastType::kDouble;
    case DT_INT64:
      return cuda::CastType::kInt64;
    case DT_BOOL:
      return cuda::CastType::kBool;
    default:
      return cuda::CastType::kHalf;
  }
}

// Truncate is accepted and unused, as on the CPU: both round to nearest.
class GpuCastOp final : public OpKernel {
 public:
  explicit GpuCastOp(const OpKernelConstruction& c)
      : OpKernel(c), from_(c.input_type(0)), to_(c.output_type(0)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    if (x.NumElements() == 0) return absl::OkStatus();
    if (from_ == to_) return gpu->CopyWithinDevice(x.raw_data(), y->raw_data(), x.TotalBytes());
    cuda::LaunchCast(CastTypeOf(from_), CastTypeOf(to_), x.raw_data(), y->raw_data(),
                     x.NumElements(), gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }

 private:
  const DataType from_, to_;
};

// Fill: int32 dims on the host, the value a device scalar.
class GpuFillOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& dims = ctx.input(0);
    const Tensor& value = ctx.input(1);
    ASSIGN_OR_RETURN(TensorShape shape, transform_util::FillShape(dims, value));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    cuda::LaunchFill(DataTypeSize(value.dtype()), out->raw_data(), out->NumElements(),
                     value.raw_data(), 0, gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }
};

// ZerosLike (kOne false) and OnesLike (kOne true).
template <bool kOne>
class GpuConstantLikeOp final : public OpKernel {
 public:
  explicit GpuConstantLikeOp(const OpKernelConstruction& c) : OpKernel(c), bits_(OneBits(c)) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, x.shape()));
    if (x.NumElements() == 0) return absl::OkStatus();
    if (!kOne) {
      RETURN_IF_CUDA_ERROR(
          cudaMemsetAsync(out->raw_data(), 0, out->TotalBytes(), gpu->compute_stream()),
          name() + ": zeroing its output");
      return absl::OkStatus();
    }
    cuda::LaunchFill(DataTypeSize(x.dtype()), out->raw_data(), out->NumElements(), nullptr, bits_,
                     gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }

 private:
  // The bytes of 1 in the output's type (every type registered is plain).
  static uint64_t OneBits(const OpKernelConstruction& c) {
    uint64_t bits = 0;
    DispatchType(
        c.output_type(0),
        [&]<typename T>() {
          if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(bits)) {
            const T one(1);
            std::memcpy(&bits, &one, sizeof(T));
          }
        },
        [] {});
    return bits;
  }

  const uint64_t bits_;
};

class GpuSelectOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& cond = ctx.input(0);
    const Tensor& t = ctx.input(1);
    const Tensor& e = ctx.input(2);
    ASSIGN_OR_RETURN(const cwise_checks::SelectCondition form,
                     cwise_checks::CheckSelectShapes(cond, t, e));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, t.shape()));
    const int64_t n = t.NumElements();
    const int64_t rows = form == cwise_checks::SelectCondition::kScalar        ? 0
                         : form == cwise_checks::SelectCondition::kElementwise ? n
                                                                               : t.dim_size(0);
    cuda::LaunchSelect(DataTypeSize(t.dtype()), cond.data<bool>(), rows, t.raw_data(), e.raw_data(),
                       out->raw_data(), n, gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }
};

}  // namespace

void RegisterGpuArrayKernels(KernelRegistry& r) {
  for (const DataType from : kCastTypes) {
    for (const DataType to : kCastTypes) {
      r.Register(KernelDef("Cast")
                     .Device(kDeviceGpu)
                     .TypeConstraint("SrcT", from)
                     .TypeConstraint("DstT", to),
                 MakeKernel<GpuCastOp>);
    }
  }
  for (const DataType type : kCastTypes) {
    r.Register(KernelDef("Fill")
                   .Device(kDeviceGpu)
                   .TypeConstraint("T", type)
                   .TypeConstraint("index_type", DT_INT32),
               MakeKernel<GpuFillOp>);
    r.Register(KernelDef("ZerosLike").Device(kDeviceGpu).TypeConstraint("T", type),
               MakeKernel<GpuConstantLikeOp<false>>);
    r.Register(KernelDef("OnesLike").Device(kDeviceGpu).TypeConstraint("T", type),
               MakeKernel<GpuConstantLikeOp<true>>);
  }
  for (const DataType type : {DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL}) {
    r.Register(KernelDef("Select").Device(kDeviceGpu).TypeConstraint("T", type),
               MakeKernel<GpuSelectOp>);
  }
}

}  // namespace rill
