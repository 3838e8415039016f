// The attrs and sizes of one 2-D pooling (NHWC) and the checks of its
// operands, shared by the CPU and GPU pooling kernels.
#ifndef RILL_KERNELS_COMMON_POOLING_GEOMETRY_H_
#define RILL_KERNELS_COMMON_POOLING_GEOMETRY_H_

#include <array>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/proto/node_def.pb.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/window_geometry.h"

namespace rill::pooling {

// Window attrs and ksize, read once.
struct PoolAttrs {
  window::WindowAttrs window;
  std::array<int64_t, 2> ksize;
};

inline absl::StatusOr<PoolAttrs> ReadPoolAttrs(const NodeDef& node) {
  PoolAttrs attrs;
  ASSIGN_OR_RETURN(attrs.window, window::ReadWindowAttrs(node, /*dilated=*/false));
  ASSIGN_OR_RETURN(attrs.ksize, window::ReadSpatialPair(node, "ksize"));
  return attrs;
}

// Sizes of one pooling: input [batch, rows.input, cols.input, depth],
// output [batch, rows.output, cols.output, depth].
struct PoolGeometry {
  int64_t batch = 0;
  int64_t depth = 0;
  window::DimWindow rows;
  window::DimWindow cols;

  TensorShape output_shape() const { return TensorShape({batch, rows.output, cols.output, depth}); }
};

inline absl::StatusOr<PoolGeometry> ComputeGeometry(const PoolAttrs& attrs,
                                                    const TensorShape& input) {
  if (input.dims() != 4) {
    return absl::InvalidArgumentError(
        absl::StrFormat("input must be 4-dimensional, got shape %s", input.DebugString()));
  }
  PoolGeometry g;
  g.batch = input.dim_size(0);
  g.depth = input.dim_size(3);
  ASSIGN_OR_RETURN(g.rows,
                   window::ComputeDimWindow(attrs.window, 0, input.dim_size(1), attrs.ksize[0]));
  ASSIGN_OR_RETURN(g.cols,
                   window::ComputeDimWindow(attrs.window, 1, input.dim_size(2), attrs.ksize[1]));
  // Large paddings can make an output too large to count; output_shape()
  // relies on this check.
  RETURN_IF_ERROR(TensorShape::Create({g.batch, g.rows.output, g.cols.output, g.depth}).status());
  return g;
}

// MaxPoolGrad's orig_output and grad must both have the pooled shape.
inline absl::Status CheckPooledShapes(const PoolGeometry& g, const TensorShape& orig_output,
                                      const TensorShape& grad) {
  if (orig_output != g.output_shape() || grad != g.output_shape()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "orig_output and grad must have the pooled shape %s, got %s and %s",
        g.output_shape().DebugString(), orig_output.DebugString(), grad.DebugString()));
  }
  return absl::OkStatus();
}

}  // namespace rill::pooling

#endif  // RILL_KERNELS_COMMON_POOLING_GEOMETRY_H_
