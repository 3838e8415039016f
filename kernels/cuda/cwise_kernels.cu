// rill's element-wise CUDA kernels: one kernel per element type and family,
// which switches on the op once, outside its grid-stride loop, so that a
// type's ops share one instantiation and each loop stays small.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cwise_kernels.h"
#include "kernels/cuda/launch.h"

namespace rill::cuda {
namespace {

// Calls f(std::integral_constant<Op, kOp>{}) for the kOp equal to `op`.
template <auto... kOps>
struct OpList {};

template <typename Op, Op... kOps, typename F>
__device__ void Dispatch(OpList<kOps...>, Op op, F f) {
  static_cast<void>(((op == kOps ? (f(std::integral_constant<Op, kOps>{}), true) : false) || ...));
}

// Half is stored as bits and computed in float, as Eigen::half computes.
template <typename T>
using Compute = std::conditional_t<std::is_same_v<T, Half>, float, T>;

template <typename T>
__device__ Compute<T> Load(const T* p, int64_t i) {
  if constexpr (std::is_same_v<T, Half>) {
    return __half2float(__ushort_as_half(p[i].bits));
  } else {
    return p[i];
  }
}

template <typename T>
__device__ void Store(T* p, int64_t i, Compute<T> v) {
  if constexpr (std::is_same_v<T, Half>) {
    p[i].bits = __half_as_ushort(__float2half_rn(v));
  } else {
    p[i] = v;
  }
}

// Integer arithmetic wraps around, as two's complement does, rather than
// overflowing (undefined in C++).
template <typename T>
__device__ T Wrap(std::make_unsigned_t<T> v) {
  return static_cast<T>(v);
}
template <typename T>
__device__ std::make_unsigned_t<T> U(T v) {
  return static_cast<std::make_unsigned_t<T>>(v);
}

// The CUDA math functions by precision.
__device__ float Abs(float x) { return fabsf(x); }
__device__ double Abs(double x) { return fabs(x); }
__device__ float Sqrt(float x) { return sqrtf(x); }
__device__ double Sqrt(double x) { return sqrt(x); }
__device__ float Rsqrt(float x) { return rsqrtf(x); }
__device__ double Rsqrt(double x) { return rsqrt(x); }
__device__ float Exp(float x) { return expf(x); }
__device__ double Exp(double x) { return exp(x); }
__device__ float Log(float x) { return logf(x); }
__device__ double Log(double x) { return log(x); }
__device__ float Tanh(float x) { return tanhf(x); }
__device__ double Tanh(double x) { return tanh(x); }
__device__ float Floor(float x) { return floorf(x); }
__device__ double Floor(double x) { return floor(x); }
__device__ float Ceil(float x) { return ceilf(x); }
__device__ double Ceil(double x) { return ceil(x); }
__device__ float Rint(float x) { return rintf(x); }
__device__ double Rint(double x) { return rint(x); }
__device__ float Fmod(float a, float b) { return fmodf(a, b); }
__device__ double Fmod(double a, double b) { return fmod(a, b); }
__device__ float Pow(float a, float b) { return powf(a, b); }
__device__ double Pow(double a, double b) { return pow(a, b); }

template <typename T>
inline constexpr bool kIsFloat = std::is_floating_point_v<T>;

template <UnaryOp kOp, typename T>
__host__ __device__ constexpr bool UnarySupports() {
  if constexpr (std::is_same_v<T, Half>) {
    return kOp == UnaryOp::kFloor || kOp == UnaryOp::kCeil || kOp == UnaryOp::kRound;
  } else if constexpr (std::is_integral_v<T>) {
    return kOp == UnaryOp::kNeg || kOp == UnaryOp::kAbs || kOp == UnaryOp::kSquare ||
           kOp == UnaryOp::kSign || kOp == UnaryOp::kRound || kOp == UnaryOp::kRelu ||
           kOp == UnaryOp::kRelu6;
  } else {
    return true;
  }
}

template <UnaryOp kOp, typename C>
__device__ C ApplyUnary(C x) {
  if constexpr (kOp == UnaryOp::kNeg) {
    if constexpr (std::is_integral_v<C>)
      return Wrap<C>(0 - U(x));
    else
      return -x;
  } else if constexpr (kOp == UnaryOp::kAbs) {
    if constexpr (std::is_integral_v<C>)
      return x < 0 ? Wrap<C>(0 - U(x)) : x;
    else
      return Abs(x);
  } else if constexpr (kOp == UnaryOp::kSquare) {
    if constexpr (std::is_integral_v<C>)
      return Wrap<C>(U(x) * U(x));
    else
      return x * x;
  } else if constexpr (kOp == UnaryOp::kSign) {
    return static_cast<C>((x > C(0)) - (x < C(0)));
  } else if constexpr (kOp == UnaryOp::kReciprocal) {
    return C(1) / x;
  } else if constexpr (kOp == UnaryOp::kFloor) {
    return Floor(x);
  } else if constexpr (kOp == UnaryOp::kCeil) {
    return Ceil(x);
  } else if constexpr (kOp == UnaryOp::kRint || kOp == UnaryOp::kRound) {
    if constexpr (std::is_integral_v<C>)
      return x;
    else
      return Rint(x);
  } else if constexpr (kOp == UnaryOp::kSqrt) {
    return Sqrt(x);
  } else if constexpr (kOp == UnaryOp::kRsqrt) {
    return Rsqrt(x);
  } else if constexpr (kOp == UnaryOp::kExp) {
    return Exp(x);
  } else if constexpr (kOp == UnaryOp::kLog) {
    return Log(x);
  } else if constexpr (kOp == UnaryOp::kSigmoid) {
    return C(1) / (C(1) + Exp(-x));
  } else if constexpr (kOp == UnaryOp::kTanh) {
    return Tanh(x);
  } else if constexpr (kOp == UnaryOp::kRelu) {
    return x < C(0) ? C(0) : x;
  } else {
    static_assert(kOp == UnaryOp::kRelu6);
    const C r = x < C(0) ? C(0) : x;
    return C(6) < r ? C(6) : r;
  }
}

using AllUnaryOps =
    OpList<UnaryOp::kNeg, UnaryOp::kAbs, UnaryOp::kSquare, UnaryOp::kSign, UnaryOp::kReciprocal,
           UnaryOp::kFloor, UnaryOp::kCeil, UnaryOp::kRint, UnaryOp::kRound, UnaryOp::kSqrt,
           UnaryOp::kRsqrt, UnaryOp::kExp, UnaryOp::kLog, UnaryOp::kSigmoid, UnaryOp::kTanh,
           UnaryOp::kRelu, UnaryOp::kRelu6>;

template <typename T>
__global__ void UnaryKernel(UnaryOp op, const T* x, T* y, int64_t n) {
  Dispatch(AllUnaryOps{}, op, [&](auto k) {
    constexpr UnaryOp kOp = decltype(k)::value;
    if constexpr (UnarySupports<kOp, T>()) {
      RILL_GRID_LOOP(i, n) { Store(y, i, ApplyUnary<kOp>(Load(x, i))); }
    }
  });
}

template <typename T>
__global__ void FloatClassKernel(FloatClass op, const T* x, bool* y, int64_t n) {
  Dispatch(OpList<FloatClass::kIsNan, FloatClass::kIsInf, FloatClass::kIsFinite>{}, op,
           [&](auto k) {
             constexpr FloatClass kOp = decltype(k)::value;
             RILL_GRID_LOOP(i, n) {
               const auto v = Load(x, i);
               if constexpr (kOp == FloatClass::kIsNan) {
                 y[i] = isnan(v);
               } else if constexpr (kOp == FloatClass::kIsInf) {
                 y[i] = isinf(v);
               } else {
                 y[i] = isfinite(v);
               }
             }
           });
}

template <GradOp kOp, typename T>
__device__ T ApplyGrad(T y, T dy) {
  if constexpr (kOp == GradOp::kSigmoid) {
    return dy * y * (T(1) - y);
  } else if constexpr (kOp == GradOp::kTanh) {
    return dy * (T(1) - y * y);
  } else if constexpr (kOp == GradOp::kSqrt) {
    return T(0.5) * dy / y;
  } else if constexpr (kOp == GradOp::kRsqrt) {
    return T(-0.5) * (dy * y) * (y * y);
  } else if constexpr (kOp == GradOp::kReciprocal) {
    return -y * y * dy;
  } else {
    static_assert(kOp == GradOp::kRelu);
    return dy * static_cast<T>(y > T(0));  // As the CPU's (a NaN dy stays NaN).
  }
}

template <typename T>
__global__ void UnaryGradKernel(GradOp op, const T* y, const T* dy, T* z, int64_t n) {
  Dispatch(OpList<GradOp::kSigmoid, GradOp::kTanh, GradOp::kSqrt, GradOp::kRsqrt,
                  GradOp::kReciprocal, GradOp::kRelu>{},
           op, [&](auto k) {
             constexpr GradOp kOp = decltype(k)::value;
             if constexpr (kIsFloat<T> || kOp == GradOp::kRelu) {
               RILL_GRID_LOOP(i, n) { z[i] = ApplyGrad<kOp>(y[i], dy[i]); }
             }
           });
}

// Integer quotients: see cwise_kernels.h for a zero divisor.
template <typename T>
__device__ T TruncateDiv(T a, T b) {
  if (b == 0) return 0;
  if (b == -1) return Wrap<T>(0 - U(a));
  return a / b;
}
template <typename T>
__device__ T TruncateMod(T a, T b) {
  if (b == 0) return a;
  if (b == -1) return 0;
  return a % b;
}
template <typename T>
__device__ T FloorDiv(T a, T b) {
  if (b == 0 || b == -1) return TruncateDiv(a, b);
  const T q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}
template <typename T>
__device__ T FloorMod(T a, T b) {
  if (b == 0 || b == -1) return TruncateMod(a, b);
  const T r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}
// By squaring, wrapping around as the CPU's does.
template <typename T>
__device__ T IntegerPow(T a, T b) {
  if (b < 0) {
    if (a == 1) return 1;
    if (a == -1) return (b & 1) ? -1 : 1;
    return 0;
  }
  std::make_unsigned_t<T> result = 1, base = U(a);
  for (T e = b; e > 0; e >>= 1) {
    if (e & 1) result *= base;
    base *= base;
  }
  return Wrap<T>(result);
}

template <BinaryOp kOp, typename T>
__device__ T ApplyBinary(T a, T b) {
  constexpr bool kInt = std::is_integral_v<T>;
  if constexpr (kOp == BinaryOp::kAdd) {
    if constexpr (kInt)
      return Wrap<T>(U(a) + U(b));
    else
      return a + b;
  } else if constexpr (kOp == BinaryOp::kSub) {
    if constexpr (kInt)
      return Wrap<T>(U(a) - U(b));
    else
      return a - b;
  } else if constexpr (kOp == BinaryOp::kMul) {
    if constexpr (kInt)
      return Wrap<T>(U(a) * U(b));
    else
      return a * b;
  } else if constexpr (kOp == BinaryOp::kDiv || kOp == BinaryOp::kTruncateDiv) {
    if constexpr (kInt)
      return TruncateDiv(a, b);
    else
      return a / b;
  } else if constexpr (kOp == BinaryOp::kFloorDiv) {
    if constexpr (kInt)
      return FloorDiv(a, b);
    else
      return Floor(a / b);
  } else if constexpr (kOp == BinaryOp::kTruncateMod) {
    if constexpr (kInt)
      return TruncateMod(a, b);
    else
      return Fmod(a, b);
  } else if constexpr (kOp == BinaryOp::kFloorMod) {
    if constexpr (kInt) {
      return FloorMod(a, b);
    } else {
      const T r = Fmod(a, b);
      return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
    }
  } else if constexpr (kOp == BinaryOp::kSquaredDifference) {
    if constexpr (kInt) {
      const auto d = U(a) - U(b);
      return Wrap<T>(d * d);
    } else {
      const T d = a - b;
      return d * d;
    }
  } else if constexpr (kOp == BinaryOp::kMaximum) {
    return a < b ? b : a;  // std::max, as the CPU's.
  } else if constexpr (kOp == BinaryOp::kMinimum) {
    return b < a ? b : a;  // std::min.
  } else {
    static_assert(kOp == BinaryOp::kPow);
    if constexpr (kInt)
      return IntegerPow(a, b);
    else
      return Pow(a, b);
  }
}

template <CompareOp kOp, typename T>
__device__ bool ApplyCompare(T a, T b) {
  if constexpr (kOp == CompareOp::kEqual) {
    return a == b;
  } else if constexpr (kOp == CompareOp::kNotEqual) {
    return a != b;
  } else if constexpr (kOp == CompareOp::kLess) {
    return a < b;
  } else if constexpr (kOp == CompareOp::kLessEqual) {
    return a <= b;
  } else if constexpr (kOp == CompareOp::kGreater) {
    return a > b;
  } else if constexpr (kOp == CompareOp::kGreaterEqual) {
    return a >= b;
  } else if constexpr (kOp == CompareOp::kLogicalAnd) {
    return a && b;
  } else {
    static_assert(kOp == CompareOp::kLogicalOr);
    return a || b;
  }
}

template <CompareOp kOp, typename T>
__host__ __device__ constexpr bool CompareSupports() {
  if constexpr (std::is_same_v<T, bool>) {
    return kOp == CompareOp::kEqual || kOp == CompareOp::kNotEqual ||
           kOp == CompareOp::kLogicalAnd || kOp == CompareOp::kLogicalOr;
  } else {
    return kOp != CompareOp::kLogicalAnd && kOp != CompareOp::kLogicalOr;
  }
}

using AllBinaryOps =
    OpList<BinaryOp::kAdd, BinaryOp::kSub, BinaryOp::kMul, BinaryOp::kDiv, BinaryOp::kTruncateDiv,
           BinaryOp::kFloorDiv, BinaryOp::kTruncateMod, BinaryOp::kFloorMod,
           BinaryOp::kSquaredDifference, BinaryOp::kMaximum, BinaryOp::kMinimum, BinaryOp::kPow>;
using AllCompareOps = OpList<CompareOp::kEqual, CompareOp::kNotEqual, CompareOp::kLess,
                             CompareOp::kLessEqual, CompareOp::kGreater, CompareOp::kGreaterEqual,
                             CompareOp::kLogicalAnd, CompareOp::kLogicalOr>;

// A binary family: its ops, its output type, which (op, type) pairs it
// computes, and how.
template <typename T>
struct Arithmetic {
  using Ops = AllBinaryOps;
  template <BinaryOp kOp>
  __host__ __device__ static constexpr bool Supports() {
    return true;
  }
  template <BinaryOp kOp>
  __device__ static T Apply(T a, T b) {
    return ApplyBinary<kOp>(a, b);
  }
};

template <typename T>
struct Comparison {
  using Ops = AllCompareOps;
  template <CompareOp kOp>
  __host__ __device__ static constexpr bool Supports() {
    return CompareSupports<kOp, T>();
  }
  template <CompareOp kOp>
  __device__ static bool Apply(T a, T b) {
    return ApplyCompare<kOp>(a, b);
  }
};

// Same-shape or scalar operands (index.rank == 0).
template <typename Family, typename Op, typename T, typename Out>
__global__ void FlatBinaryKernel(Op op, const T* a, const T* b, Out* out, int64_t n, int64_t a_step,
                                 int64_t b_step) {
  Dispatch(typename Family::Ops{}, op, [&](auto k) {
    constexpr Op kOp = decltype(k)::value;
    if constexpr (Family::template Supports<kOp>()) {
      RILL_GRID_LOOP(i, n) { out[i] = Family::template Apply<kOp>(a[i * a_step], b[i * b_step]); }
    }
  });
}

// Broadcasting: each output index is taken apart into coordinates, in
// 32-bit arithmetic when the element count allows (a 64-bit division costs
// several times more).
template <typename Family, typename Index, typename Op, typename T, typename Out>
__global__ void BroadcastBinaryKernel(Op op, const T* a, const T* b, Out* out, int64_t n,
                                      BroadcastIndex index) {
  Dispatch(typename Family::Ops{}, op, [&](auto k) {
    constexpr Op kOp = decltype(k)::value;
    if constexpr (Family::template Supports<kOp>()) {
      RILL_GRID_LOOP(i, n) {
        Index rest = static_cast<Index>(i);
        Index ia = 0, ib = 0;
#pragma unroll
        for (int d = kMaxBroadcastDims - 1; d >= 0; --d) {
          if (d >= index.rank) continue;
          const Index dim = static_cast<Index>(index.dims[d]);
          const Index q = rest / dim;
          const Index c = rest - q * dim;
          ia += c * static_cast<Index>(index.a_strides[d]);
          ib += c * static_cast<Index>(index.b_strides[d]);
          rest = q;
        }
        out[i] = Family::template Apply<kOp>(a[ia], b[ib]);
      }
    }
  });
}

template <typename Family, typename Op, typename T, typename Out>
void LaunchBroadcast(Op op, const T* a, const T* b, Out* out, int64_t n,
                     const BroadcastIndex& index, cudaStream_t stream) {
  if (n == 0) return;
  const int blocks = BlocksFor(n);
  if (index.rank == 0) {
    FlatBinaryKernel<Family>
        <<<blocks, kThreadsPerBlock, 0, stream>>>(op, a, b, out, n, index.a_step, index.b_step);
  } else if (n <= INT32_MAX) {
    BroadcastBinaryKernel<Family, uint32_t>
        <<<blocks, kThreadsPerBlock, 0, stream>>>(op, a, b, out, n, index);
  } else {
    BroadcastBinaryKernel<Family, int64_t>
        <<<blocks, kThreadsPerBlock, 0, stream>>>(op, a, b, out, n, index);
  }
}

__global__ void LogicalNotKernel(const bool* x, bool* y, int64_t n) {
  RILL_GRID_LOOP(i, n) { y[i] = !x[i]; }
}

template <typename T>
__global__ void AddNKernel(AddNInputs<T> in, bool accumulate, T* out, int64_t n) {
  RILL_GRID_LOOP(i, n) {
    T sum = accumulate ? out[i] : in.inputs[0][i];
    for (int k = accumulate ? 0 : 1; k < in.count; ++k) {
      sum = ApplyBinary<BinaryOp::kAdd>(sum, in.inputs[k][i]);
    }
    out[i] = sum;
  }
}

template <typename From, typename To>
__device__ To Convert(From x) {
  if constexpr (std::is_same_v<From, Half>) {
    return Convert<float, To>(__half2float(__ushort_as_half(x.bits)));
  } else if constexpr (std::is_same_v<To, Half>) {
    // Through float, as Eigen::half converts (a double rounds twice).
    return Half{__half_as_ushort(__float2half_rn(static_cast<float>(x)))};
  } else if constexpr (std::is_same_v<To, bool>) {
    return x != From(0);
  } else {
    return static_cast<To>(x);
  }
}

template <typename From, typename To>
__global__ void CastKernel(const From* x, To* y, int64_t n) {
  RILL_GRID_LOOP(i, n) { y[i] = Convert<From, To>(x[i]); }
}

template <typename From>
void LaunchCastFrom(CastType to, const From* x, void* y, int64_t n, cudaStream_t stream) {
  const int blocks = BlocksFor(n);
  switch (to) {
    case CastType::kFloat:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<float*>(y), n);
      break;
    case CastType::kDouble:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<double*>(y), n);
      break;
    case CastType::kInt64:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<int64_t*>(y), n);
      break;
    case CastType::kBool:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<bool*>(y), n);
      break;
    case CastType::kHalf:
      CastKernel<<<blocks, kThreadsPerBlock, 0, stream>>>(x, static_cast<Half*>(y), n);
      break;
  }
}

