#include "kernels/common/split_join.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"

namespace rill::transform_util {

absl::StatusOr<SplitSpec> ReadSplit(const Tensor& split_dim, const Tensor& value, int num_split) {
  if (split_dim.NumElements() != 1) {
    return absl::InvalidArgumentError("Split: split_dim must be a scalar");
  }
  SplitSpec spec;
  ASSIGN_OR_RETURN(spec.axis, CanonicalAxis(ReadInts(split_dim)[0], value.dims(), "Split"));
  const int64_t dim = value.dim_size(spec.axis);
  if (dim % num_split != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Split: dim %d of size %d is not divisible into %d pieces", spec.axis, dim, num_split));
  }
  spec.sizes.assign(num_split, dim / num_split);
  return spec;
}

absl::StatusOr<SplitSpec> ReadSplitV(const Tensor& value, const Tensor& size_splits,
                                     const Tensor& split_dim, int num_split) {
  SplitSpec spec;
  spec.sizes = ReadInts(size_splits);
  std::vector<int64_t>& sizes = spec.sizes;
  if (split_dim.NumElements() != 1) {
    return absl::InvalidArgumentError("SplitV: split_dim must be a scalar");
  }
  ASSIGN_OR_RETURN(spec.axis, CanonicalAxis(ReadInts(split_dim)[0], value.dims(), "SplitV"));
  if (static_cast<int>(sizes.size()) != num_split) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "SplitV: size_splits has %d values but num_split is %d", sizes.size(), num_split));
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
  const int64_t dim = value.dim_size(spec.axis);
  if (unknown != -1 && total <= dim) sizes[unknown] = dim - total;
  if ((unknown == -1 && total != dim) || (unknown != -1 && total > dim)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("SplitV: size_splits [%s] do not add up to dim %d of size %d",
                        absl::StrJoin(ReadInts(size_splits), ","), spec.axis, dim));
  }
  return spec;
}

absl::StatusOr<SplitSpec> ReadUnpack(const Tensor& value, int64_t axis, int num) {
  SplitSpec spec;
  ASSIGN_OR_RETURN(spec.axis, CanonicalAxis(axis, value.dims(), "Unpack"));
  if (value.dim_size(spec.axis) != num) {
    return absl::InvalidArgumentError(absl::StrFormat("Unpack: dim %d has size %d but num is %d",
                                                      spec.axis, value.dim_size(spec.axis), num));
  }
  spec.sizes.assign(num, 1);
  return spec;
}

absl::Status SplitInto(KernelContext& ctx, const Tensor& value, const SplitSpec& spec,
                       const RowCopy& copy) {
  const int axis = spec.axis;
  const int64_t outer = DimProduct(value.shape(), 0, axis);
  const int64_t inner = DimProduct(value.shape(), axis + 1, value.dims());
  const int64_t mid = value.dim_size(axis);
  int64_t start = 0;
  for (size_t i = 0; i < spec.sizes.size(); ++i) {
    const int64_t size = spec.sizes[i];
    TensorShape shape = value.shape();
    shape.set_dim(axis, size);
    if (outer == 1) {
      ASSIGN_OR_RETURN(Tensor flat, value.Reshaped(TensorShape({mid, inner})));
      ASSIGN_OR_RETURN(Tensor view, flat.Slice(start, start + size).Reshaped(shape));
      ctx.set_output(static_cast<int>(i), std::move(view));
    } else {
      ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(static_cast<int>(i), shape));
      RETURN_IF_ERROR(
          copy(value, start * inner, mid * inner, *out, 0, size * inner, outer, size * inner));
    }
    start += size;
  }
  return absl::OkStatus();
}

absl::Status DropUnpackedAxis(KernelContext& ctx, const Tensor& value, int axis) {
  TensorShape shape = value.shape();
  shape.RemoveDim(axis);
  for (int i = 0; i < ctx.num_outputs(); ++i) {
    ASSIGN_OR_RETURN(Tensor t, ctx.output(i).tensor.Reshaped(shape));
    ctx.set_output(i, std::move(t));
  }
  return absl::OkStatus();
}

namespace {

// The join of `inputs` along `axis`, checked: every input has inputs[0]'s
// dtype and shape except along the axis.
absl::StatusOr<JoinSpec> Join(std::vector<Tensor> inputs, int axis, std::string_view op) {
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
    // Empty inputs can carry sizes along the axis whose sum overflows.
    if (__builtin_add_overflow(total, s.dim_size(axis), &total)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: the sizes along axis %d overflow int64", op, axis));
    }
  }
  std::vector<int64_t> dims(base.dim_sizes().begin(), base.dim_sizes().end());
  dims[axis] = total;
  JoinSpec spec;
  ASSIGN_OR_RETURN(spec.shape, TensorShape::Create(dims));
  spec.axis = axis;
  spec.inputs = std::move(inputs);
  return spec;
}

}  // namespace

absl::StatusOr<JoinSpec> ReadConcatV2(const KernelContext& ctx) {
  const int n = ctx.num_inputs() - 1;
  if (ctx.input(n).NumElements() != 1) {
    return absl::InvalidArgumentError("ConcatV2: axis must be a scalar");
  }
  const int rank = ctx.input(0).dims();
  if (rank == 0) return absl::InvalidArgumentError("ConcatV2: cannot concatenate scalars");
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(ReadInts(ctx.input(n))[0], rank, "ConcatV2"));
  std::vector<Tensor> inputs;
  for (int i = 0; i < n; ++i) inputs.push_back(ctx.input(i));
  return Join(std::move(inputs), axis, "ConcatV2");
}

absl::StatusOr<JoinSpec> ReadPack(const KernelContext& ctx, int64_t axis_attr) {
  const TensorShape& base = ctx.input(0).shape();
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_attr, base.dims() + 1, "Pack"));
  std::vector<int64_t> dims(base.dim_sizes().begin(), base.dim_sizes().end());
  dims.insert(dims.begin() + axis, 1);
  ASSIGN_OR_RETURN(const TensorShape expanded, TensorShape::Create(dims));
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
  return Join(std::move(inputs), axis, "Pack");
}

absl::Status JoinInto(KernelContext& ctx, const JoinSpec& spec, const RowCopy& copy) {
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, spec.shape));
  const TensorShape& base = spec.inputs[0].shape();
  const int64_t outer = DimProduct(base, 0, spec.axis);
  const int64_t inner = DimProduct(base, spec.axis + 1, base.dims());
  const int64_t total = spec.shape.dim_size(spec.axis);
  int64_t start = 0;
  for (const Tensor& in : spec.inputs) {
    const int64_t len = in.dim_size(spec.axis) * inner;
    RETURN_IF_ERROR(copy(in, 0, len, *out, start * inner, total * inner, outer, len));
    start += in.dim_size(spec.axis);
  }
  return absl::OkStatus();
}

}  // namespace rill::transform_util
