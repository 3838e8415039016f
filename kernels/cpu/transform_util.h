// Helpers the kernels that move elements around share, on every device:
// reading index tensors, the checks and geometry of each op (what is read
// from where), and the CPU's typed strided and row-wise copies.
#ifndef RILL_KERNELS_CPU_TRANSFORM_UTIL_H_
#define RILL_KERNELS_CPU_TRANSFORM_UTIL_H_

#include <cstdint>
#include <functional>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "kernels/op_kernel.h"
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

// How a device's kernels fill `out` (dense, of view.shape) with the
// elements of `in` that `view` names.
using ViewGather =
    std::function<absl::Status(const Tensor& in, const StridedView& view, Tensor& out)>;
// Sets Slice(x, begin, size)'s output: a view of x's buffer when the box is
// a run of whole rows along dim 0, else a new tensor that `gather` fills.
absl::Status SliceInto(KernelContext& ctx, const Tensor& x, const Tensor& begin, const Tensor& size,
                       const ViewGather& gather);

// StridedSlice's mask attrs.
absl::StatusOr<StridedSliceMasks> ReadStridedSliceMasks(const OpKernelConstruction& c);
// StridedSlice(x, begin, end, strides) resolved as the shape function
// resolves it (ResolveStridedSlice): the output's shape, and what is read
// in the input's rank, which has the same element order.
struct StridedSliceGeometry {
  TensorShape out_shape;
  StridedView view;
};
absl::StatusOr<StridedSliceGeometry> ResolveStridedSliceOf(const Tensor& x, const Tensor& begin,
                                                           const Tensor& end, const Tensor& strides,
                                                           const StridedSliceMasks& masks);

// How Split, SplitV and Unpack cut a value: along `axis`, into pieces of
// `sizes`.
struct SplitSpec {
  int axis = 0;
  std::vector<int64_t> sizes;
};
absl::StatusOr<SplitSpec> ReadSplit(const Tensor& split_dim, const Tensor& value, int num_split);
absl::StatusOr<SplitSpec> ReadSplitV(const Tensor& value, const Tensor& size_splits,
                                     const Tensor& split_dim, int num_split);
absl::StatusOr<SplitSpec> ReadUnpack(const Tensor& value, int64_t axis, int num);
// Sets output i to piece i: a view of `value` when every dim before the
// axis is 1, else a new tensor that `copy` fills.
absl::Status SplitInto(KernelContext& ctx, const Tensor& value, const SplitSpec& spec,
                       const RowCopy& copy);
// Unpack's outputs: the pieces SplitInto set, without the split axis.
absl::Status DropUnpackedAxis(KernelContext& ctx, const Tensor& value, int axis);

// How ConcatV2 and Pack join their inputs: every input has inputs[0]'s
// shape except along `axis` (Pack's are expanded to size 1 there), and
// the output has `shape`.
struct JoinSpec {
  std::vector<Tensor> inputs;
  int axis = 0;
  TensorShape shape;
};
absl::StatusOr<JoinSpec> ReadConcatV2(const KernelContext& ctx);
absl::StatusOr<JoinSpec> ReadPack(const KernelContext& ctx, int64_t axis);
// Allocates output 0 and copies each input's rows into it with `copy`.
absl::Status JoinInto(KernelContext& ctx, const JoinSpec& spec, const RowCopy& copy);

// output[o, i, k] = params[o, indices[i], k] with params viewed as
// [outer, bound, inner] and the output as [outer, n, inner].
struct GatherGeometry {
  TensorShape shape;
  int64_t outer = 1, bound = 0, n = 0, inner = 1;
};
absl::StatusOr<GatherGeometry> GatherGeometryOf(const TensorShape& params,
                                                const TensorShape& indices, int axis);
// GatherV2's axis input, canonical; INVALID_ARGUMENT unless it is a scalar
// in [-rank, rank).
absl::StatusOr<int> ReadGatherV2Axis(const Tensor& params, const Tensor& axis);
// UNIMPLEMENTED unless GatherV2's batch_dims attr is 0.
absl::Status CheckGatherV2BatchDims(const OpKernelConstruction& c);

// OneHot: output index [o, d, k] is on_value where indices[o, k] == d,
// off_value elsewhere; `axis` is the attr (checked by ReadOneHotAxis).
struct OneHotGeometry {
  TensorShape shape;
  int64_t outer = 1, depth = 0, inner = 1;
};
absl::StatusOr<int64_t> ReadOneHotAxis(const OpKernelConstruction& c);
absl::StatusOr<OneHotGeometry> ReadOneHot(const KernelContext& ctx, int64_t axis);

}  // namespace rill::transform_util

#endif  // RILL_KERNELS_CPU_TRANSFORM_UTIL_H_
