// CPU kernels that join tensors along an axis or cut one into pieces:
// ConcatV2, Pack, Split, SplitV and Unpack. Pieces along dim 0 are views
// of the input.
// clang-format off
#include "kernels/cpu_threads.h"
// clang-format on

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
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

using transform_util::CanonicalAxis;
using transform_util::CopyRows;
using transform_util::DimProduct;
using transform_util::ReadInts;

// Splits `value` along `axis` into pieces of `sizes`; along dim 0 (or when
// all dims before the axis are 1) the pieces are views.
absl::Status SplitInto(KernelContext& ctx, const Tensor& value, int axis,
                       const std::vector<int64_t>& sizes, std::string_view op) {
  const int64_t outer = DimProduct(value.shape(), 0, axis);
  const int64_t inner = DimProduct(value.shape(), axis + 1, value.dims());
  const int64_t mid = value.dim_size(axis);
  int64_t start = 0;
  for (size_t i = 0; i < sizes.size(); ++i) {
    TensorShape shape = value.shape();
    shape.set_dim(axis, sizes[i]);
    if (outer == 1) {
      ASSIGN_OR_RETURN(Tensor flat, value.Reshaped(TensorShape({mid, inner})));
      ASSIGN_OR_RETURN(Tensor view, flat.Slice(start, start + sizes[i]).Reshaped(shape));
      ctx.set_output(static_cast<int>(i), std::move(view));
    } else {
      ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(static_cast<int>(i), shape));
      RETURN_IF_ERROR(CopyRows(value, start * inner, mid * inner, *out, 0, sizes[i] * inner, outer,
                               sizes[i] * inner, op));
    }
    start += sizes[i];
  }
  return absl::OkStatus();
}

class SplitOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(1);
    if (ctx.input(0).NumElements() != 1) {
      return absl::InvalidArgumentError("Split: split_dim must be a scalar");
    }
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(ReadInts(ctx.input(0))[0], value.dims(), "Split"));
    const int n = ctx.num_outputs();
    if (value.dim_size(axis) % n != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Split: dim %d of size %d is not divisible into %d pieces", axis,
                          value.dim_size(axis), n));
    }
    return SplitInto(ctx, value, axis, std::vector<int64_t>(n, value.dim_size(axis) / n), "Split");
  }
};

class SplitVOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(0);
    std::vector<int64_t> sizes = ReadInts(ctx.input(1));
    if (ctx.input(2).NumElements() != 1) {
      return absl::InvalidArgumentError("SplitV: split_dim must be a scalar");
    }
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(ReadInts(ctx.input(2))[0], value.dims(), "SplitV"));
    if (static_cast<int>(sizes.size()) != ctx.num_outputs()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SplitV: size_splits has %d values but num_split is %d", sizes.size(),
                          ctx.num_outputs()));
    }
    int unknown = -1;
    int64_t total = 0;
    for (size_t i = 0; i < sizes.size(); ++i) {
      if (sizes[i] == -1 && unknown == -1) {
        unknown = static_cast<int>(i);
      } else if (sizes[i] < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("SplitV: size_splits [%s] may hold one -1 and otherwise sizes >= 0",
                            absl::StrJoin(sizes, ",")));
      } else {
        total += sizes[i];
      }
    }
    const int64_t dim = value.dim_size(axis);
    if (unknown != -1 && total <= dim) sizes[unknown] = dim - total;
    if ((unknown == -1 && total != dim) || (unknown != -1 && total > dim)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SplitV: size_splits [%s] do not add up to dim %d of size %d",
                          absl::StrJoin(ReadInts(ctx.input(1)), ","), axis, dim));
    }
    return SplitInto(ctx, value, axis, sizes, "SplitV");
  }
};

