// CPU kernels that index into tensors (Gather, GatherV2, OneHot,
// DynamicStitch), Where, which makes such indices from a mask, and
// BroadcastGradientArgs, which gradient graphs use to find the dims a
// broadcast binary op's gradient must be summed over.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/gather_geometry.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using transform_util::CheckGatherV2BatchDims;
using transform_util::GatherAlong;
using transform_util::GatherGeometry;
using transform_util::GatherGeometryOf;
using transform_util::OneHotGeometry;
using transform_util::ReadGatherV2Axis;
using transform_util::ReadIndices;
using transform_util::ReadOneHot;
using transform_util::ReadOneHotAxis;
using transform_util::Unsupported;

class GatherOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    if (ctx.input(0).dims() < 1) {
      return absl::InvalidArgumentError("Gather: params must have rank >= 1");
    }
    return GatherAlong(ctx, ctx.input(0), ctx.input(1), 0, "Gather");
  }
};

class GatherV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    RETURN_IF_ERROR(CheckGatherV2BatchDims(c));
    return std::unique_ptr<OpKernel>(std::make_unique<GatherV2Op>(c));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& params = ctx.input(0);
    ASSIGN_OR_RETURN(const int axis, ReadGatherV2Axis(params, ctx.input(2)));
    return GatherAlong(ctx, params, ctx.input(1), axis, "GatherV2");
  }
};

class OneHotOp final : public OpKernel {
 public:
  OneHotOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, ReadOneHotAxis(c));
    return std::unique_ptr<OpKernel>(std::make_unique<OneHotOp>(c, axis));
  }

  // Indices outside [0, depth) give a row of off_value, as in TensorFlow.
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const OneHotGeometry g, ReadOneHot(ctx, axis_));
    ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(ctx.input(0), "OneHot"));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.shape));
    const DataType dtype = ctx.input(2).dtype();
    return DispatchType(
        dtype,
        [&]<typename T>() {
          const T on = ctx.input(2).scalar<T>();
          const T off = ctx.input(3).scalar<T>();
          T* dst = out->data<T>();
          // Output index [o, d, k] is on where indices[o, k] == d.
          for (int64_t o = 0; o < g.outer; ++o) {
            for (int64_t d = 0; d < g.depth; ++d) {
              for (int64_t k = 0; k < g.inner; ++k) {
                dst[(o * g.depth + d) * g.inner + k] = indices[o * g.inner + k] == d ? on : off;
              }
            }
          }
          return absl::OkStatus();
        },
        [&] { return Unsupported("OneHot", dtype); });
  }

 private:
  const int64_t axis_;
};

class DynamicStitchOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  // Later inputs overwrite earlier ones where indices repeat; rows that no
  // index names are value-initialized.
  absl::Status Compute(KernelContext& ctx) const override {
    const int n = ctx.num_inputs() / 2;
    const Tensor& data0 = ctx.input(n);
    const int index_rank0 = ctx.input(0).dims();
    if (data0.dims() < index_rank0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "DynamicStitch: data[0] has shape %s, which does not start with indices[0]'s shape %s",
          data0.shape().DebugString(), ctx.input(0).shape().DebugString()));
    }
    std::vector<int64_t> row_dims(data0.shape().dim_sizes().begin() + index_rank0,
                                  data0.shape().dim_sizes().end());
    int64_t row = 1;
    for (int64_t d : row_dims) row *= d;
    int64_t max_index = -1;
    for (int i = 0; i < n; ++i) {
      const Tensor& idx = ctx.input(i);
      const Tensor& data = ctx.input(n + i);
      std::vector<int64_t> want(idx.shape().dim_sizes().begin(), idx.shape().dim_sizes().end());
      want.insert(want.end(), row_dims.begin(), row_dims.end());
      if (!(data.shape() == TensorShape(absl::MakeConstSpan(want))) ||
          data.dtype() != data0.dtype()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "DynamicStitch: data[%d] has shape %s but indices[%d] has shape %s and rows are %s", i,
            data.shape().DebugString(), i, idx.shape().DebugString(),
            TensorShape(absl::MakeConstSpan(row_dims)).DebugString()));
      }
      for (int64_t k = 0; k < idx.NumElements(); ++k) {
        const int32_t v = idx.data<int32_t>()[k];
        if (v < 0) {
          return absl::InvalidArgumentError(
              absl::StrFormat("DynamicStitch: indices[%d][%d] = %d is negative", i, k, v));
        }
        max_index = std::max<int64_t>(max_index, v);
      }
    }
    std::vector<int64_t> dims = {max_index + 1};
    dims.insert(dims.end(), row_dims.begin(), row_dims.end());
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape(absl::MakeConstSpan(dims))));
    return DispatchType(
        data0.dtype(),
        [&]<typename T>() {
          T* dst = out->data<T>();
          std::fill_n(dst, out->NumElements(), T{});
          for (int i = 0; i < n; ++i) {
            const int32_t* idx = ctx.input(i).data<int32_t>();
            const T* src = ctx.input(n + i).data<T>();
            const int64_t count = ctx.input(i).NumElements();
            if (row == 1) {  // Scalars (a gradient stitched from top-k's entries): no call each.
              for (int64_t k = 0; k < count; ++k) dst[idx[k]] = src[k];
            } else {
              for (int64_t k = 0; k < count; ++k) {
                std::copy_n(src + k * row, row, dst + idx[k] * row);
              }
            }
          }
          return absl::OkStatus();
        },
        [&] { return Unsupported("DynamicStitch", data0.dtype()); });
  }
};

