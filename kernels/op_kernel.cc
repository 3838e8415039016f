#include "kernels/op_kernel.h"

#include "absl/strings/str_format.h"

namespace rill {

Tensor TensorValue::Value() const {
  if (ref == nullptr) return tensor;
  absl::MutexLock lock(ref_mu);
  return *ref;
}

KernelContext::KernelContext(Params params)
    : params_(std::move(params)), outputs_(params_.output_types.size()) {
  input_values_.reserve(params_.inputs.size());
  for (const TensorValue& value : params_.inputs) input_values_.push_back(value.Value());
}

absl::StatusOr<Tensor*> KernelContext::AllocateOutput(int i, const TensorShape& shape) {
  auto tensor = Tensor::Allocate(allocator(), BaseType(output_type(i)), shape);
  if (!tensor.ok()) {
    return absl::Status(tensor.status().code(),
                        absl::StrFormat("output %d: %s", i, tensor.status().message()));
  }
  outputs_[i] = TensorValue{*std::move(tensor)};
  return &outputs_[i].tensor;
}

absl::StatusOr<Tensor> KernelContext::AllocateTemp(DataType dtype, const TensorShape& shape) {
  return Tensor::Allocate(allocator(), dtype, shape);
}

void KernelContext::set_output(int i, Tensor tensor) {
  outputs_[i] = TensorValue{std::move(tensor)};
}

void KernelContext::forward_ref_input_to_ref_output(int input, int i) {
  outputs_[i] = TensorValue{Tensor(), params_.inputs[input].ref, params_.inputs[input].ref_mu};
}

void KernelContext::set_output_ref(int i, Tensor* ref, absl::Mutex* mu) {
  outputs_[i] = TensorValue{Tensor(), ref, mu};
}

}  // namespace rill
