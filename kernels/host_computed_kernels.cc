#include "kernels/host_computed_kernels.h"

#include <algorithm>
#include <iterator>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "kernels/framework/device_context.h"

namespace rill {
namespace {

// Each is TensorFlow's GPU kernel in spirit: Where waits for its input as
// TensorFlow's does; the rest run once per graph (initializers, accuracy)
// or take host inputs (int32 shapes and labels) and write a few bytes. The
// CPU kernels of these ops read no reference input's elements (only
// whether it is initialized), so a reference passes as it is.
constexpr const char* kOps[] = {
    "Where",
    "IsVariableInitialized",
    "VarIsInitializedOp",
    // Gradient helpers: shapes stitched (int32, on the host) and the
    // element counts a mean divides by, cast to the gradient's type.
    "DynamicStitch",
    "Cast",
    // Accuracy: the predicted class (an int32 on the host) and its match.
    "ArgMax",
    "Equal",
    // Zeros of a shape given as int64 (on the device), for initializers.
    "Fill",
    // The shape and value types the CUDA random kernels do not take (int64
    // shapes, half and bfloat16 values).
    "RandomUniform",
    "RandomStandardNormal",
    "TruncatedNormal",
};

class HostComputedKernel : public OpKernel {
 public:
  HostComputedKernel(const OpKernelConstruction& c, std::unique_ptr<OpKernel> cpu)
      : OpKernel(c), cpu_(std::move(cpu)), output_types_(c.signature().output_types) {}

  bool IsExpensive() const override { return cpu_->IsExpensive(); }

  absl::Status Compute(KernelContext& ctx) const override {
    DeviceContext* device = ctx.device_context();
    if (device == nullptr) return cpu_->Compute(ctx);  // The device's memory is the host's.
    std::vector<TensorValue> inputs(ctx.num_inputs());
    for (int i = 0; i < ctx.num_inputs(); ++i) {
      if (ctx.input_is_ref(i)) {
        inputs[i].ref = ctx.mutable_input(i);
        inputs[i].ref_mu = ctx.input_ref_mutex(i);
      } else {
        ASSIGN_OR_RETURN(inputs[i].tensor, ReadToHost(*device, ctx.input(i)));
      }
    }
    KernelContext::Params params;
    params.node = &ctx.node();
    params.inputs = std::move(inputs);
    params.output_types = output_types_;
    params.eigen_cpu = &ctx.eigen_cpu();
    params.allocator = device->host_allocator();
    params.step_id = ctx.step_id();
    params.resource_manager = ctx.resource_manager();
    params.cancellation = ctx.cancellation();
    KernelContext host(std::move(params));
    RETURN_IF_ERROR(cpu_->Compute(host));
    for (int i = 0; i < ctx.num_outputs(); ++i) {
      const TensorValue& value = host.output(i);
      if (value.is_ref()) {
        return absl::InternalError(absl::StrFormat(
            "'%s' (%s): a kernel computed on the host cannot output a reference", name(), op()));
      }
      if (InHostMemory(output_types_[i])) {
        ctx.set_output(i, value.tensor);
        continue;
      }
      ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(i, value.tensor.shape()));
      if (out->TotalBytes() > 0) {
        RETURN_IF_ERROR(device->CopyHostBytesToDevice(value.tensor.raw_data(), out->raw_data(),
                                                      out->TotalBytes()));
      }
    }
    return absl::OkStatus();
  }

 private:
  const std::unique_ptr<OpKernel> cpu_;
  const DataTypeVector output_types_;
};

}  // namespace

absl::StatusOr<Tensor> ReadToHost(DeviceContext& device, const Tensor& tensor) {
  if (InHostMemory(tensor.dtype()) || tensor.TotalBytes() == 0) return tensor;
  Tensor host;
  absl::Status copied;
  absl::Notification done;
  device.CopyToHost(tensor, &host, [&](absl::Status status) {
    copied = std::move(status);
    done.Notify();
  });
  done.WaitForNotification();
  RETURN_IF_ERROR(copied);
  return host;
}

std::unique_ptr<OpKernel> ComputeOnHost(const OpKernelConstruction& c,
                                        std::unique_ptr<OpKernel> cpu) {
  return std::make_unique<HostComputedKernel>(c, std::move(cpu));
}

void RegisterHostComputedKernels(KernelRegistry& registry, const std::string& device_type) {
  std::vector<std::pair<KernelDef, KernelFactory>> add;
  registry.ForEach([&](const KernelDef& def, const KernelFactory& cpu_factory) {
    if (def.device_type() != kDeviceCpu) return;
    if (std::find(std::begin(kOps), std::end(kOps), def.op()) == std::end(kOps)) return;
    KernelDef on_device = def;
    on_device.Device(device_type);
    add.emplace_back(
        std::move(on_device),
        [cpu_factory](const OpKernelConstruction& c) -> absl::StatusOr<std::unique_ptr<OpKernel>> {
          const OpKernelConstruction on_cpu(c.def(), c.op_def(), c.signature(), kDeviceCpu);
          ASSIGN_OR_RETURN(std::unique_ptr<OpKernel> cpu, cpu_factory(on_cpu));
          return ComputeOnHost(c, std::move(cpu));
        });
  });
  for (auto& [def, factory] : add) registry.Register(std::move(def), std::move(factory));
}

}  // namespace rill
