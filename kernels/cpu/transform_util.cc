// Index reading and typed strided and row copies for the CPU kernels that
// move elements around.
#include "kernels/cpu/transform_util.h"

#include <algorithm>

#include "absl/strings/str_format.h"

namespace rill::transform_util {

std::vector<int64_t> ReadInts(const Tensor& t) {
  std::vector<int64_t> out(t.NumElements());
  for (size_t i = 0; i < out.size(); ++i) {
    switch (t.dtype()) {
      case DT_INT8:
        out[i] = t.data<int8_t>()[i];
        break;
      case DT_INT32:
        out[i] = t.data<int32_t>()[i];
        break;
      default:
        out[i] = t.data<int64_t>()[i];
        break;
    }
  }
  return out;
}

absl::Status Unsupported(std::string_view op, DataType dtype) {
  return absl::InvalidArgumentError(
      absl::StrFormat("%s does not support %s", op, DataTypeString(dtype)));
}

absl::Status StridedGather(const Tensor& in, int64_t offset, const std::vector<int64_t>& in_strides,
                           Tensor& out, std::string_view op) {
  const int rank = static_cast<int>(in_strides.size());
  const int64_t n = out.NumElements();
  if (n == 0) return absl::OkStatus();
  return DispatchType(
      in.dtype(),
      [&]<typename T>() {
        const T* src = in.data<T>();
        T* dst = out.data<T>();
        if (rank == 0) {
          dst[0] = src[offset];
          return absl::OkStatus();
        }
        std::vector<int64_t> index(rank, 0);
        const int64_t inner = out.dim_size(rank - 1);
        const int64_t inner_stride = in_strides[rank - 1];
        int64_t base = offset;
        for (int64_t o = 0; o < n; o += inner) {
          for (int64_t j = 0; j < inner; ++j) dst[o + j] = src[base + j * inner_stride];
          for (int d = rank - 2; d >= 0; --d) {
            base += in_strides[d];
            if (++index[d] < out.dim_size(d)) break;
            base -= in_strides[d] * index[d];
            index[d] = 0;
          }
        }
        return absl::OkStatus();
      },
      [&] { return Unsupported(op, in.dtype()); });
}

std::vector<int64_t> RowMajorStrides(const TensorShape& shape) {
  std::vector<int64_t> strides(shape.dims(), 1);
  for (int i = shape.dims() - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape.dim_size(i + 1);
  return strides;
}

absl::Status CopyRows(const Tensor& src, int64_t src_off, int64_t src_row, const Tensor& dst,
                      int64_t dst_off, int64_t dst_row, int64_t rows, int64_t len,
                      std::string_view op) {
  if (rows == 0 || len == 0) return absl::OkStatus();
  return DispatchType(
      src.dtype(),
      [&]<typename T>() {
        const T* s = src.data<T>() + src_off;
        T* d = dst.data<T>() + dst_off;
        for (int64_t r = 0; r < rows; ++r) std::copy_n(s + r * src_row, len, d + r * dst_row);
        return absl::OkStatus();
      },
      [&] { return Unsupported(op, src.dtype()); });
}

int64_t DimProduct(const TensorShape& shape, int from, int to) {
  int64_t p = 1;
  for (int i = from; i < to; ++i) p *= shape.dim_size(i);
  return p;
}

absl::StatusOr<int> CanonicalAxis(int64_t axis, int rank, std::string_view op) {
  if (axis < -rank || axis >= rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: axis %d is out of range [%d, %d)", op, axis, -rank, rank));
  }
  return static_cast<int>(axis < 0 ? axis + rank : axis);
}

}  // namespace rill::transform_util
