// Axis, dimension-product and known-scalar helpers for array shape functions.
#include "ops/shape_fn_util.h"

#include <limits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"

namespace rill::shape_util {

std::string FormatValues(const std::vector<int64_t>& values) {
  return absl::StrCat("[", absl::StrJoin(values, ","), "]");
}

absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view what) {
  if (axis < -rank || axis >= rank) {
    return ShapeError("%s %d is out of range [%d, %d)", what, axis, -rank, rank);
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

absl::StatusOr<int64_t> MultiplyDims(int64_t a, int64_t b) {
  if (a != 0 && b > std::numeric_limits<int64_t>::max() / a) {
    return ShapeError("a shape of %d * %d elements overflows int64", a, b);
  }
  return a * b;
}

absl::StatusOr<std::optional<int64_t>> KnownScalar(const InferenceContext& c, int input,
                                                   std::string_view what) {
  ASSIGN_OR_RETURN(std::optional<std::vector<int64_t>> values, c.InputAsInt64s(input));
  if (!values) return std::optional<int64_t>();
  if (values->size() != 1) {
    return ShapeError("%s must hold one value, got %s", what, FormatValues(*values));
  }
  return std::optional<int64_t>(values->front());
}

absl::StatusOr<PartialTensorShape> WithDim(const PartialTensorShape& shape, int axis,
                                           int64_t size) {
  std::vector<int64_t> dims(shape.dim_sizes().begin(), shape.dim_sizes().end());
  dims[axis] = size;
  return PartialTensorShape::Create(dims);
}

absl::StatusOr<int64_t> AddDims(int64_t a, int64_t b, std::string_view what) {
  int64_t sum;
  if (__builtin_add_overflow(a, b, &sum)) {
    return ShapeError("%s: a size of %d + %d overflows int64", what, a, b);
  }
  return sum;
}

}  // namespace rill::shape_util
