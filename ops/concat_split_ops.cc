// Array ops that join tensors along an axis or cut one into pieces:
// ConcatV2, Pack, Split, SplitV and Unpack.
#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "ops/shape_fn_util.h"

namespace rill {
namespace {

using shape_util::AddDims;
using shape_util::CanonicalAxis;
using shape_util::FormatValues;
using shape_util::KnownScalar;
using shape_util::WithDim;

absl::Status SplitShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(1);
  const int num_split = c.num_outputs();
  ASSIGN_OR_RETURN(std::optional<int64_t> split_dim, KnownScalar(c, 0, "Split: split_dim"));
  if (in.unknown_rank()) return absl::OkStatus();
  PartialTensorShape out = PartialTensorShape::UnknownOfRank(in.dims());
  if (split_dim) {
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(*split_dim, in.dims(), "Split: split_dim"));
    const int64_t size = in.dim_size(axis);
    if (size >= 0 && size % num_split != 0) {
      return ShapeError("Split: dimension %d of size %d is not divisible by num_split %d", axis,
                        size, num_split);
    }
    ASSIGN_OR_RETURN(out, WithDim(in, axis, size < 0 ? -1 : size / num_split));
  }
  for (int i = 0; i < num_split; ++i) c.set_output(i, out);
  return absl::OkStatus();
}

absl::Status SplitVShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  const int num_split = c.num_outputs();
  ASSIGN_OR_RETURN(PartialTensorShape sizes_shape, c.WithRank(c.input(1), 1, 1));
  if (sizes_shape.dim_size(0) >= 0 && sizes_shape.dim_size(0) != num_split) {
    return ShapeError("SplitV: size_splits has %d entries but num_split is %d",
                      sizes_shape.dim_size(0), num_split);
  }
  ASSIGN_OR_RETURN(std::optional<int64_t> split_dim, KnownScalar(c, 2, "SplitV: split_dim"));
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> sizes, c.InputAsInt64s(1));
  if (in.unknown_rank()) return absl::OkStatus();
  if (!split_dim) {
    const PartialTensorShape out = PartialTensorShape::UnknownOfRank(in.dims());
    for (int i = 0; i < num_split; ++i) c.set_output(i, out);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(*split_dim, in.dims(), "SplitV: split_dim"));
  if (!sizes) {
    ASSIGN_OR_RETURN(const PartialTensorShape out, WithDim(in, axis, -1));
    for (int i = 0; i < num_split; ++i) c.set_output(i, out);
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(sizes->size()) != num_split) {
    return ShapeError("SplitV: size_splits has %d entries but num_split is %d", sizes->size(),
                      num_split);
  }
  const int64_t total = in.dim_size(axis);
  int inferred = -1;
  int64_t sum = 0;
  for (int i = 0; i < num_split; ++i) {
    const int64_t s = (*sizes)[i];
    if (s == -1 && inferred < 0) {
      inferred = i;
    } else if (s < 0) {
      return ShapeError("SplitV: size_splits may hold one -1 and otherwise sizes >= 0, got %s",
                        FormatValues(*sizes));
    } else {
      ASSIGN_OR_RETURN(sum, AddDims(sum, s, "SplitV: size_splits"));
    }
  }
  if (total >= 0 && (inferred < 0 ? sum != total : sum > total)) {
    return ShapeError("SplitV: size_splits %s do not add up to dimension %d of size %d",
                      FormatValues(*sizes), axis, total);
  }
  for (int i = 0; i < num_split; ++i) {
    int64_t s = (*sizes)[i];
    if (i == inferred) s = total < 0 ? -1 : total - sum;
    ASSIGN_OR_RETURN(PartialTensorShape out, WithDim(in, axis, s));
    c.set_output(i, std::move(out));
  }
  return absl::OkStatus();
}

