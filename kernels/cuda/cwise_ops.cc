// GPU kernels for element-wise math: unary ops and activations, their
// gradients, binary ops and comparisons with NumPy broadcasting, logic,
// AddN, BiasAdd, and AssignAdd and AssignSub on reference variables. Each validates as its CPU
// twin, sizes its output on the host and queues one kernel (cwise_kernels.cu); scalar operands are
// read by the kernel from device memory, so nothing waits for the GPU. Integer division by zero
// differs from the CPU: see cwise_kernels.h.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/broadcast_shape.h"
#include "kernels/common/cwise_checks.h"
#include "kernels/common/nn_util.h"
#include "kernels/common/training_util.h"
#include "kernels/common/transform_util.h"
#include "kernels/cuda/array_kernels.h"
#include "kernels/cuda/cwise_kernels.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/framework/resource_mgr.h"

namespace rill {
namespace {

// The device's view of an element type: half as its bits.
template <typename T>
using Dev = std::conditional_t<std::is_same_v<T, half>, cuda::Half, T>;
static_assert(sizeof(half) == sizeof(cuda::Half));

template <typename T>
const Dev<T>* In(const Tensor& t) {
  return reinterpret_cast<const Dev<T>*>(t.data<T>());
}
template <typename T>
Dev<T>* Out(const Tensor& t) {
  return reinterpret_cast<Dev<T>*>(t.data<T>());
}

// A factory for kernels built from the construction context and `arg`.
template <typename K, typename Arg>
KernelFactory MakeKernelWith(Arg arg) {
  return [arg](const OpKernelConstruction& c) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
    return std::unique_ptr<OpKernel>(std::make_unique<K>(c, arg));
  };
}

template <typename T>
class GpuUnaryOp final : public OpKernel {
 public:
  GpuUnaryOp(const OpKernelConstruction& c, cuda::UnaryOp op) : OpKernel(c), op_(op) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    cuda::LaunchUnary(op_, In<T>(x), Out<T>(*y), x.NumElements(), gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }

 private:
  const cuda::UnaryOp op_;
};

template <typename T>
class GpuFloatClassOp final : public OpKernel {
 public:
  GpuFloatClassOp(const OpKernelConstruction& c, cuda::FloatClass op) : OpKernel(c), op_(op) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    cuda::LaunchFloatClass(op_, In<T>(x), y->data<bool>(), x.NumElements(), gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }

