// Helpers the kernels that move elements around share, on every device:
// reading index tensors, strided views, Transpose, Tile and Fill's geometry,
// and the CPU's typed strided and row-wise copies. Each other family's
// geometry has its header: slice_geometry.h, split_join.h, gather_geometry.h.
#ifndef RILL_KERNELS_COMMON_TRANSFORM_UTIL_H_
#define RILL_KERNELS_COMMON_TRANSFORM_UTIL_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "kernels/framework/op_kernel.h"
#include "ops/strided_slice_spec.h"

namespace rill::transform_util {

// The values of an int8, int32 or int64 tensor (any other dtype is read as
// int64).
std::vector<int64_t> ReadInts(const Tensor& t);

// The values of an index tensor (uint8, int8, int16, int32 or int64);
// INVALID_ARGUMENT naming `op` for any other dtype.
absl::StatusOr<std::vector<int64_t>> ReadIndices(const Tensor& t, std::string_view op);

// INVALID_ARGUMENT: "`op` does not support `dtype`".
absl::Status Unsupported(std::string_view op, DataType dtype);

// out[p] = in[offset + sum_i p_i * in_strides[i]] for every index p of
// `out_dims` (row-major).
absl::Status StridedGather(const Tensor& in, int64_t offset, const std::vector<int64_t>& in_strides,
                           Tensor& out, std::string_view op);

// The element strides of a row-major tensor of `shape`.
std::vector<int64_t> RowMajorStrides(const TensorShape& shape);

// Copies `rows` runs of `len` elements from src (runs `src_row` apart,
// starting at src_off) to dst (runs `dst_row` apart, starting at dst_off).
absl::Status CopyRows(const Tensor& src, int64_t src_off, int64_t src_row, const Tensor& dst,
                      int64_t dst_off, int64_t dst_row, int64_t rows, int64_t len,
                      std::string_view op);

// CopyRows without the op name: how a device's kernels copy runs of
// elements between its tensors.
using RowCopy = std::function<absl::Status(const Tensor& src, int64_t src_off, int64_t src_row,
                                           const Tensor& dst, int64_t dst_off, int64_t dst_row,
                                           int64_t rows, int64_t len)>;

// The product of dims [from, to).
int64_t DimProduct(const TensorShape& shape, int from, int to);

// Maps an axis in [-rank, rank) to [0, rank); INVALID_ARGUMENT naming `op`
// otherwise.
absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view op);

// Where an output is read from: out[p] = in[offset + sum_i p_i *
// strides[i]] for every index p of `shape` (row-major), in elements.
struct StridedView {
  TensorShape shape;
  int64_t offset = 0;
  std::vector<int64_t> strides;
};

// Transpose(x, perm): INVALID_ARGUMENT unless perm is a vector permuting
// x's dimensions.
absl::StatusOr<StridedView> TransposeView(const Tensor& x, const Tensor& perm);

// Tile's output shape; INVALID_ARGUMENT unless multiples is a vector of
// x.dims() values >= 0.
absl::StatusOr<TensorShape> TiledShape(const Tensor& x, const Tensor& multiples);

// Fill's output shape; INVALID_ARGUMENT unless dims is a vector of sizes
// >= 0 and value a scalar.
absl::StatusOr<TensorShape> FillShape(const Tensor& dims, const Tensor& value);

}  // namespace rill::transform_util

#endif  // RILL_KERNELS_COMMON_TRANSFORM_UTIL_H_
