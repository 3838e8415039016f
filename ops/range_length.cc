#include "ops/range_length.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "graph/shape_inference.h"

namespace rill {
namespace {

template <typename T>
absl::StatusOr<int64_t> Length(T start, T limit, T delta) {
  if (delta == 0) return ShapeError("Range requires delta != 0");
  if (start > limit && delta > 0) {
    return ShapeError("Range requires start <= limit when delta > 0: %s/%s", absl::StrCat(start),
                      absl::StrCat(limit));
  }
  if (start < limit && delta < 0) {
    return ShapeError("Range requires start >= limit when delta < 0: %s/%s", absl::StrCat(start),
                      absl::StrCat(limit));
  }
  double length;
  if constexpr (std::is_integral_v<T>) {
    // Unsigned, so that spans across the whole int64 range do not overflow.
    const auto u = [](T v) { return static_cast<uint64_t>(v); };
    const uint64_t span = limit > start ? u(limit) - u(start) : u(start) - u(limit);
    const uint64_t step = delta > 0 ? u(delta) : 0 - u(delta);
    const uint64_t count = span / step + (span % step != 0 ? 1 : 0);
    if (count <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return static_cast<int64_t>(count);
    }
    length = static_cast<double>(count);
  } else {
    length = std::ceil(std::abs((limit - start) / delta));
    if (length < 0x1p62) return static_cast<int64_t>(length);
  }
  return ShapeError("Range would have %g elements, too many", length);
}

}  // namespace

absl::StatusOr<int64_t> RangeLength(int64_t start, int64_t limit, int64_t delta) {
  return Length(start, limit, delta);
}

absl::StatusOr<int64_t> RangeLength(double start, double limit, double delta) {
  return Length(start, limit, delta);
}

}  // namespace rill
