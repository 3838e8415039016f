// Array ops that index with integer tensors: Gather, GatherV2, GatherNd,
// ScatterNd, OneHot and DynamicStitch; and Where, which makes such indices
// from a mask.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/registry.h"
#include "ops/shape_fn_util.h"

namespace rill {
namespace {

using shape_util::CanonicalAxis;
using shape_util::KnownScalar;

absl::Status GatherShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape params, c.WithRankAtLeast(c.input(0), 1, 0));
  const PartialTensorShape& indices = c.input(1);
  if (params.unknown_rank() || indices.unknown_rank()) return absl::OkStatus();
  std::vector<int64_t> dims(indices.dim_sizes().begin(), indices.dim_sizes().end());
  dims.insert(dims.end(), params.dim_sizes().begin() + 1, params.dim_sizes().end());
  return c.SetOutputDims(0, dims);
}

absl::Status GatherV2Shape(InferenceContext& c) {
  const PartialTensorShape& params = c.input(0);
  const PartialTensorShape& indices = c.input(1);
  ASSIGN_OR_RETURN(std::optional<int64_t> axis_value, KnownScalar(c, 2, "GatherV2: axis"));
  ASSIGN_OR_RETURN(int64_t batch_dims, c.GetIntAttr("batch_dims"));
  if (params.unknown_rank() || indices.unknown_rank()) return absl::OkStatus();
  if (batch_dims < 0) batch_dims += indices.dims();
  if (batch_dims < 0 || batch_dims > indices.dims()) {
    return ShapeError("GatherV2: batch_dims must be in [%d, %d], got %d", -indices.dims(),
                      indices.dims(), batch_dims);
  }
  if (!axis_value) {
    const int64_t rank = params.dims() + indices.dims() - 1 - batch_dims;
    if (rank >= 0) c.set_output(0, PartialTensorShape::UnknownOfRank(static_cast<int>(rank)));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(*axis_value, params.dims(), "GatherV2: axis"));
  if (batch_dims > axis) {
    return ShapeError("GatherV2: batch_dims %d must be <= axis %d", batch_dims, axis);
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < axis; ++i) {
    int64_t size = params.dim_size(i);
    if (i < batch_dims) {
      auto merged = c.MergeDim(size, indices.dim_size(i));
      if (!merged.ok()) {
        return ShapeError("GatherV2: batch dimension %d of params (%d) and indices (%d) differ", i,
                          size, indices.dim_size(i));
      }
      size = *merged;
    }
    dims.push_back(size);
  }
  dims.insert(dims.end(), indices.dim_sizes().begin() + batch_dims, indices.dim_sizes().end());
  dims.insert(dims.end(), params.dim_sizes().begin() + axis + 1, params.dim_sizes().end());
  return c.SetOutputDims(0, dims);
}

absl::Status OneHotShape(InferenceContext& c) {
  const PartialTensorShape& indices = c.input(0);
  for (int i = 1; i <= 3; ++i) RETURN_IF_ERROR(c.WithRank(c.input(i), 0, i).status());
  ASSIGN_OR_RETURN(int64_t axis, c.GetIntAttr("axis"));
  if (axis < -1) return ShapeError("OneHot: axis must be >= -1, got %d", axis);
  ASSIGN_OR_RETURN(std::optional<int64_t> depth, KnownScalar(c, 1, "OneHot: depth"));
  if (depth && *depth < 0) return ShapeError("OneHot: depth must be >= 0, got %d", *depth);
  if (indices.unknown_rank()) return absl::OkStatus();
  if (axis > indices.dims()) {
    return ShapeError("OneHot: axis %d is out of range for indices of rank %d", axis,
                      indices.dims());
  }
  std::vector<int64_t> dims(indices.dim_sizes().begin(), indices.dim_sizes().end());
  dims.insert(axis == -1 ? dims.end() : dims.begin() + axis, depth.value_or(-1));
  return c.SetOutputDims(0, dims);
}

