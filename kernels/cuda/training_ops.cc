// GPU kernels for the optimizer updates ApplyGradientDescent, ApplyMomentum
// and ApplyAdam: one kernel per update, queued on the compute stream, which
// reads the scalar hyper-parameters from device memory, so nothing waits
// for the GPU. With use_locking the update is queued under the variables'
// mutexes, as the CPU kernels run theirs; the stream then orders it after
// every update queued before.
#include <memory>
#include <vector>

#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/training_util.h"
#include "kernels/cuda/cwise_kernels.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"

namespace rill {
namespace {

using training_util::ApplyAttrs;
using training_util::CheckedVariables;
using training_util::RefInputLocks;

// var -= alpha * delta.
template <typename T>
class GpuApplyGradientDescentOp final : public OpKernel {
 public:
  explicit GpuApplyGradientDescentOp(const OpKernelConstruction& c)
      : OpKernel(c), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    {
      const auto& layout = training_util::kGradientDescentLayout;
      RefInputLocks locks(ctx, layout.VariableInputs(), attrs_.use_locking);
      ASSIGN_OR_RETURN(std::vector<Tensor> vars, CheckedVariables(ctx, layout, attrs_.use_locking));
      cuda::LaunchApplyGradientDescent(vars[0].data<T>(), ctx.input(1).data<T>(),
                                       ctx.input(2).data<T>(), vars[0].NumElements(),
                                       gpu->compute_stream());
      RETURN_IF_ERROR(CheckLaunch(ctx, "ApplyGradientDescent"));
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
class GpuApplyMomentumOp final : public OpKernel {
 public:
  explicit GpuApplyMomentumOp(const OpKernelConstruction& c)
      : OpKernel(c), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    {
      const auto& layout = training_util::kMomentumLayout;
      RefInputLocks locks(ctx, layout.VariableInputs(), attrs_.use_locking);
      ASSIGN_OR_RETURN(std::vector<Tensor> vars, CheckedVariables(ctx, layout, attrs_.use_locking));
      cuda::LaunchApplyMomentum(vars[0].data<T>(), vars[1].data<T>(), ctx.input(2).data<T>(),
                                ctx.input(3).data<T>(), ctx.input(4).data<T>(), attrs_.use_nesterov,
                                vars[0].NumElements(), gpu->compute_stream());
      RETURN_IF_ERROR(CheckLaunch(ctx, "ApplyMomentum"));
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
class GpuApplyAdamOp final : public OpKernel {
 public:
  explicit GpuApplyAdamOp(const OpKernelConstruction& c)
      : OpKernel(c), attrs_(ApplyAttrs::From(c)) {}

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    {
      const auto& layout = training_util::kAdamLayout;
      RefInputLocks locks(ctx, layout.VariableInputs(), attrs_.use_locking);
      ASSIGN_OR_RETURN(std::vector<Tensor> vars, CheckedVariables(ctx, layout, attrs_.use_locking));
      const cuda::AdamScalars<T> scalars = {ctx.input(3).data<T>(), ctx.input(4).data<T>(),
                                            ctx.input(5).data<T>(), ctx.input(6).data<T>(),
                                            ctx.input(7).data<T>(), ctx.input(8).data<T>()};
      cuda::LaunchApplyAdam(vars[0].data<T>(), vars[1].data<T>(), vars[2].data<T>(), scalars,
                            ctx.input(9).data<T>(), attrs_.use_nesterov, vars[0].NumElements(),
                            gpu->compute_stream());
      RETURN_IF_ERROR(CheckLaunch(ctx, "ApplyAdam"));
    }
    ctx.forward_ref_input_to_ref_output(0, 0);
    return absl::OkStatus();
  }

 private:
  const ApplyAttrs attrs_;
};

}  // namespace

void RegisterGpuTrainingKernels(KernelRegistry& registry) {
  RegisterForTypes<GpuApplyGradientDescentOp, float, double>(registry, kDeviceGpu,
                                                             "ApplyGradientDescent");
  RegisterForTypes<GpuApplyMomentumOp, float, double>(registry, kDeviceGpu, "ApplyMomentum");
  RegisterForTypes<GpuApplyAdamOp, float, double>(registry, kDeviceGpu, "ApplyAdam");
}

}  // namespace rill
