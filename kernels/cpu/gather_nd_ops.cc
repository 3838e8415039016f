// CPU kernels of GatherNd, which takes the slices of a tensor that rows of
// indices name, and ScatterNd, its gradient: slices summed into zeros at
// the positions rows of indices name.
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

// How rows of indices address a tensor of shape `shape`: each row holds
// `depth` coordinates, which pick a slice of `slice` elements.
struct NdGeometry {
  int64_t depth = 0;
  int64_t rows = 0;
  int64_t slice = 1;
  std::vector<int64_t> strides;  // In slices, over the first `depth` dims.
};

absl::StatusOr<NdGeometry> GeometryOf(const char* op, const TensorShape& shape,
                                      const Tensor& indices) {
  if (indices.dims() < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: indices must have at least one dimension, got a scalar", op));
  }
  NdGeometry g;
  g.depth = indices.dim_size(indices.dims() - 1);
  if (g.depth > shape.dims()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: rows of indices hold %d coordinates, more than the rank of shape %s",
                        op, g.depth, shape.DebugString()));
  }
  g.rows = 1;
  for (int d = 0; d + 1 < indices.dims(); ++d) g.rows *= indices.dim_size(d);
  for (int d = static_cast<int>(g.depth); d < shape.dims(); ++d) g.slice *= shape.dim_size(d);
  g.strides.assign(static_cast<size_t>(g.depth), 1);
  for (int64_t d = g.depth - 2; d >= 0; --d)
    g.strides[d] = g.strides[d + 1] * shape.dim_size(d + 1);
  return g;
}

// The slice that row `r` of `indices` names, or an error quoting the row.
template <typename Index>
absl::StatusOr<int64_t> SliceOf(const char* op, const NdGeometry& g, const TensorShape& shape,
                                const Tensor& indices, int64_t r) {
  const Index* row = indices.data<Index>() + r * g.depth;
  int64_t at = 0;
  for (int64_t k = 0; k < g.depth; ++k) {
    if (row[k] < 0 || row[k] >= shape.dim_size(static_cast<int>(k))) {
      std::vector<int64_t> coords(row, row + g.depth);
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: indices[%d] = [%s] does not index into shape %s", op, r,
                          absl::StrJoin(coords, ", "), shape.DebugString()));
    }
    at += static_cast<int64_t>(row[k]) * g.strides[k];
  }
  return at;
}

absl::StatusOr<int64_t> SliceAt(const char* op, const NdGeometry& g, const TensorShape& shape,
                                const Tensor& indices, int64_t r) {
  return indices.dtype() == DT_INT64 ? SliceOf<int64_t>(op, g, shape, indices, r)
                                     : SliceOf<int32_t>(op, g, shape, indices, r);
}

// Slices are copied as bytes: any type whose elements are plain bytes.
class GatherNdOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& params = ctx.input(0);
    const Tensor& indices = ctx.input(1);
    const int64_t bytes = DataTypeSize(params.dtype());
    if (bytes == 0) {
      return absl::UnimplementedError(
          absl::StrFormat("GatherNd of %s is not supported", DataTypeString(params.dtype())));
    }
    ASSIGN_OR_RETURN(const NdGeometry g, GeometryOf("GatherNd", params.shape(), indices));
    TensorShape out_shape;
    for (int d = 0; d + 1 < indices.dims(); ++d) out_shape.AddDim(indices.dim_size(d));
    for (int d = static_cast<int>(g.depth); d < params.dims(); ++d) {
      out_shape.AddDim(params.dim_size(d));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, out_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    const char* src = static_cast<const char*>(params.raw_data());
    char* dst = static_cast<char*>(out->raw_data());
    const int64_t slice_bytes = g.slice * bytes;
    for (int64_t r = 0; r < g.rows; ++r) {
      ASSIGN_OR_RETURN(const int64_t at, SliceAt("GatherNd", g, params.shape(), indices, r));
      std::memcpy(dst + r * slice_bytes, src + at * slice_bytes, static_cast<size_t>(slice_bytes));
    }
    return absl::OkStatus();
  }
};

template <typename T>
class ScatterNdOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& indices = ctx.input(0);
    const Tensor& updates = ctx.input(1);
    const Tensor& shape_tensor = ctx.input(2);
    if (shape_tensor.dims() != 1) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ScatterNd: shape must be a vector, got shape %s", shape_tensor.shape().DebugString()));
    }
    TensorShape shape;
    for (int64_t i = 0; i < shape_tensor.NumElements(); ++i) {
      const int64_t dim = shape_tensor.dtype() == DT_INT64 ? shape_tensor.data<int64_t>()[i]
                                                           : shape_tensor.data<int32_t>()[i];
      if (dim < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("ScatterNd: shape[%d] = %d is negative", i, dim));
      }
      shape.AddDim(dim);
    }
    ASSIGN_OR_RETURN(const NdGeometry g, GeometryOf("ScatterNd", shape, indices));
    TensorShape expected;
    for (int d = 0; d + 1 < indices.dims(); ++d) expected.AddDim(indices.dim_size(d));
    for (int d = static_cast<int>(g.depth); d < shape.dims(); ++d)
      expected.AddDim(shape.dim_size(d));
    if (updates.shape() != expected) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "ScatterNd: updates must have shape %s for indices of shape %s into shape %s, got %s",
          expected.DebugString(), indices.shape().DebugString(), shape.DebugString(),
          updates.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    T* dst = out->data<T>();
    std::fill_n(dst, out->NumElements(), T{});
    const T* src = updates.data<T>();
    for (int64_t r = 0; r < g.rows && g.slice > 0; ++r) {
      ASSIGN_OR_RETURN(const int64_t at, SliceAt("ScatterNd", g, shape, indices, r));
      for (int64_t i = 0; i < g.slice; ++i) dst[at * g.slice + i] += src[r * g.slice + i];
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterCpuGatherNdKernels(KernelRegistry& r) {
  r.Register(KernelDef("GatherNd").Device(kDeviceCpu), MakeKernel<GatherNdOp>);
  RegisterForTypes<ScatterNdOp, float, double, int32_t, int64_t>(r, kDeviceCpu, "ScatterNd");
}

}  // namespace rill
