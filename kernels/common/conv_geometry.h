// The sizes of one 2-D convolution (NHWC input, HWIO filter) and the
// checks of its operands, shared by the CPU and GPU convolution kernels.
#ifndef RILL_KERNELS_COMMON_CONV_GEOMETRY_H_
#define RILL_KERNELS_COMMON_CONV_GEOMETRY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/window_geometry.h"

namespace rill::conv {

// Sizes of one convolution: input [batch, rows.input, cols.input, depth],
// filter [rows.window, cols.window, depth, out_depth], output [batch,
// rows.output, cols.output, out_depth].
struct ConvGeometry {
  int64_t batch = 0;
  int64_t depth = 0;
  int64_t out_depth = 0;
  window::DimWindow rows;
  window::DimWindow cols;

  // Rows and columns of the unrolled patch matrix.
  int64_t patches() const { return batch * rows.output * cols.output; }
  int64_t input_image_size() const { return rows.input * cols.input * depth; }
  int64_t output_image_size() const { return rows.output * cols.output * out_depth; }
  int64_t patch_size() const { return rows.window * cols.window * depth; }
  TensorShape input_shape() const { return TensorShape({batch, rows.input, cols.input, depth}); }
  TensorShape output_shape() const {
    return TensorShape({batch, rows.output, cols.output, out_depth});
  }
  TensorShape filter_shape() const {
    return TensorShape({rows.window, cols.window, depth, out_depth});
  }
};

inline absl::Status CheckRank4(const TensorShape& shape, const char* what) {
  if (shape.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s must be 4-dimensional, got shape %s", what, shape.DebugString()));
  }
  return absl::OkStatus();
}

// The geometry of an NHWC `input` convolved with an HWIO `filter`, or
// INVALID_ARGUMENT saying what does not fit.
inline absl::StatusOr<ConvGeometry> ComputeGeometry(const window::WindowAttrs& attrs,
                                                    const TensorShape& input,
                                                    const TensorShape& filter) {
  RETURN_IF_ERROR(CheckRank4(input, "input"));
  RETURN_IF_ERROR(CheckRank4(filter, "filter"));
  if (input.dim_size(3) != filter.dim_size(2)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("input depth must equal filter depth: input shape %s, filter shape %s",
                        input.DebugString(), filter.DebugString()));
  }
  ConvGeometry g;
  g.batch = input.dim_size(0);
  g.depth = input.dim_size(3);
  g.out_depth = filter.dim_size(3);
  ASSIGN_OR_RETURN(g.rows,
                   window::ComputeDimWindow(attrs, 0, input.dim_size(1), filter.dim_size(0)));
  ASSIGN_OR_RETURN(g.cols,
                   window::ComputeDimWindow(attrs, 1, input.dim_size(2), filter.dim_size(1)));
  // Large paddings can make an output too large to count; output_shape()
  // relies on this check.
  RETURN_IF_ERROR(
      TensorShape::Create({g.batch, g.rows.output, g.cols.output, g.out_depth}).status());
  return g;
}

// A shape given as an int32 4-vector input (input_sizes, filter_sizes).
inline absl::StatusOr<TensorShape> ShapeFromInput(const Tensor& sizes, const char* what) {
  if (sizes.dims() != 1 || sizes.NumElements() != 4) {
    return absl::InvalidArgumentError(absl::StrFormat("%s must be a 4-element vector, got shape %s",
                                                      what, sizes.shape().DebugString()));
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < 4; ++i) {
    const int32_t size = sizes.data<int32_t>()[i];
    if (size < 0) {
      return absl::InvalidArgumentError(absl::StrFormat("%s has a negative size %d", what, size));
    }
    dims.push_back(size);
  }
  return TensorShape::Create(dims);
}

inline absl::Status CheckOutBackprop(const ConvGeometry& g, const TensorShape& out_backprop) {
  if (out_backprop != g.output_shape()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("out_backprop must have the convolution's output shape %s, got %s",
                        g.output_shape().DebugString(), out_backprop.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace rill::conv

#endif  // RILL_KERNELS_COMMON_CONV_GEOMETRY_H_
