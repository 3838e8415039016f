// Index reading, the checks and geometry of the ops that move elements
// around, and the CPU's typed strided and row copies.
#include "kernels/cpu/transform_util.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"

namespace rill::transform_util {

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> out(t.NumElements());
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DT_INT8:
        out[i] = t.data<int8_t>()[i];
        break;
      case DT_INT32:
        out[i] = t.data<int32_t>()[i];
        break;
      default:
        out[i] = t.data<int64_t>()[i];
        break;
    }
  }
  return out;
}

absl::StatusOr<std::vector<int64_t>> ReadIndices(const Tensor& t, std::string_view op) {
  std::vector<int64_t> out(t.NumElements());
  auto read = [&]<typename I>() {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(t.data<I>()[i]);
  };
  switch (t.dtype()) {
    case DT_UINT8:
      read.template operator()<uint8_t>();
      break;
    case DT_INT8:
      read.template operator()<int8_t>();
      break;
    case DT_INT16:
      read.template operator()<int16_t>();
      break;
    case DT_INT32:
      read.template operator()<int32_t>();
      break;
    case DT_INT64:
      read.template operator()<int64_t>();
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: unsupported index type %s", op, DataTypeString(t.dtype())));
  }
  return out;
}

absl::Status Unsupported(std::string_view op, DataType dtype) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s does not support %s", op, DataTypeString(dtype)));
}

absl::Status StridedGather(const Tensor& in, int64_t offset, const std::vector<int64_t>& in_strides,
                           Tensor& out, std::string_view op) {
  const int rank = static_cast<int>(in_strides.size());
  const int64_t n = out.NumElements();
  if (n == 0) return absl::OkStatus();
  return DispatchType(
      in.dtype(),
      [&]<typename T>() {
        const T* src = in.data<T>();
        T* dst = out.data<T>();
        if (rank == 0) {
          dst[0] = src[offset];
          return absl::OkStatus();
        }
        std::vector<int64_t> index(rank, 0);
        const int64_t inner = out.dim_size(rank - 1);
        const int64_t inner_stride = in_strides[rank - 1];
        int64_t base = offset;
        for (int64_t o = 0; o < n; o += inner) {
          for (int64_t j = 0; j < inner; ++j) dst[o + j] = src[base + j * inner_stride];
          for (int d = rank - 2; d >= 0; --d) {
            base += in_strides[d];
            if (++index[d] < out.dim_size(d)) break;
            base -= in_strides[d] * index[d];
            index[d] = 0;
          }
        }
        return absl::OkStatus();
      },
      [&] { return Unsupported(op, in.dtype()); });
}

std::vector<int64_t> RowMajorStrides(const TensorShape& shape) {
  std::vector<int64_t> strides(shape.dims(), 1);
  for (int i = shape.dims() - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape.dim_size(i + 1);
  return strides;
}

absl::Status CopyRows(const Tensor& src, int64_t src_off, int64_t src_row, const Tensor& dst,
                      int64_t dst_off, int64_t dst_row, int64_t rows, int64_t len,
                      std::string_view op) {
  if (rows == 0 || len == 0) return absl::OkStatus();
  return DispatchType(
      src.dtype(),
      [&]<typename T>() {
        const T* s = src.data<T>() + src_off;
        T* d = dst.data<T>() + dst_off;
        for (int64_t r = 0; r < rows; ++r) std::copy_n(s + r * src_row, len, d + r * dst_row);
        return absl::OkStatus();
      },
      [&] { return Unsupported(op, src.dtype()); });
}

int64_t DimProduct(const TensorShape& shape, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= shape.dim_size(i);
  return p;
}

absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: axis %d is out of range [%d, %d)", op, axis, -rank, rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<StridedView> TransposeView(const Tensor& x, const Tensor& perm_t) {
  const std::vector<int64_t> perm = ReadInts(perm_t);
  const int rank = x.dims();
  if (perm_t.dims() != 1 || static_cast<int>(perm.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Transpose: perm must be a vector of %d values, got shape %s", rank,
                        perm_t.shape().DebugString()));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Transpose: perm [%s] is not a permutation of [0, %d)", absl::StrJoin(perm, ","), rank));
    }
    seen[p] = true;
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  std::vector<int64_t> out_dims(rank);
  StridedView view;
  view.strides.resize(rank);
  for (int i = 0; i < rank; ++i) {
    out_dims[i] = x.dim_size(perm[i]);
    view.strides[i] = in_strides[perm[i]];
  }
  view.shape = TensorShape(absl::MakeConstSpan(out_dims));
  return view;
}

