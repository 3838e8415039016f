// Input and InputList: what the generated op wrappers take for their inputs.
// An Input is an Output (or anything that converts to one: a one-output op
// wrapper, a Variable) or a C++ constant that becomes a Const node when the
// op is built: a number, a string, a nested initializer list of numbers
// ({{1.f, 2.f}, {3.f, 4.f}} is a [2,2] float tensor) or a Tensor.
#ifndef RILL_OPS_INPUT_H_
#define RILL_OPS_INPUT_H_

#include <concepts>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "graph/node_def_util.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "graph/types.h"

namespace rill::ops {

// A C++ number type with a DataType (float, double, int32_t, int64_t, bool,
// uint8_t, ...).
template <typename T>
concept ConstantElement = std::is_arithmetic_v<T> && requires {
  DataTypeToEnum<T>::value;
};

class Input {
 public:
  // A constant value. A malformed one (a ragged nested list, mixed element
  // types) keeps its error in `status`; the scope receives it when the
  // input is used.
  struct Initializer {
    template <ConstantElement T>
    Initializer(const T& value) : tensor(Tensor::Scalar<T>(value)) {}                      // NOLINT
    Initializer(const char* value) : tensor(Tensor::Scalar<std::string>(value)) {}         // NOLINT
    Initializer(const std::string& value) : tensor(Tensor::Scalar<std::string>(value)) {}  // NOLINT
    Initializer(const Tensor& value) : tensor(value) {}                                    // NOLINT
    template <ConstantElement T>
    Initializer(std::initializer_list<T> values)  // NOLINT
        : tensor(
              Tensor::FromVector<T>(values, TensorShape({static_cast<int64_t>(values.size())}))) {}
    // Stacks equally shaped elements along a new leading dimension.
    Initializer(std::initializer_list<Initializer> elements);  // NOLINT

    // This value in `shape`: a scalar is repeated to fill it; any other
    // value needs shape.num_elements() elements, kept in order. A mismatch
    // is the result's status.
    Initializer WithShape(const TensorShape& shape) const;

    absl::Status status;
    Tensor tensor;
  };

  template <typename T>
  requires std::convertible_to<const T&, Output> Input(const T& output)
      : output_(output) {}  // NOLINT
  template <ConstantElement T>
  Input(const T& value) : Input(Initializer(value)) {}                                  // NOLINT
  Input(const char* value) : Input(Initializer(value)) {}                               // NOLINT
  Input(const std::string& value) : Input(Initializer(value)) {}                        // NOLINT
  Input(const Tensor& value) : Input(Initializer(value)) {}                             // NOLINT
  Input(std::initializer_list<Initializer> elements) : Input(Initializer(elements)) {}  // NOLINT
  Input(const Initializer& init)                                                        // NOLINT
      : is_constant_(true), status_(init.status), constant_(init.tensor) {}

  bool is_constant() const { return is_constant_; }
  const Output& output() const { return output_; }
  const Tensor& constant() const { return constant_; }
  const absl::Status& status() const { return status_; }

 private:
  bool is_constant_ = false;
  Output output_;
  absl::Status status_;
  Tensor constant_;
};

// The inputs of a list argument (AddN's `inputs`, Concat's `values`).
class InputList {
 public:
  InputList(const OutputList& outputs) : inputs_(outputs.begin(), outputs.end()) {}  // NOLINT
  InputList(std::vector<Input> inputs) : inputs_(std::move(inputs)) {}               // NOLINT
  InputList(std::initializer_list<Input> inputs) : inputs_(inputs) {}                // NOLINT

  const std::vector<Input>& inputs() const { return inputs_; }

 private:
  std::vector<Input> inputs_;
};

// A tensor attr (Const's `value`). Typed values, not tensor_content, keep
// small constants readable in text GraphDefs.
AttrValue MakeTensorAttr(const Tensor& value);

// The tensor of a Const made from `value`, or an empty Tensor after putting
// value's error (a ragged list) on the scope.
Tensor ConstantTensor(const Scope& scope, const Input::Initializer& value);

// The Output that feeds an op for `input`: the Output itself, or a new
// Const node named "Const" under the scope. A null Output when the scope
// has an error or the constant is malformed (the error goes to the scope).
Output AsNodeOut(const Scope& scope, const Input& input);
OutputList AsNodeOutList(const Scope& scope, const InputList& inputs);

}  // namespace rill::ops

#endif  // RILL_OPS_INPUT_H_
