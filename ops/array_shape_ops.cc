// Array ops that read or change a tensor's shape without cutting or joining
// it: Shape, Size, Rank, Reshape, Transpose, ExpandDims, Squeeze, Fill,
// Tile and BroadcastGradientArgs.
#include <algorithm>
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

using shape_util::CanonicalAxis;
using shape_util::FormatValues;
using shape_util::KnownScalar;
using shape_util::MultiplyDims;

absl::Status ShapeShape(InferenceContext& c) {
  c.set_output(0, PartialTensorShape({c.input(0).dims()}));
  return absl::OkStatus();
}

absl::Status ReshapeShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(1), 1, 1).status());
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> target, c.InputAsInt64s(1));
  if (!target) {
    ASSIGN_OR_RETURN(PartialTensorShape out, c.MakeShapeFromShapeTensor(1));
    c.set_output(0, out);
    return absl::OkStatus();
  }
  std::vector<int64_t> dims = *target;
  int inferred = -1;
  int64_t known = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == -1) {
      if (inferred >= 0) {
        return ShapeError("Reshape: only one dimension of the new shape may be -1, got %d and %d",
                          inferred, i);
      }
      inferred = static_cast<int>(i);
    } else if (dims[i] < -1) {
      return ShapeError("Reshape: dimension %d of the new shape is %d", i, dims[i]);
    } else {
      ASSIGN_OR_RETURN(known, MultiplyDims(known, dims[i]));
    }
  }
  ASSIGN_OR_RETURN(const PartialTensorShape requested, PartialTensorShape::Create(dims));
  const int64_t count = c.input(0).num_elements();
  if (count >= 0) {
    if (inferred < 0 && count != known) {
      return ShapeError(
          "Reshape: cannot reshape a tensor with %d elements to shape %s (%d elements)", count,
          requested.DebugString(), known);
    }
    if (inferred >= 0 && known > 0) {
      if (count % known != 0) {
        return ShapeError(
            "Reshape: cannot reshape a tensor with %d elements to shape %s: %d is not a multiple "
            "of %d",
            count, requested.DebugString(), count, known);
      }
      dims[inferred] = count / known;
    }
  }
  return c.SetOutputDims(0, dims);
}

absl::Status TransposeShape(InferenceContext& c) {
  ASSIGN_OR_RETURN(PartialTensorShape perm_shape, c.WithRank(c.input(1), 1, 1));
  const PartialTensorShape& in = c.input(0);
  int64_t rank = in.dims();
  const int64_t perm_length = perm_shape.dim_size(0);
  if (rank >= 0 && perm_length >= 0 && rank != perm_length) {
    return ShapeError("Transpose: perm has %d entries but the input has rank %d", perm_length,
                      rank);
  }
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> perm, c.InputAsInt64s(1));
  if (rank < 0) rank = perm ? static_cast<int64_t>(perm->size()) : perm_length;
  // A perm of one entry fits both a scalar and a vector, which Transpose
  // returns unchanged.
  if (rank < 0 || (in.unknown_rank() && rank < 2)) return absl::OkStatus();
  if (!perm) {
    c.set_output(0, PartialTensorShape::UnknownOfRank(static_cast<int>(rank)));
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(perm->size()) != rank) {
    return ShapeError("Transpose: perm has %d entries but the input has rank %d", perm->size(),
                      rank);
  }
  std::vector<bool> seen(perm->size(), false);
  std::vector<int64_t> dims;
  for (int64_t p : *perm) {
    if (p < 0 || p >= rank || seen[p]) {
      return ShapeError("Transpose: perm %s is not a permutation of [0, %d)",
                        FormatValues(*perm), rank);
    }
    seen[p] = true;
    dims.push_back(in.unknown_rank() ? -1 : in.dim_size(static_cast<int>(p)));
  }
  c.set_output(0, PartialTensorShape(dims));
  return absl::OkStatus();
}

absl::Status ExpandDimsShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  ASSIGN_OR_RETURN(std::optional<int64_t> dim, KnownScalar(c, 1, "ExpandDims: dim"));
  if (in.unknown_rank()) return absl::OkStatus();
  if (!dim) {
    c.set_output(0, PartialTensorShape::UnknownOfRank(in.dims() + 1));
    return absl::OkStatus();
  }
  ASSIGN_OR_RETURN(int axis, CanonicalAxis(*dim, in.dims() + 1, "ExpandDims: dim"));
  std::vector<int64_t> dims(in.dim_sizes().begin(), in.dim_sizes().end());
  dims.insert(dims.begin() + axis, 1);
  return c.SetOutputDims(0, dims);
}

absl::Status SqueezeShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  if (in.unknown_rank()) return absl::OkStatus();
  ASSIGN_OR_RETURN(std::vector<int64_t> squeeze_dims, c.GetIntListAttr("squeeze_dims"));
  std::vector<bool> listed(in.dims(), false);
  for (int64_t d : squeeze_dims) {
    ASSIGN_OR_RETURN(int axis, CanonicalAxis(d, in.dims(), "Squeeze: squeeze_dims entry"));
    listed[axis] = true;
  }
  std::vector<int64_t> dims;
  for (int i = 0; i < in.dims(); ++i) {
    const int64_t size = in.dim_size(i);
    if (squeeze_dims.empty()) {
      // An unknown dimension might be 1, so the rank is not known.
      if (size < 0) return absl::OkStatus();
      if (size != 1) dims.push_back(size);
    } else if (listed[i]) {
      if (size >= 0 && size != 1) {
        return ShapeError("Squeeze: cannot squeeze dimension %d of size %d (expected 1)", i, size);
      }
    } else {
      dims.push_back(size);
    }
  }
  c.set_output(0, PartialTensorShape(dims));
  return absl::OkStatus();
}