template <typename Word>
__global__ void FillKernel(Word* out, int64_t n, const Word* value, Word bits) {
  const Word v = value != nullptr ? *value : bits;
  RILL_GRID_LOOP(i, n) { out[i] = v; }
}

template <typename Word>
void LaunchFillWords(void* out, int64_t n, const void* value, uint64_t bits, cudaStream_t stream) {
  FillKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      static_cast<Word*>(out), n, static_cast<const Word*>(value), static_cast<Word>(bits));
}

template <typename Word>
__global__ void SelectKernel(const bool* cond, int64_t rows, const Word* t, const Word* e,
                             Word* out, int64_t n) {
  const int64_t inner = rows == 0 ? 0 : n / rows;
  RILL_GRID_LOOP(i, n) {
    const bool c = rows == 0 ? cond[0] : cond[rows == n ? i : i / inner];
    out[i] = c ? t[i] : e[i];
  }
}

template <typename Word>
void LaunchSelectWords(const bool* cond, int64_t rows, const void* t, const void* e, void* out,
                       int64_t n, cudaStream_t stream) {
  SelectKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(
      cond, rows, static_cast<const Word*>(t), static_cast<const Word*>(e), static_cast<Word*>(out),
      n);
}

template <typename T>
__global__ void ApplyGradientDescentKernel(T* var, const T* alpha, const T* delta, int64_t n) {
  const T a = *alpha;
  RILL_GRID_LOOP(i, n) { var[i] -= delta[i] * a; }
}