// TensorFlow's rule, from the trailing dim backwards: a dim where an input
// is 1 (or absent) and the other is not is reduced for that input; a dim
// where both are 1 is reduced for both (summing a size-1 dim is harmless);
// equal dims > 1 are reduced for neither.
template <typename T>
class BroadcastGradientArgsOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& s0 = ctx.input(0);
    const Tensor& s1 = ctx.input(1);
    if (s0.dims() != 1 || s1.dims() != 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("BroadcastGradientArgs: inputs must be vectors, got shapes %s and %s",
                          s0.shape().DebugString(), s1.shape().DebugString()));
    }
    const std::vector<T> x(s0.data<T>(), s0.data<T>() + s0.NumElements());
    const std::vector<T> y(s1.data<T>(), s1.data<T>() + s1.NumElements());
    const int64_t rank = std::max(x.size(), y.size());
    std::vector<T> r0, r1;
    for (int64_t i = 0; i < rank; ++i) {
      const int64_t xi = i - (rank - static_cast<int64_t>(x.size()));
      const int64_t yi = i - (rank - static_cast<int64_t>(y.size()));
      const T a = xi >= 0 ? x[xi] : 1;
      const T b = yi >= 0 ? y[yi] : 1;
      if (a != b && a != 1 && b != 1) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Incompatible shapes: [%s] vs. [%s]", absl::StrJoin(x, ","), absl::StrJoin(y, ",")));
      }
      if (a == 1 && b == 1) {
        r0.push_back(static_cast<T>(i));
        r1.push_back(static_cast<T>(i));
      } else if (a == 1) {
        r0.push_back(static_cast<T>(i));
      } else if (b == 1) {
        r1.push_back(static_cast<T>(i));
      }
    }
    for (int k = 0; k < 2; ++k) {
      const std::vector<T>& r = k == 0 ? r0 : r1;
      ASSIGN_OR_RETURN(Tensor * out,
                       ctx.AllocateOutput(k, TensorShape({static_cast<int64_t>(r.size())})));
      std::copy(r.begin(), r.end(), out->data<T>());
    }
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }
};

// Where: the coordinates of the true (non-zero) elements, one int64 row of
// `rank` entries each, in row-major order.
template <typename T>
class WhereOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& input = ctx.input(0);
    const T* x = input.data<T>();
    const int64_t n = input.NumElements();
    const auto is_true = [](const T& v) { return v != T(0); };
    const int64_t num_true = std::count_if(x, x + n, is_true);
    const int rank = input.dims();
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape({num_true, rank})));
    int64_t* row = out->data<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (!is_true(x[i])) continue;
      int64_t rest = i;
      for (int d = rank - 1; d >= 0; --d) {
        row[d] = rest % input.dim_size(d);
        rest /= input.dim_size(d);
      }
      row += rank;
    }
    return absl::OkStatus();
  }
};

template <typename... Ts>
void RegisterWhere(KernelRegistry& r) {
  (r.Register(KernelDef("Where").Device(kDeviceCpu).TypeConstraint<Ts>("T"),
              MakeKernel<WhereOp<Ts>>),
   ...);
}

}  // namespace

void RegisterCpuGatherKernels(KernelRegistry& r) {
  r.Register(KernelDef("Gather").Device(kDeviceCpu), MakeKernel<GatherOp>);
  r.Register(KernelDef("GatherV2").Device(kDeviceCpu), GatherV2Op::Create);
  r.Register(KernelDef("OneHot").Device(kDeviceCpu), OneHotOp::Create);
  r.Register(KernelDef("DynamicStitch").Device(kDeviceCpu), MakeKernel<DynamicStitchOp>);
  RegisterWhere<bool, float, double, int32_t, int64_t, int8_t, int16_t, uint8_t, uint16_t, uint32_t,
                uint64_t, half, bfloat16, complex64, complex128>(r);
  r.Register(KernelDef("BroadcastGradientArgs").Device(kDeviceCpu).TypeConstraint<int32_t>("T"),
             MakeKernel<BroadcastGradientArgsOp<int32_t>>);
  r.Register(KernelDef("BroadcastGradientArgs").Device(kDeviceCpu).TypeConstraint<int64_t>("T"),
             MakeKernel<BroadcastGradientArgsOp<int64_t>>);
}

}  // namespace rill
