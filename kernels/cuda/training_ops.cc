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
#include "kernels/common/training_util.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/training_kernels.h"

namespace rill {
namespace {

using training_util::ApplyOp;

// var -= alpha * delta.
template <typename T>
class GpuApplyGradientDescentOp final : public ApplyOp {
 public:
  explicit GpuApplyGradientDescentOp(const OpKernelConstruction& c)
      : ApplyOp(c, training_util::kGradientDescentLayout) {}

 private:
  absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    cuda::LaunchApplyGradientDescent(vars[0].data<T>(), ctx.input(1).data<T>(),
                                     ctx.input(2).data<T>(), vars[0].NumElements(),
                                     gpu->compute_stream());
    return CheckLaunch(ctx, "ApplyGradientDescent");
  }
};

// accum = accum * momentum + grad; var -= lr * accum, or with Nesterov
// var -= lr * grad + lr * momentum * accum.
template <typename T>
class GpuApplyMomentumOp final : public ApplyOp {
 public:
  explicit GpuApplyMomentumOp(const OpKernelConstruction& c)
      : ApplyOp(c, training_util::kMomentumLayout) {}

 private:
  absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    cuda::LaunchApplyMomentum(vars[0].data<T>(), vars[1].data<T>(), ctx.input(2).data<T>(),
                              ctx.input(3).data<T>(), ctx.input(4).data<T>(), use_nesterov(),
                              vars[0].NumElements(), gpu->compute_stream());
    return CheckLaunch(ctx, "ApplyMomentum");
  }
};

// lr_t = lr * sqrt(1 - beta2^t) / (1 - beta1^t); m += (g - m) * (1 - beta1);
// v += (g^2 - v) * (1 - beta2); var -= lr_t * m / (sqrt(v) + epsilon), or
// with Nesterov m replaced by m * beta1 + (1 - beta1) * g.
template <typename T>
class GpuApplyAdamOp final : public ApplyOp {
 public:
  explicit GpuApplyAdamOp(const OpKernelConstruction& c) : ApplyOp(c, training_util::kAdamLayout) {}

 private:
  absl::Status Update(KernelContext& ctx, std::vector<Tensor>& vars) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const cuda::AdamScalars<T> scalars = {ctx.input(3).data<T>(), ctx.input(4).data<T>(),
                                          ctx.input(5).data<T>(), ctx.input(6).data<T>(),
                                          ctx.input(7).data<T>(), ctx.input(8).data<T>()};
    cuda::LaunchApplyAdam(vars[0].data<T>(), vars[1].data<T>(), vars[2].data<T>(), scalars,
                          ctx.input(9).data<T>(), use_nesterov(), vars[0].NumElements(),
                          gpu->compute_stream());
    return CheckLaunch(ctx, "ApplyAdam");
  }
};

}  // namespace

void RegisterGpuTrainingKernels(KernelRegistry& registry) {
  RegisterForTypes<GpuApplyGradientDescentOp, float, double>(registry, kDeviceGpu,
                                                             "ApplyGradientDescent");
  RegisterForTypes<GpuApplyMomentumOp, float, double>(registry, kDeviceGpu, "ApplyMomentum");
  RegisterForTypes<GpuApplyAdamOp, float, double>(registry, kDeviceGpu, "ApplyAdam");
}

}  // namespace rill