template <typename T>
__global__ void ApplyMomentumKernel(T* var, T* accum, const T* lr_in, const T* grad,
                                    const T* momentum_in, bool use_nesterov, int64_t n) {
  const T lr = *lr_in;
  const T momentum = *momentum_in;
  RILL_GRID_LOOP(i, n) {
    const T g = grad[i];
    const T a = accum[i] * momentum + g;
    accum[i] = a;
    if (use_nesterov) {
      var[i] -= g * lr + a * (momentum * lr);
    } else {
      var[i] -= a * lr;
    }
  }
}

template <typename T>
__global__ void ApplyAdamKernel(T* var, T* m_out, T* v_out, AdamScalars<T> s, const T* grad,
                                bool use_nesterov, int64_t n) {
  const T one(1);
  const T beta1 = *s.beta1;
  const T beta2 = *s.beta2;
  const T epsilon = *s.epsilon;
  const T lr_t = *s.lr * Sqrt(one - *s.beta2_power) / (one - *s.beta1_power);
  RILL_GRID_LOOP(i, n) {
    const T g = grad[i];
    T m = m_out[i];
    T v = v_out[i];
    m += (g - m) * (one - beta1);
    v += (g * g - v) * (one - beta2);
    m_out[i] = m;
    v_out[i] = v;
    const T step = use_nesterov ? (g * (one - beta1) + m * beta1) * lr_t : m * lr_t;
    var[i] -= step / (Sqrt(v) + epsilon);
  }
}

}  // namespace

