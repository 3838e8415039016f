// Padding ops: Pad and PadV2 (a constant border) and MirrorPad (a border
// reflected from the input), with MirrorPadGrad. Names, args and attrs are
// TensorFlow's, so the Keras graphs that pad before a convolution run.
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

#include "graph/op_def_builder.h"
#include "graph/shape_inference.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/registry.h"

namespace rill {
namespace {

// The paddings' value, [rank][2], when known while building.
absl::StatusOr<std::optional<std::vector<int64_t>>> KnownPaddings(const InferenceContext& c,
                                                                  int rank) {
  const Tensor* paddings = c.input_tensor(1);
  if (paddings == nullptr) return std::nullopt;
  std::vector<int64_t> values(static_cast<size_t>(paddings->NumElements()));
  for (size_t i = 0; i < values.size(); ++i) {
    values[i] =
        paddings->dtype() == DT_INT64 ? paddings->data<int64_t>()[i] : paddings->data<int32_t>()[i];
    if (values[i] < 0) {
      return ShapeError("paddings must be non-negative, got %d at [%d, %d]", values[i], i / 2,
                        i % 2);
    }
  }
  if (static_cast<int64_t>(values.size()) != 2 * static_cast<int64_t>(rank)) {
    return ShapeError("paddings holds %d values for an input of rank %d (it must be [%d, 2])",
                      values.size(), rank, rank);
  }
  return values;
}

// Input i's dimensions, each grown (sign +1, Pad) or shrunk (-1,
// MirrorPadGrad) by its two paddings.
absl::Status PaddedShape(InferenceContext& c, int sign) {
  ASSIGN_OR_RETURN(const PartialTensorShape paddings, c.WithRank(c.input(1), 2, 1));
  if (paddings.dim_size(1) >= 0 && paddings.dim_size(1) != 2) {
    return ShapeError("paddings must be [rank, 2], got %s", paddings.DebugString());
  }
  PartialTensorShape input = c.input(0);
  if (input.unknown_rank() && paddings.dim_size(0) >= 0) {
    input = PartialTensorShape::UnknownOfRank(static_cast<int>(paddings.dim_size(0)));
  }
  if (input.unknown_rank()) {
    c.set_output(0, PartialTensorShape());
    return absl::OkStatus();
  }
  if (paddings.dim_size(0) >= 0 && paddings.dim_size(0) != input.dims()) {
    return ShapeError("paddings must be [%d, 2] for an input of rank %d, got shape %s",
                      input.dims(), input.dims(), paddings.DebugString());
  }
  ASSIGN_OR_RETURN(const std::optional<std::vector<int64_t>> known, KnownPaddings(c, input.dims()));
  std::vector<int64_t> dims;
  for (int d = 0; d < input.dims(); ++d) {
    const int64_t size = input.dim_size(d);
    if (!known.has_value() || size < 0) {
      dims.push_back(-1);
      continue;
    }
    const int64_t out = size + sign * ((*known)[2 * d] + (*known)[2 * d + 1]);
    if (out < 0) {
      return ShapeError("paddings %d and %d are larger than dimension %d (%d)", (*known)[2 * d],
                        (*known)[2 * d + 1], d, size);
    }
    dims.push_back(out);
  }
  return c.SetOutputDims(0, dims);
}

absl::Status PadShape(InferenceContext& c) { return PaddedShape(c, +1); }
absl::Status MirrorPadGradShape(InferenceContext& c) { return PaddedShape(c, -1); }

}  // namespace

void RegisterPadOps(OpRegistry& r) {
  r.Add(OpDefBuilder("Pad")
            .Input("input: T")
            .Input("paddings: Tpaddings")
            .Output("output: T")
            .Attr("T: type")
            .Attr("Tpaddings: {int32, int64} = DT_INT32")
            .SetShapeFn(PadShape));
  r.Add(OpDefBuilder("PadV2")
            .Input("input: T")
            .Input("paddings: Tpaddings")
            .Input("constant_values: T")
            .Output("output: T")
            .Attr("T: type")
            .Attr("Tpaddings: {int32, int64} = DT_INT32")
            .SetShapeFn(PadShape));
  // MirrorPadGrad takes the padded gradient back to the input's shape.
  using ShapeFn = absl::Status (*)(InferenceContext&);
  for (const auto& [name, shape] :
       {std::pair<const char*, ShapeFn>{"MirrorPad", PadShape},
        std::pair<const char*, ShapeFn>{"MirrorPadGrad", MirrorPadGradShape}}) {
    r.Add(OpDefBuilder(name)
              .Input("input: T")
              .Input("paddings: Tpaddings")
              .Output("output: T")
              .Attr("T: type")
              .Attr("Tpaddings: {int32, int64} = DT_INT32")
              .Attr("mode: {'REFLECT', 'SYMMETRIC'}")
              .SetShapeFn(shape));
  }
}

}  // namespace rill
