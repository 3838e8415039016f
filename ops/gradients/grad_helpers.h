// Small pieces the gradient functions share: an op's inputs and outputs as
// Outputs, typed scalar constants, attrs and constant inputs read while
// building.
#ifndef RILL_OPS_GRADIENTS_GRAD_HELPERS_H_
#define RILL_OPS_GRADIENTS_GRAD_HELPERS_H_

#include <cstdint>
#include <optional>
#include <type_traits>
#include <vector>

#include "graph/graph.h"
#include "graph/scope.h"
#include "graph/tensor.h"
#include "graph/types.h"
#include "ops/ops.h"

namespace rill::grad {

// The Output feeding data input `i` of `op`.
inline Output In(const Operation& op, int i) {
  const Edge* e = op.node()->input_edge(i);
  return Output(e->src, e->src_output);
}

inline Output Out(const Operation& op, int i) { return Output(op, i); }

inline const NodeDef& Def(const Operation& op) { return op.node()->def(); }

// A scalar Const of `dtype` holding `value`; a Cast from double for types
// that cannot be built from a double directly.
inline Output Scalar(const Scope& scope, double value, DataType dtype) {
  return DispatchType(
      dtype,
      [&]<typename T>() -> Output {
        if constexpr (std::is_arithmetic_v<T> || std::is_same_v<T, half> ||
                      std::is_same_v<T, bfloat16> || std::is_same_v<T, complex64> ||
                      std::is_same_v<T, complex128>) {
          return ops::Const(scope, Tensor::Scalar<T>(static_cast<T>(value)), kDataTypeOf<T>);
        } else {
          return ops::Cast(scope, value, dtype);
        }
      },
      [&]() -> Output { return ops::Cast(scope, value, dtype); });
}

// A 1-D int32 Const (shapes, axes, permutations).
inline Output Ints(const Scope& scope, const std::vector<int32_t>& values) {
  return ops::Const(
      scope,
      Tensor::FromVector<int32_t>(values, TensorShape({static_cast<int64_t>(values.size())})),
      DT_INT32);
}

// The integer values of `output` when a Const node produces it.
inline std::optional<std::vector<int64_t>> ConstantInts(const Output& output) {
  const Tensor* t = output.index() == 0 ? output.node()->constant_value() : nullptr;
  if (t == nullptr) return std::nullopt;
  std::vector<int64_t> values;
  if (t->dtype() == DT_INT32) {
    for (int64_t i = 0; i < t->NumElements(); ++i) values.push_back(t->data<int32_t>()[i]);
  } else if (t->dtype() == DT_INT64) {
    for (int64_t i = 0; i < t->NumElements(); ++i) values.push_back(t->data<int64_t>()[i]);
  } else {
    return std::nullopt;
  }
  return values;
}

// `x` as int32 (shape arithmetic mixes Shape's int32 with int64 attrs).
inline Output ToInt32(const Scope& scope, const Output& x) {
  return BaseType(x.type()) == DT_INT32 ? x : Output(ops::Cast(scope, x, DT_INT32));
}

// `grad`, or zeros shaped like `like` where no gradient flows.
inline Output OrZeros(const Scope& scope, const Output& grad, const Output& like) {
  return grad.ok() ? grad : Output(ops::ZerosLike(scope, like));
}

}  // namespace rill::grad

#endif  // RILL_OPS_GRADIENTS_GRAD_HELPERS_H_