 private:
  const cuda::FloatClass op_;
};

// SigmoidGrad and its kin take (y, dy); ReluGrad takes (gradients,
// features), with the CPU's message for each.
template <typename T>
class GpuUnaryGradOp final : public OpKernel {
 public:
  GpuUnaryGradOp(const OpKernelConstruction& c, cuda::GradOp op) : OpKernel(c), op_(op) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const bool relu = op_ == cuda::GradOp::kRelu;
    const Tensor& y = ctx.input(relu ? 1 : 0);
    const Tensor& dy = ctx.input(relu ? 0 : 1);
    if (!relu) {
      RETURN_IF_ERROR(cwise_checks::CheckGradShapes(op(), y, dy));
    } else if (y.shape() != dy.shape()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("gradients and features must have the same shape: %s vs. %s",
                          dy.shape().DebugString(), y.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * z, ctx.AllocateOutput(0, y.shape()));
    cuda::LaunchUnaryGrad(op_, In<T>(y), In<T>(dy), Out<T>(*z), y.NumElements(),
                          gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }

 private:
  const cuda::GradOp op_;
};

// Where the elements of `out` read those of `a` and `b`: flat for one
// shape or a scalar operand, else the output folded into as few dimensions
// as broadcast.h's CPU evaluation uses, with each operand's strides.
absl::StatusOr<cuda::BroadcastIndex> IndexFor(const TensorShape& a, const TensorShape& b,
                                              const TensorShape& out) {
  cuda::BroadcastIndex index;
  if (a == b) return index;
  if (a.num_elements() == 1 || b.num_elements() == 1) {
    index.a_step = a.num_elements() == 1 ? 0 : 1;
    index.b_step = b.num_elements() == 1 ? 0 : 1;
    return index;
  }
  const broadcast_internal::Folded f = broadcast_internal::Fold(a, b, out);
  const int rank = static_cast<int>(f.out_dims.size());
  if (rank > cuda::kMaxBroadcastDims) {
    return absl::UnimplementedError(absl::StrFormat(
        "broadcasting %s against %s alternates over %d dimensions; the GPU kernels take at "
        "most %d",
        a.DebugString(), b.DebugString(), rank, cuda::kMaxBroadcastDims));
  }
  index.rank = rank;
  int64_t a_size = 1, b_size = 1;
  for (int i = rank - 1; i >= 0; --i) {
    index.dims[i] = f.out_dims[i];
    index.a_strides[i] = f.a_dims[i] == 1 ? 0 : a_size;
    index.b_strides[i] = f.b_dims[i] == 1 ? 0 : b_size;
    a_size *= f.a_dims[i];
    b_size *= f.b_dims[i];
  }
  return index;
}

// out = launch(a, b, out, n, index) for broadcasting operands, as the
// CPU's BinaryBroadcast.
template <typename OutT, typename Launch>
absl::Status Broadcast(KernelContext& ctx, const Tensor& a, const Tensor& b, Launch launch) {
  ASSIGN_OR_RETURN(TensorShape shape, BroadcastShape(a.shape(), b.shape()));
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
  if (shape.num_elements() == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(cuda::BroadcastIndex index, IndexFor(a.shape(), b.shape(), shape));
  launch(out->data<OutT>(), shape.num_elements(), index);
  return CheckLaunch(ctx, ctx.node().op());
}

template <typename T>
class GpuBinaryOp final : public OpKernel {
 public:
  GpuBinaryOp(const OpKernelConstruction& c, cuda::BinaryOp op) : OpKernel(c), op_(op) {}
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    return Broadcast<T>(ctx, a, b, [&](T* out, int64_t n, const cuda::BroadcastIndex& index) {
      cuda::LaunchBinary(op_, a.data<T>(), b.data<T>(), out, n, index, gpu->compute_stream());
    });
  }

 private:
  const cuda::BinaryOp op_;
};

// Comparisons, LogicalAnd and LogicalOr. Equal and NotEqual with
// incompatible_shape_error false compare operands that do not broadcast
// as a whole, giving a scalar.
template <typename T>
class GpuCompareOp final : public OpKernel {
 public:
  GpuCompareOp(const OpKernelConstruction& c, cuda::CompareOp op)
      : OpKernel(c),
        op_(op),
        strict_(GetBoolAttr(c.def(), "incompatible_shape_error").value_or(true)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& a = ctx.input(0);
    const Tensor& b = ctx.input(1);
    if (!strict_ && !BroadcastShape(a.shape(), b.shape()).ok()) {
      ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape()));
      cuda::LaunchFill(sizeof(bool), out->raw_data(), 1, nullptr,
                       op_ == cuda::CompareOp::kNotEqual ? 1 : 0, gpu->compute_stream());
      return CheckLaunch(ctx, op());
    }
    return Broadcast<bool>(ctx, a, b, [&](bool* out, int64_t n, const cuda::BroadcastIndex& index) {
      cuda::LaunchCompare(op_, a.data<T>(), b.data<T>(), out, n, index, gpu->compute_stream());
    });
  }

 private:
  const cuda::CompareOp op_;
  const bool strict_;
};

class GpuLogicalNotOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(Tensor * y, ctx.AllocateOutput(0, x.shape()));
    cuda::LaunchLogicalNot(x.data<bool>(), y->data<bool>(), x.NumElements(), gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }
};

// Sums in input order, as the CPU does: one launch per kMaxAddNInputs
// inputs, the later ones adding to the output.
template <typename T>
class GpuAddNOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    RETURN_IF_ERROR(cwise_checks::CheckAddNShapes(ctx));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, ctx.input(0).shape()));
    for (int first = 0; first < ctx.num_inputs(); first += cuda::kMaxAddNInputs) {
      cuda::AddNInputs<T> inputs{};
      inputs.count = std::min(ctx.num_inputs() - first, cuda::kMaxAddNInputs);
      for (int k = 0; k < inputs.count; ++k) inputs.inputs[k] = ctx.input(first + k).data<T>();
      cuda::LaunchAddN(inputs, first > 0, out->data<T>(), out->NumElements(),
                       gpu->compute_stream());
      RETURN_IF_ERROR(CheckLaunch(ctx, op()));
    }
    return absl::OkStatus();
  }
};

