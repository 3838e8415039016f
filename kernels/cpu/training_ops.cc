// CPU kernels for the optimizer updates ApplyGradientDescent, ApplyMomentum
// and ApplyAdam: each updates a variable (and its slots) in place with
// Eigen on the intra-op pool and forwards the variable's reference. With
// use_locking the update runs under the variables' mutexes; without it,
// concurrent updates race as TensorFlow allows.
#include <algorithm>
#include <cmath>
#include <initializer_list>
#include <optional>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu_threads.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"
#include "kernels/resource_mgr.h"

namespace rill {
namespace {

// Holds the distinct mutexes of some reference inputs, taken in address
// order so that updates sharing variables (or a mutex) cannot deadlock.
class RefInputLocks {
 public:
  RefInputLocks(const KernelContext& ctx, std::initializer_list<int> inputs, bool lock) {
    if (!lock) return;
    for (int i : inputs) mutexes_.push_back(ctx.input_ref_mutex(i));
    std::sort(mutexes_.begin(), mutexes_.end());
    mutexes_.erase(std::unique(mutexes_.begin(), mutexes_.end()), mutexes_.end());
    for (absl::Mutex* mu : mutexes_) mu->Lock();
  }
  ~RefInputLocks() {
    for (auto it = mutexes_.rbegin(); it != mutexes_.rend(); ++it) (*it)->Unlock();
  }
  RefInputLocks(const RefInputLocks&) = delete;
  RefInputLocks& operator=(const RefInputLocks&) = delete;

 private:
  std::vector<absl::Mutex*> mutexes_;
};

// The tensor of reference input `i`: the variable itself when its lock is
// held, else the snapshot read when the context was made (which shares the
// variable's buffer). FAILED_PRECONDITION naming it when uninitialized.
absl::StatusOr<Tensor> RefTensor(const KernelContext& ctx, int i, bool locked) {
  const Tensor& t = locked ? *ctx.mutable_input(i) : ctx.input(i);
  if (!t.IsInitialized()) return UninitializedValueError(ctx, i);
  return t;
}

absl::Status CheckSameShape(const KernelContext& ctx, const Tensor& var, const Tensor& other,
                            const char* other_name) {
  if (var.shape() == other.shape()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "%s: var %s and %s do not have the same shape: %s vs %s", ctx.node().op(),
      RefInputName(ctx, 0), other_name, var.shape().DebugString(), other.shape().DebugString()));
}

// The value of scalar input `i`, named `name` in messages.
template <typename T>
absl::StatusOr<T> ScalarInput(const KernelContext& ctx, int i, const char* name) {
  const Tensor& t = ctx.input(i);
  if (t.dims() != 0) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: %s is not a scalar: %s", ctx.node().op(),
                                                      name, t.shape().DebugString()));
  }
  return t.scalar<T>();
}

struct ApplyAttrs {
  bool use_locking;
  bool use_nesterov;

  static ApplyAttrs From(const OpKernelConstruction& c) {
    return {GetBoolAttr(c.def(), "use_locking").value_or(false),
            GetBoolAttr(c.def(), "use_nesterov").value_or(false)};
  }
};

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