absl::Status FillShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(0), 1, 0).status());
  RETURN_IF_ERROR(c.WithRank(c.input(1), 0, 1).status());
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> dims, c.InputAsInt64s(0));
  if (dims) {
    for (int64_t d : *dims) {
      if (d < 0) return ShapeError("Fill: dims must be >= 0, got %d", d);
    }
  }
  ASSIGN_OR_RETURN(PartialTensorShape out, c.MakeShapeFromShapeTensor(0));
  c.set_output(0, out);
  return absl::OkStatus();
}

absl::Status TileShape(InferenceContext& c) {
  const PartialTensorShape& in = c.input(0);
  ASSIGN_OR_RETURN(PartialTensorShape multiples_shape, c.WithRank(c.input(1), 1, 1));
  int64_t rank = in.dims();
  const int64_t length = multiples_shape.dim_size(0);
  if (rank >= 0 && length >= 0 && rank != length) {
    return ShapeError("Tile: multiples has %d entries but the input has rank %d", length, rank);
  }
  if (rank < 0) rank = length;
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> multiples, c.InputAsInt64s(1));
  if (!multiples) {
    if (rank >= 0) c.set_output(0, PartialTensorShape::UnknownOfRank(static_cast<int>(rank)));
    return absl::OkStatus();
  }
  if (static_cast<int64_t>(multiples->size()) != rank) {
    return ShapeError("Tile: multiples has %d entries but the input has rank %d",
                      multiples->size(), rank);
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < multiples->size(); ++i) {
    const int64_t m = (*multiples)[i];
    if (m < 0) return ShapeError("Tile: multiples must be >= 0, got %d", m);
    const int64_t size = in.unknown_rank() ? -1 : in.dim_size(static_cast<int>(i));
    if (m == 0 || size >= 0) {
      ASSIGN_OR_RETURN(int64_t product, MultiplyDims(m, std::max<int64_t>(size, 0)));
      dims.push_back(product);
    } else {
      dims.push_back(-1);
    }
  }
  // Each tiled dimension fits in int64; their product may not.
  return c.SetOutputDims(0, dims);
}

absl::Status BroadcastGradientArgsShape(InferenceContext& c) {
  RETURN_IF_ERROR(c.WithRank(c.input(0), 1, 0).status());
  RETURN_IF_ERROR(c.WithRank(c.input(1), 1, 1).status());
  c.set_output(0, PartialTensorShape({-1}));
  c.set_output(1, PartialTensorShape({-1}));
  return absl::OkStatus();
}

}  // namespace

void RegisterArrayShapeOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Shape").Input("input: T").Output("output: out_type").Attr("T: type")
            .Attr("out_type: {int32, int64} = DT_INT32").SetShapeFn(ShapeShape));
  r.Add(OpDefBuilder("Size").Input("input: T").Output("output: out_type").Attr("T: type")
            .Attr("out_type: {int32, int64} = DT_INT32").SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("Rank").Input("input: T").Output("output: int32").Attr("T: type")
            .SetShapeFn(shape_fn::Scalar));
  r.Add(OpDefBuilder("Reshape").Input("tensor: T").Input("shape: Tshape").Output("output: T")
            .Attr("T: type").Attr("Tshape: {int32, int64} = DT_INT32").SetShapeFn(ReshapeShape));
  r.Add(OpDefBuilder("Transpose").Input("x: T").Input("perm: Tperm").Output("y: T")
            .Attr("T: type").Attr("Tperm: {int32, int64} = DT_INT32").SetShapeFn(TransposeShape));
  r.Add(OpDefBuilder("ExpandDims").Input("input: T").Input("dim: Tdim").Output("output: T")
            .Attr("T: type").Attr("Tdim: {int32, int64} = DT_INT32").SetShapeFn(ExpandDimsShape));
  r.Add(OpDefBuilder("Squeeze").Input("input: T").Output("output: T").Attr("T: type")
            .Attr("squeeze_dims: list(int) >= 0 = []").SetShapeFn(SqueezeShape));
  r.Add(OpDefBuilder("Fill").Input("dims: index_type").Input("value: T").Output("output: T")
            .Attr("T: type").Attr("index_type: {int32, int64} = DT_INT32").SetShapeFn(FillShape));
  r.Add(OpDefBuilder("ReverseV2").Input("tensor: T").Input("axis: Tidx").Output("output: T")
            .Attr("Tidx: {int32, int64} = DT_INT32")
            .Attr("T: {uint8, int8, uint16, int16, int32, uint32, int64, uint64, bool, bfloat16, "
                  "half, float, double, complex64, complex128, string}")
            .SetShapeFn(shape_fn::Unchanged));
  r.Add(OpDefBuilder("Tile").Input("input: T").Input("multiples: Tmultiples").Output("output: T")
            .Attr("T: type").Attr("Tmultiples: {int32, int64} = DT_INT32").SetShapeFn(TileShape));
  r.Add(OpDefBuilder("BroadcastGradientArgs").Input("s0: T").Input("s1: T").Output("r0: T")
            .Output("r1: T").Attr("T: {int32, int64} = DT_INT32")
            .SetShapeFn(BroadcastGradientArgsShape));
}

}  // namespace rill
