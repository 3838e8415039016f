#include "ops/input.h"

#include <algorithm>

#include "absl/strings/str_format.h"
#include "graph/allocator.h"
#include "graph/node_builder.h"
#include "graph/tensor_proto_util.h"

namespace rill::ops {

AttrValue MakeTensorAttr(const Tensor& value) {
  return MakeAttr(TensorToProto(value, TensorProtoEncoding::kTypedValues));
}

Tensor ConstantTensor(const Scope& scope, const Input::Initializer& value) {
  if (!value.status.ok()) {
    scope.UpdateStatus(value.status);
    return Tensor();
  }
  return value.tensor;
}

Output AsNodeOut(const Scope& scope, const Input& input) {
  if (!scope.ok()) return Output();
  if (!input.status().ok()) {
    scope.UpdateStatus(input.status());
    return Output();
  }
  if (!input.is_constant()) return input.output();
  const Tensor& value = input.constant();
  const Operation op = NodeBuilder(scope.WithOpName("Const"), "Const")
                           .Attr("value", MakeTensorAttr(value))
                           .Attr("dtype", MakeAttr(value.dtype()))
                           .Finalize();
  return op.ok() ? Output(op, 0) : Output();
}

OutputList AsNodeOutList(const Scope& scope, const InputList& inputs) {
  OutputList outputs;
  outputs.reserve(inputs.inputs().size());
  for (const Input& input : inputs.inputs()) outputs.push_back(AsNodeOut(scope, input));
  return outputs;
}

Input::Initializer::Initializer(std::initializer_list<Initializer> elements) {
  if (elements.size() == 0) {
    status = absl::InvalidArgumentError("An empty initializer list has no type; use a Tensor");
    return;
  }
  const Initializer& first = *elements.begin();
  for (const Initializer& element : elements) {
    if (!element.status.ok()) {
      status = element.status;
      return;
    }
    if (element.tensor.dtype() != first.tensor.dtype() ||
        !(element.tensor.shape() == first.tensor.shape())) {
      status = absl::InvalidArgumentError(absl::StrFormat(
          "Initializer list elements must all have one type and shape; got %s %s and %s %s",
          DataTypeString(first.tensor.dtype()), first.tensor.shape().DebugString(),
          DataTypeString(element.tensor.dtype()), element.tensor.shape().DebugString()));
      return;
    }
  }
  TensorShape shape({static_cast<int64_t>(elements.size())});
  for (int64_t dim : first.tensor.shape().dim_sizes()) shape.AddDim(dim);
  tensor = Tensor(first.tensor.dtype(), shape);
  DispatchType(
      tensor.dtype(),
      [&]<typename T>() {
        T* out = tensor.data<T>();
        for (const Initializer& element : elements) {
          out = std::copy_n(element.tensor.data<T>(), element.tensor.NumElements(), out);
        }
      },
      [] {});
}

Input::Initializer Input::Initializer::WithShape(const TensorShape& shape) const {
  Initializer shaped = *this;
  if (!status.ok()) return shaped;
  if (!tensor.IsInitialized()) {
    shaped.status = absl::InvalidArgumentError(
        absl::StrFormat("Cannot give an uninitialized Tensor the shape %s", shape.DebugString()));
    return shaped;
  }
  if (tensor.dims() == 0) {
    // One value fills the shape, as TensorFlow's Const(scope, v, shape). A
    // shape too large for one tensor is an error, not an abort.
    absl::StatusOr<Tensor> filled = Tensor::Allocate(CpuAllocator(), tensor.dtype(), shape);
    if (!filled.ok()) {
      shaped.status = filled.status();
      return shaped;
    }
    const bool fillable = DispatchType(
        tensor.dtype(),
        [&]<typename T>() {
          std::fill_n(filled->data<T>(), shape.num_elements(), tensor.scalar<T>());
          return true;
        },
        [] { return false; });
    if (!fillable) {
      shaped.status = absl::InvalidArgumentError(
          absl::StrFormat("Cannot fill a constant of shape %s with a %s value", shape.DebugString(),
                          DataTypeString(tensor.dtype())));
      return shaped;
    }
    shaped.tensor = *std::move(filled);
    return shaped;
  }
  if (tensor.NumElements() != shape.num_elements()) {
    shaped.status = absl::InvalidArgumentError(
        absl::StrFormat("A constant of shape %s needs %d values; the initializer has %d (shape %s)",
                        shape.DebugString(), shape.num_elements(), tensor.NumElements(),
                        tensor.shape().DebugString()));
    return shaped;
  }
  absl::StatusOr<Tensor> reshaped = tensor.Reshaped(shape);
  if (reshaped.ok()) {
    shaped.tensor = *std::move(reshaped);
  } else {
    shaped.status = reshaped.status();
  }
  return shaped;
}

}  // namespace rill::ops
