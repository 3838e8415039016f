// Slice and StridedSlice on every device: the box or strided view an output
// reads, and a whole-row slice taken as a view of the input.
#ifndef RILL_KERNELS_COMMON_SLICE_GEOMETRY_H_
#define RILL_KERNELS_COMMON_SLICE_GEOMETRY_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/op_kernel.h"
#include "ops/strided_slice_spec.h"

namespace rill::transform_util {

// How a device's kernels fill `out` (dense, of view.shape) with the
// elements of `in` that `view` names.
using ViewGather =
    std::function<absl::Status(const Tensor& in, const StridedView& view, Tensor& out)>;
// Sets Slice(x, begin, size)'s output: a view of x's buffer when the box is
// a run of whole rows along dim 0, else a new tensor that `gather` fills.
absl::Status SliceInto(KernelContext& ctx, const Tensor& x, const Tensor& begin, const Tensor& size,
                       const ViewGather& gather);

// StridedSlice's mask attrs.
absl::StatusOr<StridedSliceMasks> ReadStridedSliceMasks(const OpKernelConstruction& c);
// StridedSlice(x, begin, end, strides) resolved as the shape function
// resolves it (ResolveStridedSlice): the output's shape, and what is read
// in the input's rank, which has the same element order.
struct StridedSliceGeometry {
  TensorShape out_shape;
  StridedView view;
};
absl::StatusOr<StridedSliceGeometry> ResolveStridedSliceOf(const Tensor& x, const Tensor& begin,
                                                           const Tensor& end, const Tensor& strides,
                                                           const StridedSliceMasks& masks);

}  // namespace rill::transform_util

#endif  // RILL_KERNELS_COMMON_SLICE_GEOMETRY_H_
