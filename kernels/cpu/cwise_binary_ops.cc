// CPU kernels for element-wise binary math with NumPy broadcasting (Add,
// Mul, FloorDiv, Mod, Pow, SquaredDifference, ...) and AddN.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/cwise_checks.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/cpu/integer_division.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"

namespace rill {
namespace {

// Eigen's functors, so that same-shape and broadcast operands vectorize.
template <typename T>
using AddFn = Eigen::internal::scalar_sum_op<T, T>;
template <typename T>
using SubFn = Eigen::internal::scalar_difference_op<T, T>;
template <typename T>
using MulFn = Eigen::internal::scalar_product_op<T, T>;
template <typename T>
using DivFn = Eigen::internal::scalar_quotient_op<T, T>;
template <typename T>
using MaximumFn = Eigen::internal::scalar_max_op<T, T>;
template <typename T>
using MinimumFn = Eigen::internal::scalar_min_op<T, T>;

// Integer Div and TruncateDiv: rounds toward zero, as C++ and TensorFlow do.
template <typename T>
struct TruncateDivFn {
  T operator()(const T& a, const T& b) const { return TruncatingDivide(a, b); }
};

// Mod and TruncateMod: C's % and fmod, with the sign of the dividend.
template <typename T>
struct TruncateModFn {
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {
      return TruncatingRemainder(a, b);
    } else {
      return std::fmod(a, b);
    }
  }
};

// Python's //: rounds toward negative infinity.
template <typename T>
struct FloorDivFn {
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {
      return FlooringDivide(a, b);
    } else {
      return std::floor(a / b);
    }
  }
};

// Python's %: the result has the sign of the divisor.
template <typename T>
struct FloorModFn {
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {
      return FlooringRemainder(a, b);
    } else {
      const T r = std::fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
  }
};

template <typename T>
struct SquaredDiffFn {
  T operator()(const T& a, const T& b) const {
    const T d = a - b;
    return d * d;
  }
};

// Integer powers square in unsigned arithmetic, so that a power too large
// for T wraps around as two's complement does rather than overflowing.
// REQUIRES for integers: T at least as wide as int (narrower unsigned
// types would be promoted to int and could overflow again).
template <typename T>
struct PowFn {
  T operator()(const T& a, const T& b) const {
    if constexpr (std::is_integral_v<T>) {
      static_assert(sizeof(T) >= sizeof(int));
      using U = std::make_unsigned_t<T>;
      U result = 1;
      U base = static_cast<U>(a);
      for (T e = b; e > 0; e >>= 1) {
        if (e & 1) result *= base;
        base *= base;
      }
      return static_cast<T>(result);
    } else {
      return std::pow(a, b);
    }
  }
};

// DivNoNan: 0 where the divisor is 0 (even for 0 / 0), x / y elsewhere.
template <typename T>
struct DivNoNanFn {
  T operator()(const T& a, const T& b) const { return b == T(0) ? T(0) : a / b; }
};

// What an op demands of its second operand for integer types.
enum class IntegerCheck { kNone, kNonZero, kNonNegative };

template <typename T>
absl::Status CheckSecondOperand(const Tensor& y, IntegerCheck check) {
  if (check == IntegerCheck::kNonZero) return CheckNoZeroDivisor<T>(y);
  const T* data = y.data<T>();
  for (int64_t i = 0; i < y.NumElements(); ++i) {
    if (data[i] < 0) {
      return absl::InvalidArgumentError("Integers to negative integer powers are not allowed");
    }
  }
  return absl::OkStatus();
}

template <typename T, typename Functor, IntegerCheck kCheck>
class BinaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    if constexpr (std::is_integral_v<T> && kCheck != IntegerCheck::kNone) {
      // As TensorFlow, only divisors an element is computed with count: an
      // empty dividend makes an empty result (Sum's gradient of a scalar
      // takes FloorMod(no axes, rank 0)).
      if (ctx.input(0).NumElements() > 0) {
        RETURN_IF_ERROR(CheckSecondOperand<T>(ctx.input(1), kCheck));
      }
    }
    return BinaryBroadcast<T, T>(ctx, ctx.input(0), ctx.input(1), Functor());
  }
};