template <typename T>
void LaunchUnary(UnaryOp op, const T* x, T* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  UnaryKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, x, y, n);
}
template void LaunchUnary(UnaryOp, const float*, float*, int64_t, cudaStream_t);
template void LaunchUnary(UnaryOp, const double*, double*, int64_t, cudaStream_t);
template void LaunchUnary(UnaryOp, const int64_t*, int64_t*, int64_t, cudaStream_t);
template void LaunchUnary(UnaryOp, const Half*, Half*, int64_t, cudaStream_t);

template <typename T>
void LaunchFloatClass(FloatClass op, const T* x, bool* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  FloatClassKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, x, y, n);
}
template void LaunchFloatClass(FloatClass, const float*, bool*, int64_t, cudaStream_t);
template void LaunchFloatClass(FloatClass, const double*, bool*, int64_t, cudaStream_t);
template void LaunchFloatClass(FloatClass, const Half*, bool*, int64_t, cudaStream_t);

template <typename T>
void LaunchUnaryGrad(GradOp op, const T* y, const T* dy, T* z, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  UnaryGradKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(op, y, dy, z, n);
}
template void LaunchUnaryGrad(GradOp, const float*, const float*, float*, int64_t, cudaStream_t);
template void LaunchUnaryGrad(GradOp, const double*, const double*, double*, int64_t, cudaStream_t);
template void LaunchUnaryGrad(GradOp, const int64_t*, const int64_t*, int64_t*, int64_t,
                              cudaStream_t);

