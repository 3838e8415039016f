// Array ops that cut a box out of a tensor: Slice and StridedSlice (with
// TensorFlow's begin/end/ellipsis/new-axis/shrink masks).
#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"

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
    if (begin && extent >= 0 && (start > extent || (size >= 0 && start + size > extent))) {
      return ShapeError("Slice: begin %d and size %d are out of bounds for dimension %d of size %d",
                        start, size, i, extent);
    }
    if (size >= 0) {
      dims.push_back(size);
    } else {
      dims.push_back(begin && extent >= 0 ? extent - start : -1);
    }
  }
  c.set_output(0, PartialTensorShape(dims));
  return absl::OkStatus();
}

// TensorFlow's canonicalization: the sparse spec (one entry per element of
// begin/end/strides, some of them an ellipsis or a new axis) expands to one
// entry per input dimension; each is sliced, shrunk dimensions are dropped
// and new axes added. Dimensions whose size or slice bounds are not known
// stay unknown; the rank is known whenever the input's rank and the spec's
// length are.
absl::Status StridedSliceShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  int64_t length = -1;
  for (int i = 1; i <= 3; ++i) {
    ASSIGN_OR_RETURN(PartialTensorShape spec_shape, c.WithRank(c.input(i), 1, i));
    ASSIGN_OR_RETURN(length, c.MergeDim(length, spec_shape.dim_size(0)));
  }
  ASSIGN_OR_RETURN(int64_t begin_mask, c.GetIntAttr("begin_mask"));
  ASSIGN_OR_RETURN(int64_t end_mask, c.GetIntAttr("end_mask"));
  ASSIGN_OR_RETURN(int64_t ellipsis_mask, c.GetIntAttr("ellipsis_mask"));
  ASSIGN_OR_RETURN(int64_t new_axis_mask, c.GetIntAttr("new_axis_mask"));
  ASSIGN_OR_RETURN(int64_t shrink_axis_mask, c.GetIntAttr("shrink_axis_mask"));
  if (const auto bits = static_cast<uint64_t>(ellipsis_mask); (bits & (bits - 1)) != 0) {
    return ShapeError("StridedSlice: ellipsis_mask %d has more than one ellipsis", ellipsis_mask);
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> begin, c.InputAsInt64s(1));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> end, c.InputAsInt64s(2));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> strides, c.InputAsInt64s(3));
  if (in.unknown_rank()) return absl::OkStatus();
  if (length < 0) {
    // Without new or shrunk axes the input's rank is kept, whatever the spec.
    if (new_axis_mask == 0 && shrink_axis_mask == 0) {
      c.set_output(0, PartialTensorShape::UnknownOfRank(in.dims()));
    }
    return absl::OkStatus();
  }
  constexpr int64_t kMaxSpec = 64;
  if (length >= kMaxSpec) {
    return ShapeError("StridedSlice: begin, end and strides have %d entries, at most %d allowed",
                      length, kMaxSpec - 1);
  }
  const bool values_known = begin && end && strides && begin->size() == end->size() &&
                            begin->size() == strides->size() &&
                            static_cast<int64_t>(begin->size()) == length;
  auto bit = [](int64_t mask, int64_t i) { return ((mask >> i) & 1) != 0; };
  int64_t sparse_length = length;
  if ((ellipsis_mask & ((int64_t{1} << length) - 1)) == 0) {
    // A spec without an ellipsis keeps the dimensions it does not name.
    ellipsis_mask = int64_t{1} << length;
    ++sparse_length;
  }
  const int rank = in.dims();
  int full_index = 0;
  std::vector<int64_t> dims;
  for (int64_t i = 0; i < sparse_length; ++i) {
    if (bit(ellipsis_mask, i)) {
      int64_t new_axes_after = 0;
      for (int64_t j = i + 1; j < length; ++j) new_axes_after += bit(new_axis_mask, j) ? 1 : 0;
      const int64_t next = std::min<int64_t>(rank - (sparse_length - i) + 1 + new_axes_after, rank);
      for (; full_index < next; ++full_index) dims.push_back(in.dim_size(full_index));
      continue;
    }
    if (bit(new_axis_mask, i)) {
      dims.push_back(1);
      continue;
    }
    if (full_index == rank) {
      return ShapeError("StridedSlice: slice entry %d is out of range for an input of rank %d", i,
                        rank);
    }
    const int64_t size = in.dim_size(full_index++);
    const int64_t stride = values_known ? (*strides)[i] : 1;
    if (stride == 0) return ShapeError("StridedSlice: strides[%d] must be non-zero", i);
    if (bit(shrink_axis_mask, i)) {
      if (stride < 0) {
        return ShapeError("StridedSlice: only stride 1 is allowed on shrunk dimension %d", i);
      }
      if (values_known && size >= 0 && !bit(begin_mask, i)) {
        const int64_t index = (*begin)[i] < 0 ? (*begin)[i] + size : (*begin)[i];
        if (index < 0 || index >= size) {
          return ShapeError("StridedSlice: index %d is out of bounds for dimension %d of size %d",
                            (*begin)[i], full_index - 1, size);
        }
      }
      continue;
    }
    if (!values_known || size < 0) {
      dims.push_back(-1);
      continue;
    }
    // Valid positions: [0, size] going forward, [-1, size - 1] going back.
    const int64_t lo = stride > 0 ? 0 : -1;
    const int64_t hi = stride > 0 ? size : size - 1;
    auto canonical = [&](int64_t x, bool masked, bool is_begin) {
      if (masked) return is_begin == (stride > 0) ? lo : hi;
      return std::clamp(x < 0 ? x + size : x, lo, hi);
    };
    const int64_t first = canonical((*begin)[i], bit(begin_mask, i), true);
    const int64_t last = canonical((*end)[i], bit(end_mask, i), false);
    const int64_t interval = last - first;
    const bool empty = interval == 0 || (interval < 0) != (stride < 0);
    dims.push_back(empty ? 0 : interval / stride + (interval % stride != 0 ? 1 : 0));
  }
  c.set_output(0, PartialTensorShape(dims));
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
