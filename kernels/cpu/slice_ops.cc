// CPU kernels that cut a box out of a tensor: Slice and StridedSlice. The
// result is a view of the input when it is a run of whole rows of it.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/slice_geometry.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "ops/strided_slice_spec.h"

namespace rill {
namespace {

using transform_util::ReadStridedSliceMasks;
using transform_util::ResolveStridedSliceOf;
using transform_util::SliceInto;
using transform_util::StridedGather;
using transform_util::StridedSliceGeometry;
using transform_util::StridedView;

class SliceOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    return SliceInto(ctx, ctx.input(0), ctx.input(1), ctx.input(2),
                     [](const Tensor& in, const StridedView& view, Tensor& out) {
                       return StridedGather(in, view.offset, view.strides, out, "Slice");
                     });
  }
};

// The masks are read once; begin, end and strides arrive as inputs and
// are resolved with the input's shape on each run, exactly as the shape
// function resolves them (ResolveStridedSlice).
class StridedSliceOp final : public OpKernel {
 public:
  StridedSliceOp(const OpKernelConstruction& c, StridedSliceMasks masks)
      : OpKernel(c), masks_(masks) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const StridedSliceMasks masks, ReadStridedSliceMasks(c));
    return std::unique_ptr<OpKernel>(std::make_unique<StridedSliceOp>(c, masks));
  }

  absl::Status Compute(KernelContext& ctx) const override;

 private:
  const StridedSliceMasks masks_;
};

absl::Status StridedSliceOp::Compute(KernelContext& ctx) const {
  const Tensor& x = ctx.input(0);
  ASSIGN_OR_RETURN(const StridedSliceGeometry g,
                   ResolveStridedSliceOf(x, ctx.input(1), ctx.input(2), ctx.input(3), masks_));
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.out_shape));
  // Copy in the processing (input-rank) layout, which has the same element
  // order.
  ASSIGN_OR_RETURN(Tensor dense, out->Reshaped(g.view.shape));
  return StridedGather(x, g.view.offset, g.view.strides, dense, "StridedSlice");
}

}  // namespace

void RegisterCpuSliceKernels(KernelRegistry& r) {
  r.Register(KernelDef("Slice").Device(kDeviceCpu), MakeKernel<SliceOp>);
  r.Register(KernelDef("StridedSlice").Device(kDeviceCpu), StridedSliceOp::Create);
}

}  // namespace rill
