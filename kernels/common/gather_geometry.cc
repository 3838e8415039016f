#include "kernels/common/gather_geometry.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"

namespace rill::transform_util {

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

// output[o, i, k] = params[o, indices[i], k] with params viewed as
// [outer, params.dim(axis), inner].
absl::Status GatherAlong(KernelContext& ctx, const Tensor& params, const Tensor& indices_t,
                         int axis, std::string_view op) {
  ASSIGN_OR_RETURN(std::vector<int64_t> indices, ReadIndices(indices_t, op));
  const int64_t bound = params.dim_size(axis);
  for (size_t i = 0; i < indices.size(); ++i) {
    if (indices[i] < 0 || indices[i] >= bound) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: indices[%d] = %d is not in [0, %d)", op, i, indices[i], bound));
    }
  }
  ASSIGN_OR_RETURN(const GatherGeometry g,
                   GatherGeometryOf(params.shape(), indices_t.shape(), axis));
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.shape));
  if (out->NumElements() == 0) return absl::OkStatus();
  return DispatchType(
      params.dtype(),
      [&]<typename T>() {
        const T* src = params.data<T>();
        T* dst = out->data<T>();
        for (int64_t o = 0; o < g.outer; ++o) {
          for (int64_t i = 0; i < g.n; ++i) {
            std::copy_n(src + (o * bound + indices[i]) * g.inner, g.inner,
                        dst + (o * g.n + i) * g.inner);
          }
        }
        return absl::OkStatus();
      },
      [&] { return Unsupported(op, params.dtype()); });
}

}  // namespace rill::transform_util
