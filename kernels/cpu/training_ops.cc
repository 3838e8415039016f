// CPU kernels for the optimizer updates ApplyGradientDescent, ApplyMomentum
// and ApplyAdam: each updates a variable (and its slots) in place with
// Eigen on the intra-op pool and forwards the variable's reference. With
// use_locking the update runs under the variables' mutexes; without it,
// concurrent updates race as TensorFlow allows.
#include <cmath>
#include <vector>

#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/training_util.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using training_util::ApplyOp;

// var -= alpha * delta.
template <typename T>
class ApplyGradientDescentOp final : public ApplyOp {
 public:
  explicit ApplyGradientDescentOp(const OpKernelConstruction& c)
      : ApplyOp(c, training_util::kGradientDescentLayout) {}

 private:
  absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const override {
    const T alpha = ctx.input(1).scalar<T>();
    vars[0].flat<T>().device(ctx.eigen_cpu()) -= ctx.input(2).flat<T>() * alpha;
    return absl::OkStatus();
  }
};

// accum = accum * momentum + grad; var -= lr * accum, or with Nesterov
// var -= lr * grad + lr * momentum * accum.
template <typename T>
class ApplyMomentumOp final : public ApplyOp {
 public:
  explicit ApplyMomentumOp(const OpKernelConstruction& c)
      : ApplyOp(c, training_util::kMomentumLayout) {}

 private:
  absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const override {
    const T lr = ctx.input(2).scalar<T>();
    const T momentum = ctx.input(4).scalar<T>();
    const auto& device = ctx.eigen_cpu();
    auto v = vars[0].flat<T>();
    auto a = vars[1].flat<T>();
    auto g = ctx.input(3).flat<T>();
    a.device(device) = a * momentum + g;
    if (use_nesterov()) {
      v.device(device) -= g * lr + a * (momentum * lr);
    } else {
      v.device(device) -= a * lr;
    }
    return absl::OkStatus();
  }
};

// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m) * (1 - beta1);
// v += (g^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon), or
// with Nesterov m replaced by m * beta1 + (1 - beta1) * g.
template <typename T>
class ApplyAdamOp final : public ApplyOp {
 public:
  explicit ApplyAdamOp(const OpKernelConstruction& c) : ApplyOp(c, training_util::kAdamLayout) {}

 private:
  absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const override {
    const T beta1_power = ctx.input(3).scalar<T>();
    const T beta2_power = ctx.input(4).scalar<T>();
    const T lr = ctx.input(5).scalar<T>();
    const T beta1 = ctx.input(6).scalar<T>();
    const T beta2 = ctx.input(7).scalar<T>();
    const T epsilon = ctx.input(8).scalar<T>();
    const auto& device = ctx.eigen_cpu();
    const T one(1);
    const T lr_t = lr * std::sqrt(one - beta2_power) / (one - beta1_power);
    auto w = vars[0].flat<T>();
    auto mf = vars[1].flat<T>();
    auto vf = vars[2].flat<T>();
    auto g = ctx.input(9).flat<T>();
    mf.device(device) += (g - mf) * (one - beta1);
    vf.device(device) += (g.square() - vf) * (one - beta2);
    if (use_nesterov()) {
      w.device(device) -= ((g * (one - beta1) + mf * beta1) * lr_t) / (vf.sqrt() + epsilon);
    } else {
      w.device(device) -= (mf * lr_t) / (vf.sqrt() + epsilon);
    }
    return absl::OkStatus();
  }
};

}  // namespace

void RegisterCpuTrainingKernels(KernelRegistry& r) {
  RegisterForTypes<ApplyGradientDescentOp, float, double>(r, kDeviceCpu, "ApplyGradientDescent");
  RegisterForTypes<ApplyMomentumOp, float, double>(r, kDeviceCpu, "ApplyMomentum");
  RegisterForTypes<ApplyAdamOp, float, double>(r, kDeviceCpu, "ApplyAdam");
}

}  // namespace rill
