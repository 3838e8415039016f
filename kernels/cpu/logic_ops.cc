// CPU kernels for comparisons (broadcasting, bool results), LogicalAnd,
// LogicalOr, LogicalNot, Select and Cast.
#include <immintrin.h>

#include <cstdint>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "kernels/common/cwise_checks.h"
#include "kernels/cpu/broadcast.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

template <typename T>
struct EqualFn {
  bool operator()(const T& a, const T& b) const { return a == b; }
};
template <typename T>
struct NotEqualFn {
  bool operator()(const T& a, const T& b) const { return a != b; }
};
template <typename T>
struct LessFn {
  bool operator()(const T& a, const T& b) const { return a < b; }
};
template <typename T>
struct GreaterFn {
  bool operator()(const T& a, const T& b) const { return a > b; }
};
template <typename T>
struct LessEqualFn {
  bool operator()(const T& a, const T& b) const { return a <= b; }
};
template <typename T>
struct GreaterEqualFn {
  bool operator()(const T& a, const T& b) const { return a >= b; }
};
struct AndFn {
  bool operator()(bool a, bool b) const { return a && b; }
};
struct OrFn {
  bool operator()(bool a, bool b) const { return a || b; }
};

template <typename T, typename Functor>
class CompareOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    return BinaryBroadcast<T, bool>(ctx, ctx.input(0), ctx.input(1), Functor());
  }
};

// Equal/NotEqual: with incompatible_shape_error = false, operands that do
// not broadcast compare as a whole, giving a scalar.
template <typename T, typename Functor, bool kNotEqual>
class EqualityOp final : public OpKernel {
 public:
  explicit EqualityOp(const OpKernelConstruction& c)
      : OpKernel(c), strict_(GetBoolAttr(c.def(), "incompatible_shape_error").value_or(true)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const Tensor& y = ctx.input(1);
    if (!strict_ && !BroadcastShape(x.shape(), y.shape()).ok()) {
      ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
      out->scalar<bool>() = kNotEqual;
      return absl::OkStatus();
    }
    return BinaryBroadcast<T, bool>(ctx, x, y, Functor());
  }

 private:
  const bool strict_;
};

template <typename Functor>
class LogicalBinaryOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    return BinaryBroadcast<bool, bool>(ctx, ctx.input(0), ctx.input(1), Functor());
  }
};

class LogicalNotOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    y->flat<bool>().device(ctx.eigen_cpu()) = x.flat<bool>().unaryExpr([](bool b) { return !b; });
    return absl::OkStatus();
  }
};

template <typename T>
class SelectOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& cond = ctx.input(0);
    const Tensor& t = ctx.input(1);
    const Tensor& e = ctx.input(2);
    ASSIGN_OR_RETURN(const cwise_checks::SelectCondition form,
                     cwise_checks::CheckSelectShapes(cond, t, e));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, t.shape()));
    if (t.NumElements() == 0) return absl::OkStatus();
    const Eigen::ThreadPoolDevice& d = ctx.eigen_cpu();
    if (form == cwise_checks::SelectCondition::kScalar) {
      out->flat<T>().device(d) = cond.scalar<bool>() ? t.flat<T>() : e.flat<T>();
    } else if (form == cwise_checks::SelectCondition::kElementwise) {
      out->flat<T>().device(d) = cond.flat<bool>().select(t.flat<T>(), e.flat<T>());
    } else {
      const Eigen::DenseIndex n = t.dim_size(0);
      const Eigen::DenseIndex inner = t.NumElements() / n;
      Tensor::ConstTensorMap<bool, 2> c(cond.data<bool>(), n, 1);
      Tensor::ConstTensorMap<T, 2> tm(t.data<T>(), n, inner);
      Tensor::ConstTensorMap<T, 2> em(e.data<T>(), n, inner);
      Tensor::TensorMap<T, 2> om(out->data<T>(), n, inner);
      const Eigen::array<Eigen::DenseIndex, 2> repeat{1, inner};
      om.device(d) = c.broadcast(repeat).select(tm, em);
    }
    return absl::OkStatus();
  }
};

// Strides of `shape` aligned to the right of a `rank`-dim output, 0 along
// the dimensions it is broadcast in.
std::vector<int64_t> BroadcastStrides(const TensorShape& shape, int rank) {
  std::vector<int64_t> strides(static_cast<size_t>(rank), 0);
  int64_t stride = 1;
  for (int d = shape.dims() - 1, o = rank - 1; d >= 0; --d, --o) {
    if (shape.dim_size(d) != 1) strides[o] = stride;
    stride *= shape.dim_size(d);
  }
  return strides;
}

