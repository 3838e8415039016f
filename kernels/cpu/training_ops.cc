// CPU kernels for the optimizer updates ApplyGradientDescent, ApplyMomentum
// and ApplyAdam: each updates a variable (and its slots) in place with
// Eigen on the intra-op pool and forwards the variable's reference. With
// use_locking the update runs under the variables' mutexes; without it,
// concurrent updates race as TensorFlow allows.
#include <cmath>

#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/training_util.h"
#include "kernels/cpu_threads.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"
#include "kernels/resource_mgr.h"

namespace rill {
namespace {

using training_util::ApplyAttrs;
using training_util::CheckSameShape;
using training_util::RefInputLocks;
using training_util::RefTensor;

// The value of scalar input `i`, named `name` in messages.
template <typename T>
absl::StatusOr<T> ScalarInput(const KernelContext& ctx, int i, const char* name) {
  RETURN_IF_ERROR(training_util::CheckScalarInput(ctx, i, name));
  return ctx.input(i).scalar<T>();
}

// var -= alpha * delta.
template <typename T>
class ApplyGradientDescentOp final : public OpKernel {
 public:
  explicit ApplyGradientDescentOp(const OpKernelConstruction& c)
      : OpKernel(c), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    {
      RefInputLocks locks(ctx, {0}, attrs_.use_locking);
      ASSIGN_OR_RETURN(Tensor var, RefTensor(ctx, 0, attrs_.use_locking));
      ASSIGN_OR_RETURN(T alpha, ScalarInput<T>(ctx, 1, "alpha"));
      const Tensor& delta = ctx.input(2);
      RETURN_IF_ERROR(CheckSameShape(ctx, var, delta, "delta"));
      var.flat<T>().device(ctx.eigen_cpu()) -= delta.flat<T>() * alpha;
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const ApplyAttrs attrs_;
};

// accum = accum * momentum + grad; var -= lr * accum, or with Nesterov
// var -= lr * grad + lr * momentum * accum.
template <typename T>
class ApplyMomentumOp final : public OpKernel {
 public:
  explicit ApplyMomentumOp(const OpKernelConstruction& c)
      : OpKernel(c), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    {
      RefInputLocks locks(ctx, {0, 1}, attrs_.use_locking);
      ASSIGN_OR_RETURN(Tensor var, RefTensor(ctx, 0, attrs_.use_locking));
      ASSIGN_OR_RETURN(Tensor accum, RefTensor(ctx, 1, attrs_.use_locking));
      RETURN_IF_ERROR(CheckSameShape(ctx, var, accum, "accum"));
      ASSIGN_OR_RETURN(T lr, ScalarInput<T>(ctx, 2, "lr"));
      const Tensor& grad = ctx.input(3);
      RETURN_IF_ERROR(CheckSameShape(ctx, var, grad, "grad"));
      ASSIGN_OR_RETURN(T momentum, ScalarInput<T>(ctx, 4, "momentum"));

      const auto& device = ctx.eigen_cpu();
      auto v = var.flat<T>();
      auto a = accum.flat<T>();
      auto g = grad.flat<T>();
      a.device(device) = a * momentum + g;
      if (attrs_.use_nesterov) {
        v.device(device) -= g * lr + a * (momentum * lr);
      } else {
        v.device(device) -= a * lr;
      }
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const ApplyAttrs attrs_;
};

// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m) * (1 - beta1);
// v += (g^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon), or
// with Nesterov m replaced by m * beta1 + (1 - beta1) * g.
template <typename T>
class ApplyAdamOp final : public OpKernel {
 public:
  explicit ApplyAdamOp(const OpKernelConstruction& c) : OpKernel(c), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    {
      RefInputLocks locks(ctx, {0, 1, 2}, attrs_.use_locking);
      ASSIGN_OR_RETURN(Tensor var, RefTensor(ctx, 0, attrs_.use_locking));
      ASSIGN_OR_RETURN(Tensor m, RefTensor(ctx, 1, attrs_.use_locking));
      ASSIGN_OR_RETURN(Tensor v, RefTensor(ctx, 2, attrs_.use_locking));
      RETURN_IF_ERROR(CheckSameShape(ctx, var, m, "m"));
      RETURN_IF_ERROR(CheckSameShape(ctx, var, v, "v"));
      ASSIGN_OR_RETURN(T beta1_power, ScalarInput<T>(ctx, 3, "beta1_power"));
      ASSIGN_OR_RETURN(T beta2_power, ScalarInput<T>(ctx, 4, "beta2_power"));
      ASSIGN_OR_RETURN(T lr, ScalarInput<T>(ctx, 5, "lr"));
      ASSIGN_OR_RETURN(T beta1, ScalarInput<T>(ctx, 6, "beta1"));
      ASSIGN_OR_RETURN(T beta2, ScalarInput<T>(ctx, 7, "beta2"));
      ASSIGN_OR_RETURN(T epsilon, ScalarInput<T>(ctx, 8, "epsilon"));
      const Tensor& grad = ctx.input(9);
      RETURN_IF_ERROR(CheckSameShape(ctx, var, grad, "grad"));

      const auto& device = ctx.eigen_cpu();
      const T one(1);
      const T lr_t = lr * std::sqrt(one - beta2_power) / (one - beta1_power);
      auto w = var.flat<T>();
      auto mf = m.flat<T>();
      auto vf = v.flat<T>();
      auto g = grad.flat<T>();
      mf.device(device) += (g - mf) * (one - beta1);
      vf.device(device) += (g.square() - vf) * (one - beta2);
      if (attrs_.use_nesterov) {
        w.device(device) -= ((g * (one - beta1) + mf * beta1) * lr_t) / (vf.sqrt() + epsilon);
      } else {
        w.device(device) -= (mf * lr_t) / (vf.sqrt() + epsilon);
      }
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const ApplyAttrs attrs_;
};

template <template <typename> class K, typename... Ts>
void RegisterForTypes(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceCpu).TypeConstraint<Ts>("T"), MakeKernel<K<Ts>>), ...);
}

}  // namespace

void RegisterCpuTrainingKernels(KernelRegistry& r) {
  RegisterForTypes<ApplyGradientDescentOp, float, double>(r, "ApplyGradientDescent");
  RegisterForTypes<ApplyMomentumOp, float, double>(r, "ApplyMomentum");
  RegisterForTypes<ApplyAdamOp, float, double>(r, "ApplyAdam");
}

}  // namespace rill
