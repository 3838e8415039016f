#include "kernels/framework/op_kernel.h"

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"

namespace rill {

Tensor TensorValue::Value() const {
  if (ref == nullptr) return tensor;
  absl::MutexLock lock(ref_mu);
  return *ref;
}

KernelContext::KernelContext(Params params)
    : owned_inputs_(std::move(params.inputs)),
      owned_output_types_(std::move(params.output_types)),
      owned_outputs_(owned_output_types_.size()) {
  frame_.node = params.node;
  frame_.inputs = owned_inputs_;
  frame_.outputs = absl::MakeSpan(owned_outputs_);
  frame_.output_types = owned_output_types_;
  frame_.eigen_cpu = params.eigen_cpu;
  frame_.allocator = params.allocator;
  frame_.step_id = params.step_id;
  frame_.resource_manager = params.resource_manager;
  frame_.cancellation = params.cancellation;
  frame_.rendezvous = params.rendezvous;
  frame_.device_context = params.device_context;
  ReadRefInputs();
}

KernelContext::KernelContext(const Frame& frame) : frame_(frame) { ReadRefInputs(); }

void KernelContext::ReadRefInputs() {
  for (size_t i = 0; i < frame_.inputs.size(); ++i) {
    if (!frame_.inputs[i].is_ref()) continue;
    if (ref_values_.empty()) ref_values_.resize(frame_.inputs.size());
    ref_values_[i] = frame_.inputs[i].Value();
  }
}

Allocator* KernelContext::AllocatorFor(DataType dtype) const {
  return device_context() != nullptr && InHostMemory(dtype) ? device_context()->host_allocator()
                                                            : allocator();
}

absl::StatusOr<Tensor*> KernelContext::AllocateOutput(int i, const TensorShape& shape) {
  const DataType dtype = BaseType(output_type(i));
  auto tensor = Tensor::Allocate(AllocatorFor(dtype), dtype, shape);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(),
                        absl::StrFormat("output %d: %s", i, tensor.status().message()));
  }
  frame_.outputs[i] = TensorValue{*std::move(tensor)};
  return &frame_.outputs[i].tensor;
}

absl::StatusOr<Tensor> KernelContext::AllocateTemp(DataType dtype, const TensorShape& shape) {
  return Tensor::Allocate(AllocatorFor(dtype), dtype, shape);
}

void KernelContext::set_output(int i, Tensor tensor) {
  frame_.outputs[i] = TensorValue{std::move(tensor)};
}

void KernelContext::forward_ref_input_to_ref_output(int input, int i) {
  frame_.outputs[i] = TensorValue{Tensor(), frame_.inputs[input].ref, frame_.inputs[input].ref_mu};
}

void KernelContext::set_output_ref(int i, Tensor* ref, absl::Mutex* mu) {
  frame_.outputs[i] = TensorValue{Tensor(), ref, mu};
}

absl::Status AsyncOpKernel::Compute(KernelContext& ctx) const {
  absl::Notification finished;
  absl::Status result;
  ComputeAsync(ctx, [&](absl::Status status) {
    result = std::move(status);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

}  // namespace rill