template <typename T>
class AddNOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    RETURN_IF_ERROR(cwise_checks::CheckAddNShapes(ctx));
    const Tensor& first = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, first.shape()));
    auto o = out->flat<T>();
    const Eigen::ThreadPoolDevice& d = ctx.eigen_cpu();
    if (ctx.num_inputs() == 1) {
      o.device(d) = first.flat<T>();
      return absl::OkStatus();
    }
    o.device(d) = first.flat<T>() + ctx.input(1).flat<T>();
    for (int i = 2; i < ctx.num_inputs(); ++i) o.device(d) = o + ctx.input(i).flat<T>();
    return absl::OkStatus();
  }
};

template <template <typename> class Functor, IntegerCheck kCheck = IntegerCheck::kNone,
          typename... Ts>
void RegisterBinary(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).TypeConstraint<Ts>("T"), MakeKernel<BinaryOp<Ts, Functor<Ts>, kCheck>>),
   ...);
}

constexpr IntegerCheck kNone = IntegerCheck::kNone;
constexpr IntegerCheck kNonZero = IntegerCheck::kNonZero;
constexpr IntegerCheck kNonNegative = IntegerCheck::kNonNegative;

}  // namespace

void RegisterCpuCwiseBinaryKernels(KernelRegistry& r) {
  RegisterBinary<AddFn, kNone, float, double, int32_t, int64_t>(r, "Add");
  RegisterBinary<AddFn, kNone, float, double, int32_t, int64_t>(r, "AddV2");
  RegisterBinary<SubFn, kNone, float, double, int32_t, int64_t>(r, "Sub");
  RegisterBinary<MulFn, kNone, float, double, int32_t, int64_t>(r, "Mul");
  RegisterBinary<DivFn, kNone, float, double>(r, "Div");
  RegisterBinary<TruncateDivFn, kNonZero, int32_t, int64_t>(r, "Div");
  RegisterBinary<DivFn, kNone, float, double>(r, "RealDiv");
  RegisterBinary<DivNoNanFn, kNone, float, double>(r, "DivNoNan");
  RegisterBinary<TruncateDivFn, kNonZero, int32_t, int64_t>(r, "TruncateDiv");
  RegisterBinary<FloorDivFn, kNonZero, float, double, int32_t, int64_t>(r, "FloorDiv");
  RegisterBinary<FloorModFn, kNonZero, float, double, int32_t, int64_t>(r, "FloorMod");
  RegisterBinary<TruncateModFn, kNonZero, float, double, int32_t, int64_t>(r, "TruncateMod");
  RegisterBinary<TruncateModFn, kNonZero, float, double, int32_t, int64_t>(r, "Mod");
  RegisterBinary<SquaredDiffFn, kNone, float, double, int32_t, int64_t>(r, "SquaredDifference");
  RegisterBinary<MaximumFn, kNone, float, double, int32_t, int64_t>(r, "Maximum");
  RegisterBinary<MinimumFn, kNone, float, double, int32_t, int64_t>(r, "Minimum");
  RegisterBinary<PowFn, kNonNegative, float, double, int32_t, int64_t>(r, "Pow");
  r.Register(KernelDef("AddN").TypeConstraint<float>("T"), MakeKernel<AddNOp<float>>);
  r.Register(KernelDef("AddN").TypeConstraint<double>("T"), MakeKernel<AddNOp<double>>);
  r.Register(KernelDef("AddN").TypeConstraint<int32_t>("T"), MakeKernel<AddNOp<int32_t>>);
  r.Register(KernelDef("AddN").TypeConstraint<int64_t>("T"), MakeKernel<AddNOp<int64_t>>);
}

}  // namespace rill