// Each data[i] is indices[i]'s shape followed by the element shape shared by
// every pair; the output is [max index + 1] followed by that element shape.
absl::Status DynamicStitchShape(InferenceContext& c) {
  const int n = c.num_inputs() / 2;
  PartialTensorShape element;
  bool all_indices_known = true;
  int64_t max_index = -1;
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& indices = c.input(i);
    const PartialTensorShape& data = c.input(n + i);
    const Tensor* values = c.input_tensor(i);
    if (values != nullptr && values->dtype() == DT_INT32) {
      for (int32_t v : absl::MakeConstSpan(values->data<int32_t>(), values->NumElements())) {
        max_index = std::max<int64_t>(max_index, v);
      }
    } else {
      all_indices_known = false;
    }
    if (indices.unknown_rank() || data.unknown_rank()) continue;
    if (data.dims() < indices.dims() ||
        !PartialTensorShape(data.dim_sizes().subspan(0, indices.dims()))
             .IsCompatibleWith(indices)) {
      return ShapeError("DynamicStitch: data[%d] of shape %s does not start with the shape %s of "
                        "indices[%d]",
                        i, data.DebugString(), indices.DebugString(), i);
    }
    auto merged = c.Merge(element, PartialTensorShape(data.dim_sizes().subspan(indices.dims())));
    if (!merged.ok()) {
      return ShapeError("DynamicStitch: data[%d] of shape %s has another element shape than the "
                        "data before it: %s",
                        i, data.DebugString(), merged.status().message());
    }
    element = *merged;
  }
  if (element.unknown_rank()) return absl::OkStatus();
  std::vector<int64_t> dims = {all_indices_known ? max_index + 1 : -1};
  dims.insert(dims.end(), element.dim_sizes().begin(), element.dim_sizes().end());
  return c.SetOutputDims(0, dims);
}

// One row of coordinates per true element: [?, rank of the input].
absl::Status WhereShape(InferenceContext& c) {
  const PartialTensorShape& input = c.input(0);
  c.set_output(0, PartialTensorShape({-1, input.unknown_rank() ? -1 : input.dims()}));
  return absl::OkStatus();
}

// GatherNd: indices' shape without its last dimension (the coordinates of
// a row), then params' dimensions that the coordinates do not cover.
absl::Status GatherNdShape(InferenceContext& c) {
  const PartialTensorShape& params = c.input(0);
  const PartialTensorShape& indices = c.input(1);
  if (indices.dims() == 0) return ShapeError("indices must have at least one dimension");
  if (params.unknown_rank() || indices.unknown_rank() ||
      indices.dim_size(indices.dims() - 1) < 0) {
    c.set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  const int64_t depth = indices.dim_size(indices.dims() - 1);
  if (depth > params.dims()) {
    return ShapeError("rows of indices hold %d coordinates, more than params' rank %d", depth,
                      params.dims());
  }
  std::vector<int64_t> dims(indices.dim_sizes().begin(), indices.dim_sizes().end() - 1);
  dims.insert(dims.end(), params.dim_sizes().begin() + depth, params.dim_sizes().end());
  return c.SetOutputDims(0, dims);
}

absl::Status ScatterNdShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape shape, c.MakeShapeFromShapeTensor(2));
  c.set_output(0, std::move(shape));
  return absl::OkStatus();
}

}  // namespace

void RegisterGatherOps(OpRegistry& r) {
  r.Add(OpDefBuilder("GatherNd").Input("params: Tparams").Input("indices: Tindices")
            .Output("output: Tparams").Attr("Tparams: type")
            .Attr("Tindices: {int16, int32, int64}").SetShapeFn(GatherNdShape));
  r.Add(OpDefBuilder("ScatterNd").Input("indices: Tindices").Input("updates: T")
            .Input("shape: Tindices").Output("output: T").Attr("T: type")
            .Attr("Tindices: {int16, int32, int64}").SetShapeFn(ScatterNdShape));
  r.Add(OpDefBuilder("Gather").Input("params: Tparams").Input("indices: Tindices")
            .Output("output: Tparams").Attr("validate_indices: bool = true").Attr("Tparams: type")
            .Attr("Tindices: {int32, int64}").SetShapeFn(GatherShape));
  r.Add(OpDefBuilder("GatherV2").Input("params: Tparams").Input("indices: Tindices")
            .Input("axis: Taxis").Output("output: Tparams").Attr("batch_dims: int = 0")
            .Attr("Tparams: type").Attr("Tindices: {int16, int32, int64}")
            .Attr("Taxis: {int32, int64}").SetShapeFn(GatherV2Shape));
  r.Add(OpDefBuilder("OneHot").Input("indices: TI").Input("depth: int32").Input("on_value: T")
            .Input("off_value: T").Output("output: T").Attr("axis: int = -1").Attr("T: type")
            .Attr("TI: {uint8, int8, int32, int64} = DT_INT64").SetShapeFn(OneHotShape));
  r.Add(OpDefBuilder("DynamicStitch").Input("indices: N * int32").Input("data: N * T")
            .Output("merged: T").Attr("N: int >= 1").Attr("T: type")
            .SetShapeFn(DynamicStitchShape));
  r.Add(OpDefBuilder("Where").Input("input: T").Output("index: int64")
            .Attr("T: {numbertype, bool} = DT_BOOL").SetShapeFn(WhereShape));
}

}  // namespace rill