// value + bias along the channel dimension: a broadcast Add over the
// value's [outer, channels, inner] view.
template <typename T>
class GpuBiasAddOp final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(bool nchw, nn_util::ReadIsNchw(c));
    return std::unique_ptr<OpKernel>(new GpuBiasAddOp(c, nchw));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& value = ctx.input(0);
    const Tensor& bias = ctx.input(1);
    ASSIGN_OR_RETURN(const auto view, nn_util::BiasAddView(value, bias, nchw_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, value.shape()));
    cuda::BroadcastIndex index;
    index.rank = 3;
    for (int i = 0; i < 3; ++i) index.dims[i] = view[i];
    index.a_strides[0] = view[1] * view[2];
    index.a_strides[1] = view[2];
    index.a_strides[2] = 1;
    index.b_strides[1] = 1;
    cuda::LaunchBinary(cuda::BinaryOp::kAdd, value.data<T>(), bias.data<T>(), out->data<T>(),
                       value.NumElements(), index, gpu->compute_stream());
    return CheckLaunch(ctx, op());
  }

 private:
  GpuBiasAddOp(const OpKernelConstruction& c, bool nchw) : OpKernel(c), nchw_(nchw) {}
  const bool nchw_;
};

// AssignAdd (kAdd) and AssignSub in place on the variable's device buffer,
// as the CPU's AssignUpdateOp: with use_locking the update is queued under
// the variable's lock.
template <typename T, bool kAdd>
class GpuAssignUpdateOp final : public OpKernel {
 public:
  explicit GpuAssignUpdateOp(const OpKernelConstruction& c)
      : OpKernel(c), use_locking_(GetBoolAttr(c.def(), "use_locking").value_or(false)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    {
      training_util::RefInputLocks lock(ctx, {0}, use_locking_);
      ASSIGN_OR_RETURN(Tensor var, training_util::AssignUpdateVariable(ctx, use_locking_));
      cuda::LaunchBinary(kAdd ? cuda::BinaryOp::kAdd : cuda::BinaryOp::kSub, var.data<T>(),
                         ctx.input(1).data<T>(), var.data<T>(), var.NumElements(),
                         cuda::BroadcastIndex(), gpu->compute_stream());
      RETURN_IF_ERROR(CheckLaunch(ctx, op()));
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const bool use_locking_;
};

template <template <typename> class K, typename Arg, typename... Ts>
void RegisterWith(KernelRegistry& r, const char* op, Arg arg) {
  (r.Register(KernelDef(op).Device(kDeviceGpu).TypeConstraint<Ts>("T"), MakeKernelWith<K<Ts>>(arg)),
   ...);
}

template <typename... Ts>
void RegisterUnary(KernelRegistry& r, const char* op, cuda::UnaryOp unary) {
  RegisterWith<GpuUnaryOp, cuda::UnaryOp, Ts...>(r, op, unary);
}
template <typename... Ts>
void RegisterGrad(KernelRegistry& r, const char* op, cuda::GradOp grad) {
  RegisterWith<GpuUnaryGradOp, cuda::GradOp, Ts...>(r, op, grad);
}
template <typename... Ts>
void RegisterBinary(KernelRegistry& r, const char* op, cuda::BinaryOp binary) {
  RegisterWith<GpuBinaryOp, cuda::BinaryOp, Ts...>(r, op, binary);
}
template <typename... Ts>
void RegisterCompare(KernelRegistry& r, const char* op, cuda::CompareOp compare) {
  RegisterWith<GpuCompareOp, cuda::CompareOp, Ts...>(r, op, compare);
}

template <typename... Ts>
void RegisterBiasAdd(KernelRegistry& r) {
  (r.Register(KernelDef("BiasAdd").Device(kDeviceGpu).TypeConstraint<Ts>("T"),
              &GpuBiasAddOp<Ts>::Create),
   ...);
}

template <typename T>
using GpuAssignAddOp = GpuAssignUpdateOp<T, true>;
template <typename T>
using GpuAssignSubOp = GpuAssignUpdateOp<T, false>;

void RegisterUnaryKernels(KernelRegistry& r) {
  using U = cuda::UnaryOp;
  RegisterUnary<float, double, int64_t>(r, "Neg", U::kNeg);
  RegisterUnary<float, double, int64_t>(r, "Square", U::kSquare);
  RegisterUnary<float, double, int64_t>(r, "Abs", U::kAbs);
  RegisterUnary<float, double, int64_t>(r, "Sign", U::kSign);
  RegisterUnary<float, double>(r, "Reciprocal", U::kReciprocal);
  RegisterUnary<float, double>(r, "Inv", U::kReciprocal);
  RegisterUnary<float, double, half>(r, "Floor", U::kFloor);
  RegisterUnary<float, double, half>(r, "Ceil", U::kCeil);
  RegisterUnary<float, double>(r, "Rint", U::kRint);
  RegisterUnary<float, double, half, int64_t>(r, "Round", U::kRound);
  RegisterUnary<float, double>(r, "Sqrt", U::kSqrt);
  RegisterUnary<float, double>(r, "Rsqrt", U::kRsqrt);
  RegisterUnary<float, double>(r, "Exp", U::kExp);
  RegisterUnary<float, double>(r, "Log", U::kLog);
  RegisterUnary<float, double>(r, "Sigmoid", U::kSigmoid);
  RegisterUnary<float, double>(r, "Tanh", U::kTanh);
  RegisterUnary<float, double, int64_t>(r, "Relu", U::kRelu);
  RegisterUnary<float, double, int64_t>(r, "Relu6", U::kRelu6);
  using C = cuda::FloatClass;
  RegisterWith<GpuFloatClassOp, C, float, double, half>(r, "IsNan", C::kIsNan);
  RegisterWith<GpuFloatClassOp, C, float, double, half>(r, "IsInf", C::kIsInf);
  RegisterWith<GpuFloatClassOp, C, float, double, half>(r, "IsFinite", C::kIsFinite);
  using G = cuda::GradOp;
  RegisterGrad<float, double>(r, "SigmoidGrad", G::kSigmoid);
  RegisterGrad<float, double>(r, "TanhGrad", G::kTanh);
  RegisterGrad<float, double>(r, "SqrtGrad", G::kSqrt);
  RegisterGrad<float, double>(r, "RsqrtGrad", G::kRsqrt);
  RegisterGrad<float, double>(r, "ReciprocalGrad", G::kReciprocal);
  RegisterGrad<float, double>(r, "InvGrad", G::kReciprocal);
  RegisterGrad<float, double, int64_t>(r, "ReluGrad", G::kRelu);
}

void RegisterBinaryKernels(KernelRegistry& r) {
  using B = cuda::BinaryOp;
  RegisterBinary<float, double, int64_t>(r, "Add", B::kAdd);
  RegisterBinary<float, double, int64_t>(r, "AddV2", B::kAdd);
  RegisterBinary<float, double, int64_t>(r, "Sub", B::kSub);
  RegisterBinary<float, double, int64_t>(r, "Mul", B::kMul);
  RegisterBinary<float, double, int64_t>(r, "Div", B::kDiv);
  RegisterBinary<float, double>(r, "RealDiv", B::kDiv);
  RegisterBinary<int64_t>(r, "TruncateDiv", B::kTruncateDiv);
  RegisterBinary<float, double, int64_t>(r, "FloorDiv", B::kFloorDiv);
  RegisterBinary<float, double, int64_t>(r, "FloorMod", B::kFloorMod);
  RegisterBinary<float, double, int64_t>(r, "TruncateMod", B::kTruncateMod);
  RegisterBinary<float, double, int64_t>(r, "Mod", B::kTruncateMod);
  RegisterBinary<float, double, int64_t>(r, "SquaredDifference", B::kSquaredDifference);
  RegisterBinary<float, double, int64_t>(r, "Maximum", B::kMaximum);
  RegisterBinary<float, double, int64_t>(r, "Minimum", B::kMinimum);
  RegisterBinary<float, double, int64_t>(r, "Pow", B::kPow);
  using C = cuda::CompareOp;
  RegisterCompare<float, double, int64_t, bool>(r, "Equal", C::kEqual);
  RegisterCompare<float, double, int64_t, bool>(r, "NotEqual", C::kNotEqual);
  RegisterCompare<float, double, int64_t>(r, "Less", C::kLess);
  RegisterCompare<float, double, int64_t>(r, "Greater", C::kGreater);
  RegisterCompare<float, double, int64_t>(r, "LessEqual", C::kLessEqual);
  RegisterCompare<float, double, int64_t>(r, "GreaterEqual", C::kGreaterEqual);
  r.Register(KernelDef("LogicalAnd").Device(kDeviceGpu),
             MakeKernelWith<GpuCompareOp<bool>>(C::kLogicalAnd));
  r.Register(KernelDef("LogicalOr").Device(kDeviceGpu),
             MakeKernelWith<GpuCompareOp<bool>>(C::kLogicalOr));
  r.Register(KernelDef("LogicalNot").Device(kDeviceGpu), MakeKernel<GpuLogicalNotOp>);
}

}  // namespace

void RegisterGpuCwiseKernels(KernelRegistry& r) {
  RegisterUnaryKernels(r);
  RegisterBinaryKernels(r);
  RegisterForTypes<GpuAddNOp, float, double, int64_t>(r, kDeviceGpu, "AddN");
  RegisterBiasAdd<float, double, int64_t>(r);
  RegisterForTypes<GpuAssignAddOp, float, double, int64_t>(r, kDeviceGpu, "AssignAdd");
  RegisterForTypes<GpuAssignSubOp, float, double, int64_t>(r, kDeviceGpu, "AssignSub");
}

}  // namespace rill