absl::StatusOr<TensorShape> FillShape(const Tensor& dims, const Tensor& value) {
  if (dims.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fill: dims must be a vector, got shape ", dims.shape().DebugString()));
  }
  if (value.dims() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fill: value must be a scalar, got shape ", value.shape().DebugString()));
  }
  const std::vector<int64_t> sizes = ReadInts(dims);
  return TensorShape::Create(absl::MakeConstSpan(sizes));
}

absl::StatusOr<TensorShape> TiledShape(const Tensor& x, const Tensor& multiples_t) {
  const std::vector<int64_t> multiples = ReadInts(multiples_t);
  const int rank = x.dims();
  if (multiples_t.dims() != 1 || static_cast<int>(multiples.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Tile: multiples must be a vector of %d values, got shape %s", rank,
                        multiples_t.shape().DebugString()));
  }
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) {
    if (multiples[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Tile: multiples[%d] = %d is negative", i, multiples[i]));
    }
    out_dims[i] = x.dim_size(i) * multiples[i];
  }
  return TensorShape::Create(absl::MakeConstSpan(out_dims));
}

namespace {

// Slice(x, begin, size) with size -1 resolved: the box's corner and shape.
struct SliceBox {
  std::vector<int64_t> begin;
  TensorShape shape;
};

absl::StatusOr<SliceBox> ReadSliceBox(const Tensor& x, const Tensor& begin_in,
                                      const Tensor& size_in) {
  const int rank = x.dims();
  SliceBox box;
  box.begin = ReadInts(begin_in);
  std::vector<int64_t> size = ReadInts(size_in);
  if (static_cast<int>(box.begin.size()) != rank || static_cast<int>(size.size()) != rank) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Slice: begin and size must have %d values (the input's rank), got %d and %d", rank,
        box.begin.size(), size.size()));
  }
  for (int i = 0; i < rank; ++i) {
    const int64_t begin = box.begin[i];
    if (size[i] == -1) size[i] = x.dim_size(i) - begin;
    if (begin < 0 || size[i] < 0 || begin + size[i] > x.dim_size(i)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Slice: expected 0 <= begin[%d] <= begin[%d] + size[%d] <= %d, got begin %d, size %d", i,
          i, i, x.dim_size(i), begin, size[i]));
    }
  }
  box.shape = TensorShape(absl::MakeConstSpan(size));
  return box;
}

}  // namespace

absl::Status SliceInto(KernelContext& ctx, const Tensor& x, const Tensor& begin, const Tensor& size,
                       const ViewGather& gather) {
  ASSIGN_OR_RETURN(const SliceBox box, ReadSliceBox(x, begin, size));
  const auto sizes = box.shape.dim_sizes();
  if (x.dims() >= 1 &&
      std::equal(sizes.begin() + 1, sizes.end(), x.shape().dim_sizes().begin() + 1)) {
    ASSIGN_OR_RETURN(Tensor rows,
                     x.Slice(box.begin[0], box.begin[0] + sizes[0]).Reshaped(box.shape));
    ctx.set_output(0, std::move(rows));
    return absl::OkStatus();
  }
  StridedView view{box.shape, 0, RowMajorStrides(x.shape())};
  for (int i = 0; i < x.dims(); ++i) view.offset += box.begin[i] * view.strides[i];
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, view.shape));
  return gather(x, view, *out);
}

absl::StatusOr<StridedSliceMasks> ReadStridedSliceMasks(const OpKernelConstruction& c) {
  StridedSliceMasks masks;
  ASSIGN_OR_RETURN(masks.begin, GetIntAttr(c.def(), "begin_mask"));
  ASSIGN_OR_RETURN(masks.end, GetIntAttr(c.def(), "end_mask"));
  ASSIGN_OR_RETURN(masks.ellipsis, GetIntAttr(c.def(), "ellipsis_mask"));
  ASSIGN_OR_RETURN(masks.new_axis, GetIntAttr(c.def(), "new_axis_mask"));
  ASSIGN_OR_RETURN(masks.shrink_axis, GetIntAttr(c.def(), "shrink_axis_mask"));
  return masks;
}

