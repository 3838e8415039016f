// The operand checks of MatMul and BatchMatMulV2, shared by the CPU and
// GPU kernels so that both refuse the same shapes with the same words.
#ifndef RILL_KERNELS_COMMON_MATMUL_SHAPES_H_
#define RILL_KERNELS_COMMON_MATMUL_SHAPES_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor_shape.h"

namespace rill::matmul {

// op(a) is [rows, inner], op(b) is [inner, cols].
struct ProductDims {
  int64_t rows = 0;
  int64_t cols = 0;
  int64_t inner = 0;
};

// The dimensions of MatMul's op(a) * op(b), where op transposes when asked,
// or INVALID_ARGUMENT naming both shapes. [rows, cols] is a valid
// TensorShape when this succeeds.
inline absl::StatusOr<ProductDims> MatMulDims(const TensorShape& a, const TensorShape& b,
                                              bool transpose_a, bool transpose_b) {
  if (a.dims() != 2 || b.dims() != 2) {
    return absl::InvalidArgumentError(
        absl::StrFormat("In[0] and In[1] must be matrices: In[0]: %s, In[1]: %s", a.DebugString(),
                        b.DebugString()));
  }
  const int64_t inner_a = a.dim_size(transpose_a ? 0 : 1);
  const int64_t inner_b = b.dim_size(transpose_b ? 1 : 0);
  if (inner_a != inner_b) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Matrix size-incompatible: In[0]: %s, In[1]: %s", a.DebugString(), b.DebugString()));
  }
  const ProductDims dims{a.dim_size(transpose_a ? 1 : 0), b.dim_size(transpose_b ? 0 : 1), inner_a};
  // Empty operands can name rows and columns whose product overflows.
  RETURN_IF_ERROR(TensorShape::Create({dims.rows, dims.cols}).status());
  return dims;
}

// BatchMatMulV2's operands: x and y hold batches of [x_rows, x_cols] and
// [y_rows, y_cols] matrices; the product has the broadcast batch shape.
struct BatchDims {
  std::vector<int64_t> batch;  // The broadcast batch dimensions.
  int64_t num_batches = 1;
  int64_t x_rows = 0, x_cols = 0, y_rows = 0, y_cols = 0;
  ProductDims product;

  TensorShape output_shape() const {
    std::vector<int64_t> dims = batch;
    dims.push_back(product.rows);
    dims.push_back(product.cols);
    return TensorShape(dims);
  }
};

// The broadcast batch shape of x and y (all but their last two
// dimensions), or INVALID_ARGUMENT naming both shapes.
inline absl::StatusOr<std::vector<int64_t>> BroadcastBatch(const TensorShape& x,
                                                           const TensorShape& y) {
  const auto batch_dims = [](const TensorShape& s) {
    return PartialTensorShape(s.dim_sizes().subspan(0, s.dims() - 2));
  };
  auto batch = BroadcastShapes(batch_dims(x), batch_dims(y));
  if (!batch.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("In[0] and In[1] must have compatible batch dimensions: %s vs. %s",
                        x.DebugString(), y.DebugString()));
  }
  return std::vector<int64_t>(batch->dim_sizes().begin(), batch->dim_sizes().end());
}

// The dimensions of BatchMatMulV2's adj(x) * adj(y) (the adjoint of a real
// matrix is its transpose), or INVALID_ARGUMENT naming both shapes.
inline absl::StatusOr<BatchDims> BatchMatMulDims(const TensorShape& x, const TensorShape& y,
                                                 bool adj_x, bool adj_y) {
  if (x.dims() < 2 || y.dims() < 2) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "In[0] and In[1] must have rank >= 2: %s vs. %s", x.DebugString(), y.DebugString()));
  }
  BatchDims d;
  d.x_rows = x.dim_size(x.dims() - 2);
  d.x_cols = x.dim_size(x.dims() - 1);
  d.y_rows = y.dim_size(y.dims() - 2);
  d.y_cols = y.dim_size(y.dims() - 1);
  d.product.inner = adj_x ? d.x_rows : d.x_cols;
  if (d.product.inner != (adj_y ? d.y_cols : d.y_rows)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Matrix size-incompatible: In[0]: %s, In[1]: %s", x.DebugString(), y.DebugString()));
  }
  ASSIGN_OR_RETURN(d.batch, BroadcastBatch(x, y));
  d.product.rows = adj_x ? d.x_cols : d.x_rows;
  d.product.cols = adj_y ? d.y_rows : d.y_cols;
  // Batch, rows and columns come from both operands, and empty operands can
  // name sizes whose product overflows; output_shape() relies on this check.
  std::vector<int64_t> out = d.batch;
  out.push_back(d.product.rows);
  out.push_back(d.product.cols);
  RETURN_IF_ERROR(TensorShape::Create(out).status());
  for (int64_t b : d.batch) d.num_batches *= b;
  return d;
}

// The number of matrices in an operand (the product of its batch
// dimensions).
inline int64_t OperandBatches(const TensorShape& operand) {
  int64_t n = 1;
  for (int i = 0; i < operand.dims() - 2; ++i) n *= operand.dim_size(i);
  return n;
}

// The index of output batch `flat` in an operand's own batch dimensions,
// which broadcast (size 1, or missing) against `batch`.
inline int64_t OperandBatchIndex(int64_t flat, const std::vector<int64_t>& batch,
                                 const TensorShape& operand) {
  const int rank = static_cast<int>(batch.size());
  int64_t index = 0;
  int64_t stride = 1;
  for (int i = rank - 1; i >= 0; --i) {
    const int64_t coord = flat % batch[i];
    flat /= batch[i];
    const int oi = operand.dims() - 2 - rank + i;
    if (oi < 0) continue;
    const int64_t size = operand.dim_size(oi);
    index += (size == 1 ? 0 : coord) * stride;
    stride *= size;
  }
  return index;
}

}  // namespace rill::matmul

#endif  // RILL_KERNELS_COMMON_MATMUL_SHAPES_H_
