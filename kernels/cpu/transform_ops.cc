// CPU kernels that rearrange elements: Transpose and Tile. Element copies
// are typed, so string tensors work too.
// clang-format off
#include "kernels/cpu_threads.h"
// clang-format on

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/transform_util.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using transform_util::ReadInts;
using transform_util::RowMajorStrides;
using transform_util::StridedGather;
using transform_util::Unsupported;

class TransposeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> perm = ReadInts(ctx.input(1));
    const int rank = x.dims();
    if (ctx.input(1).dims() != 1 || static_cast<int>(perm.size()) != rank) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Transpose: perm must be a vector of %d values, got shape %s", rank,
                          ctx.input(1).shape().DebugString()));
    }
    std::vector<bool> seen(rank, false);
    for (int64_t p : perm) {
      if (p < 0 || p >= rank || seen[p]) {
        return absl::InvalidArgumentError(
            absl::StrFormat("Transpose: perm [%s] is not a permutation of [0, %d)",
                            absl::StrJoin(perm, ","), rank));
      }
      seen[p] = true;
    }
    const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
    std::vector<int64_t> out_dims(rank), strides(rank);
    for (int i = 0; i < rank; ++i) {
      out_dims[i] = x.dim_size(perm[i]);
      strides[i] = in_strides[perm[i]];
    }
    ASSIGN_OR_RETURN(Tensor * out,
                     ctx.AllocateOutput(0, TensorShape(absl::MakeConstSpan(out_dims))));
    return StridedGather(x, 0, strides, *out, "Transpose");
  }
};

class TileOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const std::vector<int64_t> multiples = ReadInts(ctx.input(1));
    const int rank = x.dims();
    if (ctx.input(1).dims() != 1 || static_cast<int>(multiples.size()) != rank) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Tile: multiples must be a vector of %d values, got shape %s", rank,
                          ctx.input(1).shape().DebugString()));
    }
    std::vector<int64_t> out_dims(rank);
    for (int i = 0; i < rank; ++i) {
      if (multiples[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("Tile: multiples[%d] = %d is negative", i, multiples[i]));
      }
      out_dims[i] = x.dim_size(i) * multiples[i];
    }
    ASSIGN_OR_RETURN(TensorShape shape, TensorShape::Create(absl::MakeConstSpan(out_dims)));
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
            for (int d = rank - 1; d >= 0 && ++index[d] == out_dims[d]; --d) index[d] = 0;
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
