// Const on a GPU: the value is copied to the device by the first run and
// shared by every later one. (The variable kernels are the CPU's, which
// copy through the device context: kernels/cpu/state_ops.cc.)
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/device_context.h"

namespace rill {
namespace {

class GpuConstOp final : public OpKernel {
 public:
  GpuConstOp(const OpKernelConstruction& c, Tensor value) : OpKernel(c), value_(std::move(value)) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const TensorProto* proto, GetTensorAttr(c.def(), "value"));
    ASSIGN_OR_RETURN(DataType dtype, GetTypeAttr(c.def(), "dtype"));
    ASSIGN_OR_RETURN(Tensor value, TensorFromProto(*proto));
    if (value.dtype() != dtype) {
      return absl::InvalidArgumentError(absl::StrFormat("Const value has type %s but dtype is %s",
                                                        DataTypeString(value.dtype()),
                                                        DataTypeString(dtype)));
    }
    return std::unique_ptr<OpKernel>(std::make_unique<GpuConstOp>(c, std::move(value)));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    if (InHostMemory(value_.dtype()) || ctx.device_context() == nullptr) {
      ctx.set_output(0, value_);
      return absl::OkStatus();
    }
    absl::MutexLock lock(&mu_);
    if (!on_device_.IsInitialized()) {
      ASSIGN_OR_RETURN(Tensor copy, ctx.AllocateTemp(value_.dtype(), value_.shape()));
      // `value_` outlives the copy, which the stream orders before every
      // reader of the output.
      RETURN_IF_ERROR(ctx.device_context()->CopyHostBytesToDevice(
          value_.raw_data(), copy.raw_data(), value_.TotalBytes()));
      on_device_ = std::move(copy);
    }
    ctx.set_output(0, on_device_);
    return absl::OkStatus();
  }
  bool IsExpensive() const override { return false; }

 private:
  const Tensor value_;
  mutable absl::Mutex mu_;
  // Shared by every run; consumers never write inputs.
  mutable Tensor on_device_ ABSL_GUARDED_BY(mu_);
};

}  // namespace

void RegisterGpuStateKernels(KernelRegistry& registry) {
  registry.Register(KernelDef("Const").Device(kDeviceGpu), GpuConstOp::Create);
}

}  // namespace rill
