// Reduction geometry shared by the CPU and GPU kernels: the axes a
// reduction_indices tensor names, the output shape, the input folded into
// runs of kept and reduced dimensions, and ArgMax/ArgMin's axis.
#ifndef RILL_KERNELS_COMMON_REDUCTION_UTIL_H_
#define RILL_KERNELS_COMMON_REDUCTION_UTIL_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"

namespace rill::reduction_util {

// The axes in `indices` (a scalar or vector, negative counting from the
// end) as a mask over the input's dimensions.
template <typename Tidx>
absl::StatusOr<std::vector<bool>> ReducedAxes(const Tensor& indices, int rank) {
  if (indices.dims() > 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("reduction_indices must be a scalar or vector, got shape %s",
                        indices.shape().DebugString()));
  }
  std::vector<bool> reduced(rank, false);
  const Tidx* data = indices.data<Tidx>();
  for (int64_t i = 0; i < indices.NumElements(); ++i) {
    const int64_t axis = data[i];
    if (axis < -rank || axis >= rank) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Invalid reduction dimension %d for input with %d dimensions", axis, rank));
    }
    const int64_t a = axis < 0 ? axis + rank : axis;
    if (reduced[a]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Invalid reduction arguments: Axes contains duplicate dimension: %d", a));
    }
    reduced[a] = true;
  }
  return reduced;
}

// The kept dimensions, and the reduced ones as 1 with keep_dims.
inline TensorShape ReducedShape(const TensorShape& in, const std::vector<bool>& reduced,
                                bool keep_dims) {
  TensorShape out;
  for (int i = 0; i < in.dims(); ++i) {
    if (!reduced[i]) {
      out.AddDim(in.dim_size(i));
    } else if (keep_dims) {
      out.AddDim(1);
    }
  }
  return out;
}

// The input folded into alternating runs of kept and reduced dimensions
// (size-1 dimensions dropped): what a kernel reduces is this view, of rank
// 3 or less in all but rare patterns.
struct FoldedReduction {
  std::vector<int64_t> dims;
  std::vector<bool> reduced;
};

inline FoldedReduction Fold(const TensorShape& shape, const std::vector<bool>& reduced) {
  FoldedReduction f;
  for (int i = 0; i < shape.dims(); ++i) {
    if (shape.dim_size(i) == 1) continue;
    if (!f.dims.empty() && f.reduced.back() == reduced[i]) {
      f.dims.back() *= shape.dim_size(i);
    } else {
      f.dims.push_back(shape.dim_size(i));
      f.reduced.push_back(reduced[i]);
    }
  }
  return f;
}

// ArgMax/ArgMin over one axis: the input viewed as [outer, size, inner],
// the output as [outer, inner].
struct ArgGeometry {
  TensorShape out_shape;
  int64_t outer = 1, size = 0, inner = 1;
};

// INVALID_ARGUMENT unless `dim` is a scalar naming a non-empty axis of `in`.
template <typename Tidx>
absl::StatusOr<ArgGeometry> ReadArgAxis(const Tensor& in, const Tensor& dim) {
  if (dim.dims() != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("dimension must be a scalar, got shape %s", dim.shape().DebugString()));
  }
  const int rank = in.dims();
  const int64_t axis_in = dim.scalar<Tidx>();
  if (axis_in < -rank || axis_in >= rank) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Expected dimension in the range [%d, %d), but got %d", -rank, rank, axis_in));
  }
  const int axis = static_cast<int>(axis_in < 0 ? axis_in + rank : axis_in);
  if (in.dim_size(axis) == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Reduction axis %d is empty in shape %s", axis, in.shape().DebugString()));
  }
  ArgGeometry g;
  g.out_shape = in.shape();
  g.out_shape.RemoveDim(axis);
  for (int i = 0; i < axis; ++i) g.outer *= in.dim_size(i);
  g.size = in.dim_size(axis);
  for (int i = axis + 1; i < rank; ++i) g.inner *= in.dim_size(i);
  return g;
}

}  // namespace rill::reduction_util

#endif  // RILL_KERNELS_COMMON_REDUCTION_UTIL_H_