absl::StatusOr<StridedSliceGeometry> ResolveStridedSliceOf(const Tensor& x, const Tensor& begin,
                                                           const Tensor& end, const Tensor& strides,
                                                           const StridedSliceMasks& masks) {
  for (const Tensor* t : {&begin, &end, &strides}) {
    if (t->dims() != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "StridedSlice: begin, end and strides must be vectors, got shapes %s, %s and %s",
          begin.shape().DebugString(), end.shape().DebugString(), strides.shape().DebugString()));
    }
  }
  const SparseSliceSpec spec{begin.dim_size(0), ReadInts(begin), ReadInts(end), ReadInts(strides),
                             masks};
  ASSIGN_OR_RETURN(const StridedSliceSpec resolved, ResolveStridedSlice(x.shape(), spec));
  StridedSliceGeometry g;
  ASSIGN_OR_RETURN(g.out_shape, resolved.final_shape.AsTensorShape());
  ASSIGN_OR_RETURN(g.view.shape, resolved.processing_shape.AsTensorShape());
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  g.view.strides.resize(x.dims());
  for (int i = 0; i < x.dims(); ++i) {
    g.view.offset += resolved.begin[i] * in_strides[i];
    g.view.strides[i] = resolved.strides[i] * in_strides[i];
  }
  return g;
}

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

absl::StatusOr<GatherGeometry> GatherGeometryOf(const TensorShape& params,
                                                const TensorShape& indices, int axis) {
  GatherGeometry g;
  std::vector<int64_t> dims;
  for (int d = 0; d < axis; ++d) dims.push_back(params.dim_size(d));
  for (int64_t d : indices.dim_sizes()) dims.push_back(d);
  for (int d = axis + 1; d < params.dims(); ++d) dims.push_back(params.dim_size(d));
  ASSIGN_OR_RETURN(g.shape, TensorShape::Create(absl::MakeConstSpan(dims)));
  g.outer = DimProduct(params, 0, axis);
  g.bound = params.dim_size(axis);
  g.n = indices.num_elements();
  g.inner = DimProduct(params, axis + 1, params.dims());
  return g;
}

absl::StatusOr<int> ReadGatherV2Axis(const Tensor& params, const Tensor& axis_t) {
  if (axis_t.NumElements() != 1) {
    return absl::InvalidArgumentError("GatherV2: axis must be a scalar");
  }
  ASSIGN_OR_RETURN(std::vector<int64_t> axis_v, ReadIndices(axis_t, "GatherV2"));
  const int64_t rank = params.dims();
  const int64_t axis = axis_v[0];
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("GatherV2: axis %d is out of range [%d, %d)", axis, -rank, rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::Status CheckGatherV2BatchDims(const OpKernelConstruction& c) {
  ASSIGN_OR_RETURN(int64_t batch_dims, GetIntAttr(c.def(), "batch_dims"));
  if (batch_dims != 0) {
    return absl::UnimplementedError(
        absl::StrFormat("GatherV2: batch_dims = %d is not supported (only 0)", batch_dims));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> ReadOneHotAxis(const OpKernelConstruction& c) {
  ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
  if (axis < -1) {
    return absl::InvalidArgumentError(absl::StrFormat("OneHot: axis %d must be >= -1", axis));
  }
  return axis;
}

absl::StatusOr<OneHotGeometry> ReadOneHot(const KernelContext& ctx, int64_t axis_attr) {
  const Tensor& indices = ctx.input(0);
  const int rank = indices.dims();
  if (axis_attr > rank) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "OneHot: axis %d is out of range [-1, %d] for indices of rank %d", axis_attr, rank, rank));
  }
  for (int i = 1; i < 4; ++i) {
    if (ctx.input(i).dims() != 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("OneHot: input %d must be a scalar, got shape %s", i,
                          ctx.input(i).shape().DebugString()));
    }
  }
  OneHotGeometry g;
  g.depth = ctx.input(1).scalar<int32_t>();
  if (g.depth < 0) {
    return absl::InvalidArgumentError(absl::StrFormat("OneHot: depth %d is negative", g.depth));
  }
  const int axis = axis_attr == -1 ? rank : static_cast<int>(axis_attr);
  std::vector<int64_t> dims(indices.shape().dim_sizes().begin(), indices.shape().dim_sizes().end());
  dims.insert(dims.begin() + axis, g.depth);
  ASSIGN_OR_RETURN(g.shape, TensorShape::Create(absl::MakeConstSpan(dims)));
  g.outer = DimProduct(indices.shape(), 0, axis);
  g.inner = DimProduct(indices.shape(), axis, rank);
  return g;
}

}  // namespace rill::transform_util
