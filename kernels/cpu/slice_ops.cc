// CPU kernels that cut a box out of a tensor: Slice and StridedSlice. The
// result is a view of the input when it is a run of whole rows of it.
// clang-format off
#include "kernels/cpu_threads.h"
// clang-format on

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/transform_util.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"
#include "ops/strided_slice_spec.h"

namespace rill {
namespace {

using transform_util::ReadInts;
using transform_util::RowMajorStrides;
using transform_util::StridedGather;

class SliceOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int rank = x.dims();
    const std::vector<int64_t> begin = ReadInts(ctx.input(1));
    std::vector<int64_t> size = ReadInts(ctx.input(2));
    if (static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Slice: begin and size must have %d values (the input's rank), got %d and %d", rank,
          begin.size(), size.size()));
    }
    for (int i = 0; i < rank; ++i) {
      if (size[i] == -1) size[i] = x.dim_size(i) - begin[i];
      if (begin[i] < 0 || size[i] < 0 || begin[i] + size[i] > x.dim_size(i)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Slice: expected 0 <= begin[%d] <= begin[%d] + size[%d] <= %d, got begin %d, size %d",
            i, i, i, x.dim_size(i), begin[i], size[i]));
      }
    }
    const TensorShape shape(absl::MakeConstSpan(size));
    if (rank >= 1 && std::equal(size.begin() + 1, size.end(), x.shape().dim_sizes().begin() + 1)) {
      // Whole rows of dim 0: a view.
      ASSIGN_OR_RETURN(Tensor view, x.Slice(begin[0], begin[0] + size[0]).Reshaped(shape));
      ctx.set_output(0, std::move(view));
      return absl::OkStatus();
    }
    const std::vector<int64_t> strides = RowMajorStrides(x.shape());
    int64_t offset = 0;
    for (int i = 0; i < rank; ++i) offset += begin[i] * strides[i];
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    return StridedGather(x, offset, strides, *out, "Slice");
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
    StridedSliceMasks masks;
    ASSIGN_OR_RETURN(masks.begin, GetIntAttr(c.def(), "begin_mask"));
    ASSIGN_OR_RETURN(masks.end, GetIntAttr(c.def(), "end_mask"));
    ASSIGN_OR_RETURN(masks.ellipsis, GetIntAttr(c.def(), "ellipsis_mask"));
    ASSIGN_OR_RETURN(masks.new_axis, GetIntAttr(c.def(), "new_axis_mask"));
    ASSIGN_OR_RETURN(masks.shrink_axis, GetIntAttr(c.def(), "shrink_axis_mask"));
    return std::unique_ptr<OpKernel>(std::make_unique<StridedSliceOp>(c, masks));
  }

  absl::Status Compute(KernelContext& ctx) const override;

 private:
  const StridedSliceMasks masks_;
};

absl::Status StridedSliceOp::Compute(KernelContext& ctx) const {
  const Tensor& x = ctx.input(0);
  for (int i = 1; i <= 3; ++i) {
    if (ctx.input(i).dims() != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "StridedSlice: begin, end and strides must be vectors, got shapes %s, %s and %s",
          ctx.input(1).shape().DebugString(), ctx.input(2).shape().DebugString(),
          ctx.input(3).shape().DebugString()));
    }
  }
  const SparseSliceSpec spec{ctx.input(1).dim_size(0), ReadInts(ctx.input(1)),
                             ReadInts(ctx.input(2)), ReadInts(ctx.input(3)), masks_};
  ASSIGN_OR_RETURN(const StridedSliceSpec resolved, ResolveStridedSlice(x.shape(), spec));
  ASSIGN_OR_RETURN(const TensorShape out_shape, resolved.final_shape.AsTensorShape());
  ASSIGN_OR_RETURN(const TensorShape dense_shape, resolved.processing_shape.AsTensorShape());
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, out_shape));
  // Copy in the processing (input-rank) layout, which has the same element
  // order.
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  std::vector<int64_t> strides(x.dims());
  int64_t offset = 0;
  for (int i = 0; i < x.dims(); ++i) {
    offset += resolved.begin[i] * in_strides[i];
    strides[i] = resolved.strides[i] * in_strides[i];
  }
  ASSIGN_OR_RETURN(Tensor dense, out->Reshaped(dense_shape));
  return StridedGather(x, offset, strides, dense, "StridedSlice");
}

}  // namespace

void RegisterCpuSliceKernels(KernelRegistry& r) {
  r.Register(KernelDef("Slice").Device(kDeviceCpu), MakeKernel<SliceOp>);
  r.Register(KernelDef("StridedSlice").Device(kDeviceCpu), StridedSliceOp::Create);
}

}  // namespace rill
