// Integer quotients and remainders that are defined for every input a
// kernel lets through: a zero divisor is rejected first (CheckNoZeroDivisor,
// with TensorFlow's message), and the one quotient that overflows, the most
// negative value divided by -1, wraps to itself with remainder 0, as two's
// complement arithmetic gives, instead of trapping (SIGFPE on x86).
#ifndef RILL_KERNELS_CPU_INTEGER_DIVISION_H_
#define RILL_KERNELS_CPU_INTEGER_DIVISION_H_

#include <cstdint>
#include <type_traits>

#include "absl/status/status.h"
#include "graph/tensor.h"

namespace rill {

// INVALID_ARGUMENT when some element of `divisor` is zero.
template <typename T>
absl::Status CheckNoZeroDivisor(const Tensor& divisor) {
  const T* data = divisor.data<T>();
  for (int64_t i = 0; i < divisor.NumElements(); ++i) {
    if (data[i] == 0) return absl::InvalidArgumentError("Integer division by zero");
  }
  return absl::OkStatus();
}

// -a, wrapping around: the most negative value is its own negation. The
// quotients below divide by -1 with it, the one divisor that can overflow.
template <typename T>
T WrappingNegate(T a) {
  using U = std::make_unsigned_t<T>;
  return static_cast<T>(U{0} - static_cast<U>(a));
}

// a / b rounded toward zero (C++'s /). REQUIRES: b != 0.
template <typename T>
T TruncatingDivide(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return WrappingNegate(a);
  }
  return static_cast<T>(a / b);
}

// The remainder of TruncatingDivide, with the sign of a (C++'s %).
// REQUIRES: b != 0.
template <typename T>
T TruncatingRemainder(T a, T b) {
  if constexpr (std::is_signed_v<T>) {
    if (b == -1) return 0;
  }
  return static_cast<T>(a % b);
}

// a / b rounded toward negative infinity (Python's //). REQUIRES: b != 0.
template <typename T>
T FlooringDivide(T a, T b) {
  static_assert(std::is_signed_v<T>);
  if (b == -1) return WrappingNegate(a);
  const T q = static_cast<T>(a / b);
  return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
}

// The remainder of FlooringDivide, with the sign of b (Python's %).
// REQUIRES: b != 0.
template <typename T>
T FlooringRemainder(T a, T b) {
  static_assert(std::is_signed_v<T>);
  if (b == -1) return 0;
  const T r = static_cast<T>(a % b);
  return (r != 0 && ((r < 0) != (b < 0))) ? static_cast<T>(r + b) : r;
}

}  // namespace rill

#endif  // RILL_KERNELS_CPU_INTEGER_DIVISION_H_
