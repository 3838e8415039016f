// The number of elements of Range(start, limit, delta), as TensorFlow counts
// them; shared by Range's shape function and its kernel.
#ifndef RILL_OPS_RANGE_LENGTH_H_
#define RILL_OPS_RANGE_LENGTH_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace rill {

// INVALID_ARGUMENT when delta is 0, when start cannot reach limit by delta,
// or when the count does not fit in int64. Integer ranges may span the
// whole int64 range without overflowing.
absl::StatusOr<int64_t> RangeLength(int64_t start, int64_t limit, int64_t delta);
absl::StatusOr<int64_t> RangeLength(double start, double limit, double delta);

}  // namespace rill

#endif  // RILL_OPS_RANGE_LENGTH_H_