// Joins `inputs` along `axis`; every input has `base`'s shape except along
// `axis` (Pack passes inputs already expanded to size 1 there).
absl::Status ConcatInto(KernelContext& ctx, const std::vector<Tensor>& inputs, int axis,
                        std::string_view op) {
  const TensorShape& base = inputs[0].shape();
  int64_t total = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorShape& s = inputs[i].shape();
    bool ok = s.dims() == base.dims() && inputs[i].dtype() == inputs[0].dtype();
    for (int d = 0; ok && d < base.dims(); ++d) ok = d == axis || s.dim_size(d) == base.dim_size(d);
    if (!ok) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: input %d has shape %s, which does not match input 0's shape %s except along axis %d",
          op, i, s.DebugString(), base.DebugString(), axis));
    }
    total += s.dim_size(axis);
  }
  TensorShape shape = base;
  shape.set_dim(axis, total);
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
  const int64_t outer = DimProduct(base, 0, axis);
  const int64_t inner = DimProduct(base, axis + 1, base.dims());
  int64_t start = 0;
  for (const Tensor& in : inputs) {
    const int64_t len = in.dim_size(axis) * inner;
    RETURN_IF_ERROR(CopyRows(in, 0, len, *out, start * inner, total * inner, outer, len, op));
    start += in.dim_size(axis);
  }
  return absl::OkStatus();
}

class ConcatV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const int n = ctx.num_inputs() - 1;
    if (ctx.input(n).NumElements() != 1) {
      return absl::InvalidArgumentError("ConcatV2: axis must be a scalar");
    }
    const int rank = ctx.input(0).dims();
    if (rank == 0) return absl::InvalidArgumentError("ConcatV2: cannot concatenate scalars");
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(ReadInts(ctx.input(n))[0], rank, "ConcatV2"));
    std::vector<Tensor> inputs;
    for (int i = 0; i < n; ++i) inputs.push_back(ctx.input(i));
    return ConcatInto(ctx, inputs, axis, "ConcatV2");
  }
};

// Pack and Unpack read `axis` at construction; its range depends on the
// input rank, so it is checked at run time.
class PackOp final : public OpKernel {
 public:
  PackOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
    return std::unique_ptr<OpKernel>(std::make_unique<PackOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const TensorShape& base = ctx.input(0).shape();
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_, base.dims() + 1, "Pack"));
    std::vector<int64_t> dims(base.dim_sizes().begin(), base.dim_sizes().end());
    dims.insert(dims.begin() + axis, 1);
    const TensorShape expanded(absl::MakeConstSpan(dims));
    std::vector<Tensor> inputs;
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (!(ctx.input(i).shape() == base)) {
        return absl::InvalidArgumentError(
            absl::StrFormat("Pack: input %d has shape %s but input 0 has shape %s", i,
                            ctx.input(i).shape().DebugString(), base.DebugString()));
      }
      ASSIGN_OR_RETURN(Tensor t, ctx.input(i).Reshaped(expanded));
      inputs.push_back(std::move(t));
    }
    return ConcatInto(ctx, inputs, axis, "Pack");
  }

 private:
  const int64_t axis_;
};

class UnpackOp final : public OpKernel {
 public:
  UnpackOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
    return std::unique_ptr<OpKernel>(std::make_unique<UnpackOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(0);
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_, value.dims(), "Unpack"));
    if (value.dim_size(axis) != ctx.num_outputs()) {
      return absl::InvalidArgumentError(absl::StrFormat("Unpack: dim %d has size %d but num is %d",
                                                        axis, value.dim_size(axis),
                                                        ctx.num_outputs()));
    }
    RETURN_IF_ERROR(
        SplitInto(ctx, value, axis, std::vector<int64_t>(ctx.num_outputs(), 1), "Unpack"));
    TensorShape shape = value.shape();
    shape.RemoveDim(axis);
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      ASSIGN_OR_RETURN(Tensor t, ctx.output(i).tensor.Reshaped(shape));
      ctx.set_output(i, std::move(t));
    }
    return absl::OkStatus();
  }

 private:
  const int64_t axis_;
};

}  // namespace

void RegisterCpuConcatSplitKernels(KernelRegistry& r) {
  r.Register(KernelDef("Split").Device(kDeviceCpu), MakeKernel<SplitOp>);
  r.Register(KernelDef("SplitV").Device(kDeviceCpu), MakeKernel<SplitVOp>);
  r.Register(KernelDef("ConcatV2").Device(kDeviceCpu), MakeKernel<ConcatV2Op>);
  r.Register(KernelDef("Pack").Device(kDeviceCpu), PackOp::Create);
  r.Register(KernelDef("Unpack").Device(kDeviceCpu), UnpackOp::Create);
}

}  // namespace rill
