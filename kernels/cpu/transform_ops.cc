// CPU kernels that rearrange elements: Transpose and Tile. Element copies
// are typed, so string tensors work too.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

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

}  // namespace

void RegisterCpuTransformKernels(KernelRegistry& r) {
  r.Register(KernelDef("Transpose").Device(kDeviceCpu), MakeKernel<TransposeOp>);
  r.Register(KernelDef("Tile").Device(kDeviceCpu), MakeKernel<TileOp>);
}

}  // namespace rill
