#include "kernels/common/slice_geometry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"

namespace rill::transform_util {

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

}  // namespace rill::transform_util
