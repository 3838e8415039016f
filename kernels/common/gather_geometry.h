// GatherV2 and OneHot on every device: their inputs checked and the
// [outer, n, inner] geometry of what each output element reads; the gather
// itself on the host.
#ifndef RILL_KERNELS_COMMON_GATHER_GEOMETRY_H_
#define RILL_KERNELS_COMMON_GATHER_GEOMETRY_H_

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

// output[o, i, k] = params[o, indices[i], k] with params viewed as
// [outer, bound, inner] and the output as [outer, n, inner].
struct GatherGeometry {
  TensorShape shape;
  int64_t outer = 1, bound = 0, n = 0, inner = 1;
};
absl::StatusOr<GatherGeometry> GatherGeometryOf(const TensorShape& params,
                                                const TensorShape& indices, int axis);
// GatherV2's axis input, canonical; INVALID_ARGUMENT unless it is a scalar
// in [-rank, rank).
absl::StatusOr<int> ReadGatherV2Axis(const Tensor& params, const Tensor& axis);
// UNIMPLEMENTED unless GatherV2's batch_dims attr is 0.
absl::Status CheckGatherV2BatchDims(const OpKernelConstruction& c);

// OneHot: output index [o, d, k] is on_value where indices[o, k] == d,
// off_value elsewhere; `axis` is the attr (checked by ReadOneHotAxis).
struct OneHotGeometry {
  TensorShape shape;
  int64_t outer = 1, depth = 0, inner = 1;
};
absl::StatusOr<int64_t> ReadOneHotAxis(const OpKernelConstruction& c);
absl::StatusOr<OneHotGeometry> ReadOneHot(const KernelContext& ctx, int64_t axis);

// Gather and GatherV2 (and ResourceGather): output[o, i, k] =
// params[o, indices[i], k], params viewed as [outer, params.dim(axis),
// inner]; INVALID_ARGUMENT naming `op` for an index out of range.
absl::Status GatherAlong(KernelContext& ctx, const Tensor& params, const Tensor& indices, int axis,
                         std::string_view op);

}  // namespace rill::transform_util

#endif  // RILL_KERNELS_COMMON_GATHER_GEOMETRY_H_
