// Launchers of rill's element-wise CUDA kernels (kernels/cuda/cwise_kernels.cu)
// over plain device pointers: the kernel classes validate and size on the host.
#ifndef RILL_KERNELS_CUDA_CWISE_KERNELS_H_
#define RILL_KERNELS_CUDA_CWISE_KERNELS_H_

#include <cuda_runtime.h>

#include <cstdint>

// Each launcher queues one kernel on `stream` and returns; the caller checks
// the launch (CheckLaunch). n is the element count; n == 0 launches nothing.
// The element types are float, double, int64_t, bool and Half, as each
// launcher says; other types are not instantiated.
namespace rill::cuda {

// IEEE binary16 as its bits, which the host's Eigen::half and the
// device's __half share.
struct Half {
  uint16_t bits;
};

// y = op(x). float and double: all; int64_t: kNeg, kAbs, kSquare, kSign,
// kRound, kRelu, kRelu6; Half: kFloor, kCeil, kRound.
enum class UnaryOp {
  kNeg,
  kAbs,
  kSquare,
  kSign,
  kReciprocal,
  kFloor,
  kCeil,
  kRint,   // Halves to even, as kRound: CUDA has no other rounding mode.
  kRound,  // Halves to even.
  kSqrt,
  kRsqrt,
  kExp,
  kLog,
  kSigmoid,
  kTanh,
  kRelu,
  kRelu6,
};
template <typename T>
void LaunchUnary(UnaryOp op, const T* x, T* y, int64_t n, cudaStream_t stream);

// y = whether x is NaN, infinite or finite. float, double, Half.
enum class FloatClass { kIsNan, kIsInf, kIsFinite };
template <typename T>
void LaunchFloatClass(FloatClass op, const T* x, bool* y, int64_t n, cudaStream_t stream);

// z = the gradient of an activation from its output y (for kRelu: its
// input, the features) and the gradient dy of that output. float, double;
// int64_t: kRelu.
enum class GradOp { kSigmoid, kTanh, kSqrt, kRsqrt, kReciprocal, kRelu };
template <typename T>
void LaunchUnaryGrad(GradOp op, const T* y, const T* dy, T* z, int64_t n, cudaStream_t stream);

// Where output element i reads its operands. rank 0: a[i * a_step] and
// b[i * b_step], with steps 0 (a scalar) or 1 (same shape); else the
// output's dims (row-major) and each operand's element strides per
// dimension, 0 where it repeats.
inline constexpr int kMaxBroadcastDims = 8;
struct BroadcastIndex {
  int rank = 0;
  int64_t a_step = 1, b_step = 1;
  int64_t dims[kMaxBroadcastDims] = {};
  int64_t a_strides[kMaxBroadcastDims] = {};
  int64_t b_strides[kMaxBroadcastDims] = {};
};

// out = op(a, b), out of T. float, double: all; int64_t: all, with
// integer division (kDiv truncates, as kTruncateDiv).
//
// Integer quotients by zero do not fail on the device: a / 0 is 0 and
// a % 0 is a (so that a == (a / b) * b + a % b still holds); the CPU
// kernels refuse a zero divisor instead. The most negative value divided
// by -1 wraps to itself with remainder 0, as on the CPU. An integer to a
// negative power is its truncated quotient 1 / a^-b (0 for a == 0), where
// the CPU refuses it.
enum class BinaryOp {
  kAdd,
  kSub,
  kMul,
  kDiv,
  kTruncateDiv,
  kFloorDiv,
  kTruncateMod,
  kFloorMod,
  kSquaredDifference,
  kMaximum,
  kMinimum,
  kPow,
};
template <typename T>
void LaunchBinary(BinaryOp op, const T* a, const T* b, T* out, int64_t n,
                  const BroadcastIndex& index, cudaStream_t stream);

// out = op(a, b), bool. float, double, int64_t: the comparisons; bool:
// kEqual, kNotEqual, kLogicalAnd, kLogicalOr.
enum class CompareOp {
  kEqual,
  kNotEqual,
  kLess,
  kLessEqual,
  kGreater,
  kGreaterEqual,
  kLogicalAnd,
  kLogicalOr,
};
template <typename T>
void LaunchCompare(CompareOp op, const T* a, const T* b, bool* out, int64_t n,
                   const BroadcastIndex& index, cudaStream_t stream);

// y = !x.
void LaunchLogicalNot(const bool* x, bool* y, int64_t n, cudaStream_t stream);

// out = inputs[0] + inputs[1] + ..., summed in that order; with
// `accumulate`, out + inputs[0] + ... . float, double, int64_t.
inline constexpr int kMaxAddNInputs = 16;
template <typename T>
struct AddNInputs {
  const T* inputs[kMaxAddNInputs];
  int count;
};
template <typename T>
void LaunchAddN(const AddNInputs<T>& inputs, bool accumulate, T* out, int64_t n,
                cudaStream_t stream);

}  // namespace rill::cuda

#endif  // RILL_KERNELS_CUDA_CWISE_KERNELS_H_