// SelectV2: the condition, t and e broadcast together (NumPy's where).
template <typename T>
class SelectV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& cond = ctx.input(0);
    const Tensor& t = ctx.input(1);
    const Tensor& e = ctx.input(2);
    absl::StatusOr<PartialTensorShape> te = BroadcastShapes(t.shape(), e.shape());
    absl::StatusOr<PartialTensorShape> all =
        te.ok() ? BroadcastShapes(cond.shape(), *te) : te.status();
    if (!all.ok()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("SelectV2: condition %s, t %s and e %s do not broadcast together: %s",
                          cond.shape().DebugString(), t.shape().DebugString(),
                          e.shape().DebugString(), all.status().message()));
    }
    ASSIGN_OR_RETURN(const TensorShape shape, all->AsTensorShape());
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    const bool* c = cond.data<bool>();
    const T* tv = t.data<T>();
    const T* ev = e.data<T>();
    T* o = out->data<T>();
    if (cond.shape() == shape && t.shape() == shape && e.shape() == shape) {
      for (int64_t i = 0; i < shape.num_elements(); ++i) o[i] = c[i] ? tv[i] : ev[i];
      return absl::OkStatus();
    }
    const int rank = shape.dims();
    const std::vector<int64_t> cs = BroadcastStrides(cond.shape(), rank);
    const std::vector<int64_t> ts = BroadcastStrides(t.shape(), rank);
    const std::vector<int64_t> es = BroadcastStrides(e.shape(), rank);
    std::vector<int64_t> index(static_cast<size_t>(rank), 0);
    int64_t ci = 0, ti = 0, ei = 0;
    for (int64_t i = 0; i < shape.num_elements(); ++i) {
      o[i] = c[ci] ? tv[ti] : ev[ei];
      for (int d = rank - 1; d >= 0; --d) {
        ci += cs[d];
        ti += ts[d];
        ei += es[d];
        if (++index[d] < shape.dim_size(d)) break;
        ci -= cs[d] * shape.dim_size(d);
        ti -= ts[d] * shape.dim_size(d);
        ei -= es[d] * shape.dim_size(d);
        index[d] = 0;
      }
    }
    return absl::OkStatus();
  }
};

// Eigen converts between float and half one element at a time (about
// 5 ns each on these machines, which made float16 gradients slower to send
// than float32 ones); F16C converts eight per instruction, rounding to
// nearest even as Eigen does. True when it did the work.
template <typename Src, typename Dst>
bool CastWithF16c([[maybe_unused]] const Src* in, [[maybe_unused]] Dst* out,
                  [[maybe_unused]] int64_t n) {
#if defined(__F16C__)
  if constexpr (std::is_same_v<Src, float> && std::is_same_v<Dst, half>) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                       _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
    }
    for (; i < n; ++i) out[i] = half(in[i]);
    return true;
  } else if constexpr (std::is_same_v<Src, half> && std::is_same_v<Dst, float>) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
      _mm256_storeu_ps(out + i,
                       _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
    }
    for (; i < n; ++i) out[i] = static_cast<float>(in[i]);
    return true;
  }
#endif
  return false;
}

// Truncate only changes how TensorFlow rounds to narrower floats on some
// devices; Eigen's casts round to nearest, so it is accepted and unused.
template <typename Src, typename Dst>
class CastOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    if (CastWithF16c(x.data<Src>(), y->data<Dst>(), x.NumElements())) return absl::OkStatus();
    y->flat<Dst>().device(ctx.eigen_cpu()) = x.flat<Src>().template cast<Dst>();
    return absl::OkStatus();
  }
};

template <template <typename> class Functor, typename... Ts>
void RegisterCompare(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).TypeConstraint<Ts>("T"), MakeKernel<CompareOp<Ts, Functor<Ts>>>), ...);
}

template <template <typename> class Functor, bool kNotEqual, typename... Ts>
void RegisterEquality(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).TypeConstraint<Ts>("T"),
              MakeKernel<EqualityOp<Ts, Functor<Ts>, kNotEqual>>),
   ...);
}

template <typename Src, typename... Dsts>
void RegisterCastFrom(KernelRegistry& r) {
  (r.Register(KernelDef("Cast").TypeConstraint<Src>("SrcT").template TypeConstraint<Dsts>("DstT"),
              MakeKernel<CastOp<Src, Dsts>>),
   ...);
}

template <typename... Ts>
void RegisterCasts(KernelRegistry& r) {
  (RegisterCastFrom<Ts, Ts...>(r), ...);
}

}  // namespace

void RegisterCpuLogicKernels(KernelRegistry& r) {
  RegisterForTypes<SelectV2Op, float, double, int32_t, int64_t, bool>(r, kDeviceCpu, "SelectV2");
  RegisterEquality<EqualFn, false, float, double, int32_t, int64_t, bool>(r, "Equal");
  RegisterEquality<NotEqualFn, true, float, double, int32_t, int64_t, bool>(r, "NotEqual");
  RegisterCompare<LessFn, float, double, int32_t, int64_t>(r, "Less");
  RegisterCompare<GreaterFn, float, double, int32_t, int64_t>(r, "Greater");
  RegisterCompare<LessEqualFn, float, double, int32_t, int64_t>(r, "LessEqual");
  RegisterCompare<GreaterEqualFn, float, double, int32_t, int64_t>(r, "GreaterEqual");
  r.Register(KernelDef("LogicalAnd"), MakeKernel<LogicalBinaryOp<AndFn>>);
  r.Register(KernelDef("LogicalOr"), MakeKernel<LogicalBinaryOp<OrFn>>);
  r.Register(KernelDef("LogicalNot"), MakeKernel<LogicalNotOp>);
  r.Register(KernelDef("Select").TypeConstraint<float>("T"), MakeKernel<SelectOp<float>>);
  r.Register(KernelDef("Select").TypeConstraint<double>("T"), MakeKernel<SelectOp<double>>);
  r.Register(KernelDef("Select").TypeConstraint<int32_t>("T"), MakeKernel<SelectOp<int32_t>>);
  r.Register(KernelDef("Select").TypeConstraint<int64_t>("T"), MakeKernel<SelectOp<int64_t>>);
  r.Register(KernelDef("Select").TypeConstraint<bool>("T"), MakeKernel<SelectOp<bool>>);
  RegisterCasts<float, double, int32_t, int64_t, bool, uint8_t, half, bfloat16>(r);
}

}  // namespace rill