template <typename T>
void LaunchBinary(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                  const BroadcastIndex& index, cudaStream_t stream) {
  LaunchBroadcast<Arithmetic<T>>(op, a, b, out, n, index, stream);
}
template void LaunchBinary(BinaryOp, const float*, const float*, float*, int64_t,
                           const BroadcastIndex&, cudaStream_t);
template void LaunchBinary(BinaryOp, const double*, const double*, double*, int64_t,
                           const BroadcastIndex&, cudaStream_t);
template void LaunchBinary(BinaryOp, const int64_t*, const int64_t*, int64_t*, int64_t,
                           const BroadcastIndex&, cudaStream_t);

template <typename T>
void LaunchCompare(CompareOp op, const T* a, const T* b, bool* out, int64_t n,
                   const BroadcastIndex& index, cudaStream_t stream) {
  LaunchBroadcast<Comparison<T>>(op, a, b, out, n, index, stream);
}
template void LaunchCompare(CompareOp, const float*, const float*, bool*, int64_t,
                            const BroadcastIndex&, cudaStream_t);
template void LaunchCompare(CompareOp, const double*, const double*, bool*, int64_t,
                            const BroadcastIndex&, cudaStream_t);
template void LaunchCompare(CompareOp, const int64_t*, const int64_t*, bool*, int64_t,
                            const BroadcastIndex&, cudaStream_t);
