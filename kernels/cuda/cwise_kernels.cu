// rill's element-wise CUDA kernels: one kernel per element type and family,
// which switches on the op once, outside its grid-stride loop, so that a
// type's ops share one instantiation and each loop stays small.
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "kernels/cuda/cwise_kernels.h"
#include "kernels/cuda/device_math.cuh"
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

}  // namespace rill::cuda
