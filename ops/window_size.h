// The size of a sliding window's output along one dimension, as TensorFlow
// computes it, for the shape functions and the kernels alike.
#ifndef RILL_OPS_WINDOW_SIZE_H_
#define RILL_OPS_WINDOW_SIZE_H_

#include <cstdint>

#include "absl/status/statusor.h"

namespace rill {

enum class WindowPadding { kSame, kValid, kExplicit };

struct WindowSize {
  int64_t output = 0;
  int64_t pad_before = 0;        // The leading padding (SAME: computed).
  int64_t effective_window = 0;  // The window with its dilation.
};

// `input`, `window` and `stride` describe one dimension; `pad_before` and
// `pad_after` are used with kExplicit only. Sizes come from attrs and
// inputs, so every step is checked: INVALID_ARGUMENT when one overflows
// int64 or the output would be negative (the message gives the numbers).
// REQUIRES: stride > 0.
absl::StatusOr<WindowSize> ComputeWindowSize(int64_t input, int64_t window, int64_t dilation,
                                             int64_t stride, WindowPadding padding,
                                             int64_t pad_before = 0, int64_t pad_after = 0);

}  // namespace rill

#endif  // RILL_OPS_WINDOW_SIZE_H_