template void LaunchCompare(CompareOp, const bool*, const bool*, bool*, int64_t,
                            const BroadcastIndex&, cudaStream_t);

void LaunchLogicalNot(const bool* x, bool* y, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  LogicalNotKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(x, y, n);
}

template <typename T>
void LaunchAddN(const AddNInputs<T>& inputs, bool accumulate, T* out, int64_t n,
                cudaStream_t stream) {
  if (n == 0) return;
  AddNKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(inputs, accumulate, out, n);
}
template void LaunchAddN(const AddNInputs<float>&, bool, float*, int64_t, cudaStream_t);
template void LaunchAddN(const AddNInputs<double>&, bool, double*, int64_t, cudaStream_t);
template void LaunchAddN(const AddNInputs<int64_t>&, bool, int64_t*, int64_t, cudaStream_t);

void LaunchCast(CastType from, CastType to, const void* x, void* y, int64_t n,
                cudaStream_t stream) {
  if (n == 0) return;
  switch (from) {
    case CastType::kFloat:
      return LaunchCastFrom(to, static_cast<const float*>(x), y, n, stream);
    case CastType::kDouble:
      return LaunchCastFrom(to, static_cast<const double*>(x), y, n, stream);
    case CastType::kInt64:
      return LaunchCastFrom(to, static_cast<const int64_t*>(x), y, n, stream);
    case CastType::kBool:
      return LaunchCastFrom(to, static_cast<const bool*>(x), y, n, stream);
    case CastType::kHalf:
      return LaunchCastFrom(to, static_cast<const Half*>(x), y, n, stream);
  }
}

