// CPU kernel for ClipByValue: t limited to [clip_value_min, clip_value_max]
// element-wise, each bound a scalar or a tensor of t's shape.
#include <cstdint>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

template <typename T>
class ClipByValueOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& t = ctx.input(0);
    const Tensor& lo = ctx.input(1);
    const Tensor& hi = ctx.input(2);
    const auto fits = [&](const Tensor& bound) {
      return bound.dims() == 0 || bound.shape() == t.shape();
    };
    if (!fits(lo) || !fits(hi)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: clip_value_min and clip_value_max must be either scalars or have the same shape "
          "as t: t %s, clip_value_min %s, clip_value_max %s",
          op(), t.shape().DebugString(), lo.shape().DebugString(), hi.shape().DebugString()));
    }
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, t.shape()));
    const Eigen::DenseIndex n = t.NumElements();
    if (n == 0) return absl::OkStatus();
    // A scalar bound is a one-element view repeated n times, so that both
    // kinds of bound make one expression type.
    const auto bound = [n](const Tensor& b) {
      const bool scalar = b.dims() == 0;
      const Eigen::array<Eigen::DenseIndex, 1> repeat{scalar ? n : 1};
      return Tensor::ConstTensorMap<T, 1>(b.data<T>(), scalar ? 1 : n).broadcast(repeat);
    };
    // The upper bound first, then the lower, as TensorFlow: where min > max
    // the result is min, and a NaN in t stays NaN.
    out->flat<T>().device(ctx.eigen_cpu()) =
        t.flat<T>().binaryExpr(bound(hi), MinFn()).binaryExpr(bound(lo), MaxFn());
    return absl::OkStatus();
  }

 private:
  using MinFn = Eigen::internal::scalar_min_op<T, T>;
  using MaxFn = Eigen::internal::scalar_max_op<T, T>;
};

template <typename... Ts>
void RegisterClipByValue(KernelRegistry& r) {
  (r.Register(KernelDef("ClipByValue").TypeConstraint<Ts>("T"), MakeKernel<ClipByValueOp<Ts>>),
   ...);
}

}  // namespace

void RegisterCpuClipKernels(KernelRegistry& r) {
  RegisterClipByValue<float, double, int32_t, int64_t>(r);
}

}  // namespace rill
