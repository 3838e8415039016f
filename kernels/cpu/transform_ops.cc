// CPU kernels that rearrange elements: Transpose, Tile and ReverseV2.
// Element copies are typed, so string tensors work too.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <algorithm>
#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using transform_util::CanonicalAxis;
using transform_util::ReadIndices;
using transform_util::RowMajorStrides;
using transform_util::StridedGather;
using transform_util::StridedView;
using transform_util::TiledShape;
using transform_util::TransposeView;
using transform_util::Unsupported;

class TransposeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(const StridedView view, TransposeView(x, ctx.input(1)));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, view.shape));
    return StridedGather(x, 0, view.strides, *out, "Transpose");
  }
};

class TileOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int rank = x.dims();
    ASSIGN_OR_RETURN(const TensorShape shape, TiledShape(x, ctx.input(1)));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    const int64_t n = out->NumElements();
    const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
    return DispatchType(
        x.dtype(),
        [&]<typename T>() {
          const T* src = x.data<T>();
          T* dst = out->data<T>();
          std::vector<int64_t> index(rank, 0);
          for (int64_t o = 0; o < n; ++o) {
            int64_t in = 0;
            for (int d = 0; d < rank; ++d) in += (index[d] % x.dim_size(d)) * in_strides[d];
            dst[o] = src[in];
            for (int d = rank - 1; d >= 0 && ++index[d] == shape.dim_size(d); --d) index[d] = 0;
          }
          return absl::OkStatus();
        },
        [&] { return Unsupported("Tile", x.dtype()); });
  }
};

// ReverseV2: a view of x that walks the reversed axes backwards (from
// their last element, with negative strides), gathered.
class ReverseV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(const std::vector<int64_t> axes, ReadIndices(ctx.input(1), "ReverseV2"));
    std::vector<int64_t> strides = RowMajorStrides(x.shape());
    std::vector<bool> reversed(static_cast<size_t>(x.dims()), false);
    int64_t offset = 0;
    for (const int64_t a : axes) {
      ASSIGN_OR_RETURN(const int axis, CanonicalAxis(a, x.dims(), "ReverseV2"));
      if (reversed[axis]) {
        return absl::InvalidArgumentError(
            absl::StrFormat("ReverseV2: axis %d is named twice", axis));
      }
      reversed[axis] = true;
      offset += std::max<int64_t>(x.dim_size(axis) - 1, 0) * strides[axis];
      strides[axis] = -strides[axis];
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, x.shape()));
    if (x.NumElements() == 0) return absl::OkStatus();
    return StridedGather(x, offset, strides, *out, "ReverseV2");
  }
};

}  // namespace

void RegisterCpuTransformKernels(KernelRegistry& r) {
  r.Register(KernelDef("Transpose").Device(kDeviceCpu), MakeKernel<TransposeOp>);
  r.Register(KernelDef("Tile").Device(kDeviceCpu), MakeKernel<TileOp>);
  r.Register(KernelDef("ReverseV2").Device(kDeviceCpu), MakeKernel<ReverseV2Op>);
}

}  // namespace rill
