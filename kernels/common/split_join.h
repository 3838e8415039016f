// Split, SplitV, Unpack, ConcatV2 and Pack on every device: the pieces a
// value is cut into or joined from, checked, and views where no copy is needed.
#ifndef RILL_KERNELS_COMMON_SPLIT_JOIN_H_
#define RILL_KERNELS_COMMON_SPLIT_JOIN_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"
#include "graph/tensor_shape.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/op_kernel.h"
#include "ops/strided_slice_spec.h"

namespace rill::transform_util {

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

}  // namespace rill::transform_util

#endif  // RILL_KERNELS_COMMON_SPLIT_JOIN_H_