void LaunchFill(int bytes, void* out, int64_t n, const void* value, uint64_t bits,
                cudaStream_t stream) {
  if (n == 0) return;
  switch (bytes) {
    case 1:
      return LaunchFillWords<uint8_t>(out, n, value, bits, stream);
    case 2:
      return LaunchFillWords<uint16_t>(out, n, value, bits, stream);
    case 4:
      return LaunchFillWords<uint32_t>(out, n, value, bits, stream);
    default:
      return LaunchFillWords<uint64_t>(out, n, value, bits, stream);
  }
}

void LaunchSelect(int bytes, const bool* cond, int64_t rows, const void* t, const void* e,
                  void* out, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  switch (bytes) {
    case 1:
      return LaunchSelectWords<uint8_t>(cond, rows, t, e, out, n, stream);
    case 4:
      return LaunchSelectWords<uint32_t>(cond, rows, t, e, out, n, stream);
    default:
      return LaunchSelectWords<uint64_t>(cond, rows, t, e, out, n, stream);
  }
}

template <typename T>
void LaunchApplyGradientDescent(T* var, const T* alpha, const T* delta, int64_t n,
                                cudaStream_t stream) {
  if (n == 0) return;
  ApplyGradientDescentKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, alpha, delta, n);
}
template void LaunchApplyGradientDescent(float*, const float*, const float*, int64_t, cudaStream_t);
template void LaunchApplyGradientDescent(double*, const double*, const double*, int64_t,
                                         cudaStream_t);

template <typename T>
void LaunchApplyMomentum(T* var, T* accum, const T* lr, const T* grad, const T* momentum,
                         bool use_nesterov, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ApplyMomentumKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, accum, lr, grad, momentum,
                                                                     use_nesterov, n);
}
template void LaunchApplyMomentum(float*, float*, const float*, const float*, const float*, bool,
                                  int64_t, cudaStream_t);
template void LaunchApplyMomentum(double*, double*, const double*, const double*, const double*,
                                  bool, int64_t, cudaStream_t);

template <typename T>
void LaunchApplyAdam(T* var, T* m, T* v, const AdamScalars<T>& scalars, const T* grad,
                     bool use_nesterov, int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  ApplyAdamKernel<<<BlocksFor(n), kThreadsPerBlock, 0, stream>>>(var, m, v, scalars, grad,
                                                                 use_nesterov, n);
}
template void LaunchApplyAdam(float*, float*, float*, const AdamScalars<float>&, const float*, bool,
                              int64_t, cudaStream_t);
template void LaunchApplyAdam(double*, double*, double*, const AdamScalars<double>&, const double*,
                              bool, int64_t, cudaStream_t);

}  // namespace rill::cuda
