#include "ops/window_size.h"

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"

namespace rill {

absl::StatusOr<WindowSize> ComputeWindowSize(int64_t input, int64_t window, int64_t dilation,
                                             int64_t stride, WindowPadding padding,
                                             int64_t pad_before, int64_t pad_after) {
  const auto overflow = [&] {
    return absl::InvalidArgumentError(absl::StrFormat(
        "window arithmetic overflows int64: input size %d, window %d, dilation %d, stride %d, "
        "paddings %d and %d",
        input, window, dilation, stride, pad_before, pad_after));
  };
  WindowSize size;
  if (__builtin_mul_overflow(window - 1, dilation, &size.effective_window) ||
      __builtin_add_overflow(size.effective_window, 1, &size.effective_window)) {
    return overflow();
  }
  if (padding == WindowPadding::kSame) {
    size.output = input / stride + (input % stride != 0 ? 1 : 0);
    int64_t total;
    if (__builtin_mul_overflow(size.output - 1, stride, &total) ||
        __builtin_add_overflow(total, size.effective_window - input, &total)) {
      return overflow();
    }
    size.pad_before = std::max<int64_t>(total, 0) / 2;
    return size;
  }
  if (padding == WindowPadding::kValid) pad_before = pad_after = 0;
  size.pad_before = pad_before;
  int64_t span;
  if (__builtin_add_overflow(input, pad_before, &span) ||
      __builtin_add_overflow(span, pad_after, &span) ||
      __builtin_sub_overflow(span, size.effective_window, &span) ||
      __builtin_add_overflow(span, stride, &span)) {
    return overflow();
  }
  // Truncating division, as TensorFlow: an input a little smaller than the
  // window gives an empty output rather than an error.
  size.output = span / stride;
  if (size.output < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Computed output size would be negative: %d [input_size: %d, "
                        "effective_filter_size: %d, stride: %d]",
                        size.output, input, size.effective_window, stride));
  }
  return size;
}

}  // namespace rill
