// CPU kernels for element-wise unary math (Neg, Exp, Tanh, Floor, Round,
// ...), the float classes IsNan, IsInf and IsFinite, and the gradients
// SigmoidGrad, TanhGrad, SqrtGrad, RsqrtGrad and ReciprocalGrad.
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/cwise_checks.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

namespace ei = Eigen::internal;

// y = fn(x), of the type fn returns: T, or bool for IsNan and its kin.
template <typename T, typename Functor>
class UnaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    using Out = std::remove_cvref_t<std::invoke_result_t<Functor, const T&>>;
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    y->flat<Out>().device(ctx.eigen_cpu()) = x.flat<T>().unaryExpr(Functor());
    return absl::OkStatus();
  }
};

// Round to nearest with halves to even, as TensorFlow's Round, whatever
// rounding mode the floating-point environment is in (std::rint follows
// it). x - std::round(x) is exact, so ties are told apart exactly. half
// and bfloat16 round through float, which holds them and their roundings.
template <typename T>
struct RoundHalfToEvenFn {
  T operator()(const T& x) const {
    if constexpr (std::is_integral_v<T>) {
      return x;
    } else if constexpr (std::is_floating_point_v<T>) {
      const T away = std::round(x);  // Halves away from zero.
      if (std::abs(x - away) != T(0.5)) return away;
      return T(2) * std::round(x / T(2));
    } else {
      return static_cast<T>(RoundHalfToEvenFn<float>()(static_cast<float>(x)));
    }
  }
};

template <typename T>
struct SigmoidGradFn {
  T operator()(const T& y, const T& dy) const { return dy * y * (T(1) - y); }
};

template <typename T>
struct TanhGradFn {
  T operator()(const T& y, const T& dy) const { return dy * (T(1) - y * y); }
};

// From y = sqrt(x): dy / (2 y).
template <typename T>
struct SqrtGradFn {
  T operator()(const T& y, const T& dy) const { return T(0.5) * dy / y; }
};

// From y = 1 / sqrt(x): -dy y^3 / 2.
template <typename T>
struct RsqrtGradFn {
  T operator()(const T& y, const T& dy) const { return T(-0.5) * (dy * y) * (y * y); }
};

// From y = 1 / x: -dy y^2.
template <typename T>
struct ReciprocalGradFn {
  T operator()(const T& y, const T& dy) const { return -y * y * dy; }
};

// z = fn(y, dy) for a y and dy of one shape.
template <typename T, typename Functor>
class UnaryGradOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& y = ctx.input(0);
    const Tensor& dy = ctx.input(1);
    RETURN_IF_ERROR(cwise_checks::CheckGradShapes(op(), y, dy));
    ASSIGN_OR_RETURN(Tensor * z, ctx.AllocateOutput(0, y.shape()));
    z->flat<T>().device(ctx.eigen_cpu()) = y.flat<T>().binaryExpr(dy.flat<T>(), Functor());
    return absl::OkStatus();
  }
};

template <template <typename> class Functor, typename... Ts>
void RegisterUnary(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).TypeConstraint<Ts>("T"), MakeKernel<UnaryOp<Ts, Functor<Ts>>>), ...);
}

template <template <typename> class Functor, typename... Ts>
void RegisterUnaryGrad(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).TypeConstraint<Ts>("T"), MakeKernel<UnaryGradOp<Ts, Functor<Ts>>>),
   ...);
}

template <typename T>
using SignFn = ei::scalar_sign_op<T>;

}  // namespace

void RegisterCpuCwiseKernels(KernelRegistry& r) {
  RegisterUnary<ei::scalar_opposite_op, float, double, int32_t, int64_t>(r, "Neg");
  RegisterUnary<ei::scalar_square_op, float, double, int32_t, int64_t>(r, "Square");
  RegisterUnary<ei::scalar_abs_op, float, double, int32_t, int64_t>(r, "Abs");
  RegisterUnary<SignFn, float, double, int32_t, int64_t>(r, "Sign");
  RegisterUnary<ei::scalar_inverse_op, float, double>(r, "Reciprocal");
  RegisterUnary<ei::scalar_inverse_op, float, double>(r, "Inv");
  RegisterUnary<ei::scalar_floor_op, float, double, half, bfloat16>(r, "Floor");
  RegisterUnary<ei::scalar_ceil_op, float, double, half, bfloat16>(r, "Ceil");
  RegisterUnary<ei::scalar_rint_op, float, double>(r, "Rint");
  RegisterUnary<RoundHalfToEvenFn, float, double, half, bfloat16, int32_t, int64_t>(r, "Round");
  RegisterUnary<ei::scalar_isnan_op, float, double, half, bfloat16>(r, "IsNan");
  RegisterUnary<ei::scalar_isinf_op, float, double, half, bfloat16>(r, "IsInf");
  RegisterUnary<ei::scalar_isfinite_op, float, double, half, bfloat16>(r, "IsFinite");
  RegisterUnary<ei::scalar_sqrt_op, float, double>(r, "Sqrt");
  RegisterUnary<ei::scalar_rsqrt_op, float, double>(r, "Rsqrt");
  RegisterUnary<ei::scalar_exp_op, float, double>(r, "Exp");
  RegisterUnary<ei::scalar_log_op, float, double>(r, "Log");
  RegisterUnary<ei::scalar_logistic_op, float, double>(r, "Sigmoid");
  RegisterUnary<ei::scalar_tanh_op, float, double>(r, "Tanh");
  RegisterUnary<ei::scalar_sin_op, float, double>(r, "Sin");
  RegisterUnary<ei::scalar_cos_op, float, double>(r, "Cos");
  RegisterUnaryGrad<SigmoidGradFn, float, double>(r, "SigmoidGrad");
  RegisterUnaryGrad<TanhGradFn, float, double>(r, "TanhGrad");
  RegisterUnaryGrad<SqrtGradFn, float, double>(r, "SqrtGrad");
  RegisterUnaryGrad<RsqrtGradFn, float, double>(r, "RsqrtGrad");
  RegisterUnaryGrad<ReciprocalGradFn, float, double>(r, "ReciprocalGrad");
  RegisterUnaryGrad<ReciprocalGradFn, float, double>(r, "InvGrad");
  RegisterCpuCwiseBinaryKernels(r);
}

}  // namespace rill
