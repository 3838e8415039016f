// NumPy broadcasting's geometry, shared by the CPU and GPU element-wise
// kernels: the output shape of two operands, folded into as few dimensions as possible.
#ifndef RILL_KERNELS_COMMON_BROADCAST_SHAPE_H_
#define RILL_KERNELS_COMMON_BROADCAST_SHAPE_H_

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/status_macros.h"
#include "graph/tensor_shape.h"

namespace rill {

// The shape `a` and `b` broadcast to; INVALID_ARGUMENT naming both when
// some dimension pair is neither equal nor 1.
inline absl::StatusOr<TensorShape> BroadcastShape(const TensorShape& a, const TensorShape& b) {
  ASSIGN_OR_RETURN(PartialTensorShape out, BroadcastShapes(a, b));
  return out.AsTensorShape();
}

namespace broadcast_internal {

// The output shape folded into as few dimensions as possible: neighbouring
// dimensions merge when each operand either spans both or repeats over
// both. a_dims/b_dims are the operands' reshaped views (1 where repeated).
struct Folded {
  std::vector<int64_t> out_dims, a_dims, b_dims;
};

inline Folded Fold(const TensorShape& a, const TensorShape& b, const TensorShape& out) {
  Folded f;
  int prev_kind = -1;
  for (int i = 0; i < out.dims(); ++i) {
    const int64_t n = out.dim_size(i);
    if (n == 1) continue;
    const int ia = a.dims() - out.dims() + i;
    const int ib = b.dims() - out.dims() + i;
    const bool a_repeats = ia < 0 || a.dim_size(ia) == 1;
    const bool b_repeats = ib < 0 || b.dim_size(ib) == 1;
    const int kind = (a_repeats ? 1 : 0) | (b_repeats ? 2 : 0);
    if (kind == prev_kind) {
      f.out_dims.back() *= n;
      if (!a_repeats) f.a_dims.back() *= n;
      if (!b_repeats) f.b_dims.back() *= n;
    } else {
      f.out_dims.push_back(n);
      f.a_dims.push_back(a_repeats ? 1 : n);
      f.b_dims.push_back(b_repeats ? 1 : n);
    }
    prev_kind = kind;
  }
  return f;
}

}  // namespace broadcast_internal
}  // namespace rill

#endif  // RILL_KERNELS_COMMON_BROADCAST_SHAPE_H_