absl::Status ConcatV2Shape(InferenceContext& c) {
  const int n = c.num_inputs() - 1;
  ASSIGN_OR_RETURN(std::optional<int64_t> axis_value, KnownScalar(c, n, "ConcatV2: axis"));
  PartialTensorShape merged;
  for (int i = 0; i < n; ++i) {
    ASSIGN_OR_RETURN(PartialTensorShape in, c.WithRankAtLeast(c.input(i), 1, i));
    if (in.unknown_rank()) continue;
    if (!merged.unknown_rank() && merged.dims() != in.dims()) {
      return ShapeError("ConcatV2: all values must have the same rank, value 0..%d has rank %d "
                        "and value %d has rank %d",
                        i - 1, merged.dims(), i, in.dims());
    }
    if (merged.unknown_rank()) merged = PartialTensorShape::UnknownOfRank(in.dims());
  }
  if (merged.unknown_rank()) return absl::OkStatus();
  if (!axis_value) {
    c.set_output(0, merged);
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(*axis_value, merged.dims(), "ConcatV2: axis"));
  int64_t concat_size = 0;
  for (int i = 0; i < n; ++i) {
    const PartialTensorShape& in = c.input(i);
    if (in.unknown_rank()) {
      concat_size = -1;
      continue;
    }
    const int64_t size = in.dim_size(axis);
    if (concat_size < 0 || size < 0) {
      concat_size = -1;
    } else {
      ASSIGN_OR_RETURN(concat_size, AddDims(concat_size, size, "ConcatV2: the concatenation"));
    }
    ASSIGN_OR_RETURN(const PartialTensorShape merged_rest, WithDim(merged, axis, -1));
    ASSIGN_OR_RETURN(const PartialTensorShape in_rest, WithDim(in, axis, -1));
    auto other_dims = c.Merge(merged_rest, in_rest);
    if (!other_dims.ok()) {
      return ShapeError("ConcatV2: value %d of shape %s does not match the others outside axis "
                        "%d: %s",
                        i, in.DebugString(), axis, other_dims.status().message());
    }
    merged = *other_dims;
  }
  ASSIGN_OR_RETURN(PartialTensorShape out, WithDim(merged, axis, concat_size));
  c.set_output(0, std::move(out));
  return absl::OkStatus();
}

absl::Status PackShape(InferenceContext& c) {
  PartialTensorShape merged;
  for (int i = 0; i < c.num_inputs(); ++i) {
    auto next = c.Merge(merged, c.input(i));
    if (!next.ok()) {
      return ShapeError("Pack: value %d of shape %s does not match the values before it: %s", i,
                        c.input(i).DebugString(), next.status().message());
    }
    merged = *next;
  }
  if (merged.unknown_rank()) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t axis_attr, c.GetIntAttr("axis"));
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_attr, merged.dims() + 1, "Pack: axis"));
  std::vector<int64_t> dims(merged.dim_sizes().begin(), merged.dim_sizes().end());
  dims.insert(dims.begin() + axis, c.num_inputs());
  return c.SetOutputDims(0, dims);
}

absl::Status UnpackShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  if (in.unknown_rank()) return absl::OkStatus();
  ASSIGN_OR_RETURN(int64_t axis_attr, c.GetIntAttr("axis"));
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(axis_attr, in.dims(), "Unpack: axis"));
  const int64_t size = in.dim_size(axis);
  if (size >= 0 && size != c.num_outputs()) {
    return ShapeError("Unpack: dimension %d has size %d but num is %d", axis, size,
                      c.num_outputs());
  }
  std::vector<int64_t> dims(in.dim_sizes().begin(), in.dim_sizes().end());
  dims.erase(dims.begin() + axis);
  for (int i = 0; i < c.num_outputs(); ++i) c.set_output(i, PartialTensorShape(dims));
  return absl::OkStatus();
}

}  // namespace

void RegisterConcatSplitOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Split").Input("split_dim: int32").Input("value: T")
            .Output("output: num_split * T").Attr("num_split: int >= 1").Attr("T: type")
            .SetShapeFn(SplitShape));
  r.Add(OpDefBuilder("SplitV").Input("value: T").Input("size_splits: Tlen")
            .Input("split_dim: int32").Output("output: num_split * T")
            .Attr("num_split: int >= 1").Attr("T: type")
            .Attr("Tlen: {int8, int32, int64} = DT_INT64").SetShapeFn(SplitVShape));
  r.Add(OpDefBuilder("ConcatV2").Input("values: N * T").Input("axis: Tidx").Output("output: T")
            .Attr("N: int >= 2").Attr("T: type").Attr("Tidx: {int32, int64} = DT_INT32")
            .SetShapeFn(ConcatV2Shape));
  r.Add(OpDefBuilder("Pack").Input("values: N * T").Output("output: T").Attr("N: int >= 1")
            .Attr("T: type").Attr("axis: int = 0").SetShapeFn(PackShape));
  r.Add(OpDefBuilder("Unpack").Input("value: T").Output("output: num * T")
            .Attr("num: int >= 0").Attr("T: type").Attr("axis: int = 0").SetShapeFn(UnpackShape));
}

}  // namespace rill
