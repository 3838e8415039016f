// Array ops that cut a box out of a tensor: Slice and StridedSlice (with
// TensorFlow's begin/end/ellipsis/new-axis/shrink masks).
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "ops/strided_slice_spec.h"

namespace rill {
namespace {

absl::Status SliceShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  ASSIGN_OR_RETURN(PartialTensorShape begin_shape, c.WithRank(c.input(1), 1, 1));
  ASSIGN_OR_RETURN(PartialTensorShape size_shape, c.WithRank(c.input(2), 1, 2));
  ASSIGN_OR_RETURN(int64_t length, c.MergeDim(begin_shape.dim_size(0), size_shape.dim_size(0)));
  int64_t rank = in.dims();
  if (rank >= 0 && length >= 0 && rank != length) {
    return ShapeError("Slice: begin and size have %d entries but the input has rank %d", length,
                      rank);
  }
  if (rank < 0) rank = length;
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> begin, c.InputAsInt64s(1));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> sizes, c.InputAsInt64s(2));
  if (!sizes) {
    if (rank >= 0) c.set_output(0, PartialTensorShape::UnknownOfRank(static_cast<int>(rank)));
    return absl::OkStatus();
  }
  if ((begin && begin->size() != sizes->size()) ||
      (rank >= 0 && static_cast<int64_t>(sizes->size()) != rank)) {
    return ShapeError("Slice: begin, size and the input's rank disagree (%d, %d and %d entries)",
                      begin ? begin->size() : sizes->size(), sizes->size(), rank);
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < sizes->size(); ++i) {
    const int64_t size = (*sizes)[i];
    const int64_t start = begin ? (*begin)[i] : -1;
    const int64_t extent = in.unknown_rank() ? -1 : in.dim_size(static_cast<int>(i));
    if (size < -1 || (begin && start < 0)) {
      return ShapeError("Slice: dimension %d has begin %d and size %d", i, start, size);
    }
    if (begin && extent >= 0 && (start > extent || (size >= 0 && size > extent - start))) {
      return ShapeError("Slice: begin %d and size %d are out of bounds for dimension %d of size %d",
                        start, size, i, extent);
    }
    if (size >= 0) {
      dims.push_back(size);
    } else {
      dims.push_back(begin && extent >= 0 ? extent - start : -1);
    }
  }
  return c.SetOutputDims(0, dims);
}

// The spec's length comes from the shapes of begin, end and strides; their
// values, when known, resolve the output shape (ResolveStridedSlice, as
// the kernel does). Dimensions whose size or slice bounds are not known
// stay unknown; the rank is known whenever the input's rank and the spec's
// length are.
absl::Status StridedSliceShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  int64_t length = -1;
  for (int i = 1; i <= 3; ++i) {
    ASSIGN_OR_RETURN(PartialTensorShape spec_shape, c.WithRank(c.input(i), 1, i));
    ASSIGN_OR_RETURN(length, c.MergeDim(length, spec_shape.dim_size(0)));
  }
  SparseSliceSpec spec;
  ASSIGN_OR_RETURN(spec.masks.begin, c.GetIntAttr("begin_mask"));
  ASSIGN_OR_RETURN(spec.masks.end, c.GetIntAttr("end_mask"));
  ASSIGN_OR_RETURN(spec.masks.ellipsis, c.GetIntAttr("ellipsis_mask"));
  ASSIGN_OR_RETURN(spec.masks.new_axis, c.GetIntAttr("new_axis_mask"));
  ASSIGN_OR_RETURN(spec.masks.shrink_axis, c.GetIntAttr("shrink_axis_mask"));
  ASSIGN_OR_RETURN(spec.begin, c.InputAsInt64s(1));
  ASSIGN_OR_RETURN(spec.end, c.InputAsInt64s(2));
  ASSIGN_OR_RETURN(spec.strides, c.InputAsInt64s(3));
  if (in.unknown_rank()) return absl::OkStatus();
  if (length < 0) {
    // Without new or shrunk axes the input's rank is kept, whatever the spec.
    if (spec.masks.new_axis == 0 && spec.masks.shrink_axis == 0) {
      c.set_output(0, PartialTensorShape::UnknownOfRank(in.dims()));
    }
    return absl::OkStatus();
  }
  spec.length = length;
  ASSIGN_OR_RETURN(StridedSliceSpec resolved, ResolveStridedSlice(in, spec));
  c.set_output(0, resolved.final_shape);
  return absl::OkStatus();
}

}  // namespace

void RegisterSliceOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Slice").Input("input: T").Input("begin: Index").Input("size: Index")
            .Output("output: T").Attr("T: type").Attr("Index: {int32, int64}")
            .SetShapeFn(SliceShape));
  r.Add(OpDefBuilder("StridedSlice").Input("input: T").Input("begin: Index").Input("end: Index")
            .Input("strides: Index").Output("output: T").Attr("T: type")
            .Attr("Index: {int32, int64}").Attr("begin_mask: int = 0").Attr("end_mask: int = 0")
            .Attr("ellipsis_mask: int = 0").Attr("new_axis_mask: int = 0")
            .Attr("shrink_axis_mask: int = 0").SetShapeFn(StridedSliceShape));
}

}  // namespace rill
