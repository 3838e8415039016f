// Helpers the CPU kernels that move elements around share: reading index
// tensors, strided and row-wise typed copies, and axis checks.
#ifndef RILL_KERNELS_CPU_TRANSFORM_UTIL_H_
#define RILL_KERNELS_CPU_TRANSFORM_UTIL_H_

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace rill::transform_util {

// The values of an int8, int32 or int64 tensor (any other dtype is read as
// int64).
std::vector<int64_t> ReadInts(const Tensor& t);

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

// The product of dims [from, to).
int64_t DimProduct(const TensorShape& shape, int from, int to);

// Maps an axis in [-rank, rank) to [0, rank); INVALID_ARGUMENT naming `op`
// otherwise.
absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view op);

}  // namespace rill::transform_util

#endif  // RILL_KERNELS_CPU_TRANSFORM_UTIL_H_
