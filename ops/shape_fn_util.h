// Helpers the array ops' shape functions share: axes in [-rank, rank),
// overflow-checked dimension products and inputs holding one integer.
#ifndef RILL_OPS_SHAPE_FN_UTIL_H_
#define RILL_OPS_SHAPE_FN_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/shape_inference.h"
#include "graph/tensor_shape.h"

namespace rill::shape_util {

// "[1,-3,2]": values that may not form a valid shape, for messages.
std::string FormatValues(const std::vector<int64_t>& values);

// Maps an axis in [-rank, rank) to [0, rank); INVALID_ARGUMENT naming
// `what` otherwise.
absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view what);

// a * b, or INVALID_ARGUMENT when it overflows int64. REQUIRES: a, b >= 0.
absl::StatusOr<int64_t> MultiplyDims(int64_t a, int64_t b);

// The value of an input that must hold one integer, when known.
absl::StatusOr<std::optional<int64_t>> KnownScalar(const InferenceContext& c, int input,
                                                   std::string_view what);

// `shape` with dimension `axis` set to `size` (>= -1); INVALID_ARGUMENT when
// the new element count overflows int64. REQUIRES: shape has known rank >
// axis.
absl::StatusOr<PartialTensorShape> WithDim(const PartialTensorShape& shape, int axis, int64_t size);

// a + b, or INVALID_ARGUMENT naming `what` when it overflows int64.
// REQUIRES: a, b >= 0.
absl::StatusOr<int64_t> AddDims(int64_t a, int64_t b, std::string_view what);

}  // namespace rill::shape_util

#endif  // RILL_OPS_SHAPE_FN_UTIL_H_
