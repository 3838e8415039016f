// Index reading, strided views and copies, and the geometry of Transpose,
// Tile and Fill.
#include "kernels/common/transform_util.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"

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

absl::StatusOr<std::vector<int64_t>> ReadIndices(const Tensor& t, std::string_view op) {
  std::vector<int64_t> out(t.NumElements());
  auto read = [&]<typename I>() {
    for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<int64_t>(t.data<I>()[i]);
  };
  switch (t.dtype()) {
    case DT_UINT8:
      read.template operator()<uint8_t>();
      break;
    case DT_INT8:
      read.template operator()<int8_t>();
      break;
    case DT_INT16:
      read.template operator()<int16_t>();
      break;
    case DT_INT32:
      read.template operator()<int32_t>();
      break;
    case DT_INT64:
      read.template operator()<int64_t>();
      break;
    default:
      return absl::InvalidArgumentError(
          absl::StrFormat("%s: unsupported index type %s", op, DataTypeString(t.dtype())));
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

absl::StatusOr<StridedView> TransposeView(const Tensor& x, const Tensor& perm_t) {
  const std::vector<int64_t> perm = ReadInts(perm_t);
  const int rank = x.dims();
  if (perm_t.dims() != 1 || static_cast<int>(perm.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Transpose: perm must be a vector of %d values, got shape %s", rank,
                        perm_t.shape().DebugString()));
  }
  std::vector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Transpose: perm [%s] is not a permutation of [0, %d)", absl::StrJoin(perm, ","), rank));
    }
    seen[p] = true;
  }
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  std::vector<int64_t> out_dims(rank);
  StridedView view;
  view.strides.resize(rank);
  for (int i = 0; i < rank; ++i) {
    out_dims[i] = x.dim_size(perm[i]);
    view.strides[i] = in_strides[perm[i]];
  }
  view.shape = TensorShape(absl::MakeConstSpan(out_dims));
  return view;
}

absl::StatusOr<TensorShape> FillShape(const Tensor& dims, const Tensor& value) {
  if (dims.dims() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fill: dims must be a vector, got shape ", dims.shape().DebugString()));
  }
  if (value.dims() != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("Fill: value must be a scalar, got shape ", value.shape().DebugString()));
  }
  const std::vector<int64_t> sizes = ReadInts(dims);
  return TensorShape::Create(absl::MakeConstSpan(sizes));
}

absl::StatusOr<TensorShape> TiledShape(const Tensor& x, const Tensor& multiples_t) {
  const std::vector<int64_t> multiples = ReadInts(multiples_t);
  const int rank = x.dims();
  if (multiples_t.dims() != 1 || static_cast<int>(multiples.size()) != rank) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Tile: multiples must be a vector of %d values, got shape %s", rank,
                        multiples_t.shape().DebugString()));
  }
  std::vector<int64_t> out_dims(rank);
  for (int i = 0; i < rank; ++i) {
    if (multiples[i] < 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Tile: multiples[%d] = %d is negative", i, multiples[i]));
    }
    out_dims[i] = x.dim_size(i) * multiples[i];
  }
  return TensorShape::Create(absl::MakeConstSpan(out_dims));
}

}  // namespace rill::transform_util
