// StridedSlice's begin/end/strides and masks resolved against an input
// shape, as TensorFlow's ValidateStridedSliceOp does; the shape function
// and the CPU kernel both use it, so they agree on every spec.
#ifndef RILL_OPS_STRIDED_SLICE_SPEC_H_
#define RILL_OPS_STRIDED_SLICE_SPEC_H_

#include <cstdint>
#include <optional>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/tensor_shape.h"

namespace rill {

// TensorFlow keeps the masks in 32 bits and a spec without an ellipsis
// gets one appended, so a spec holds at most 31 entries.
inline constexpr int64_t kMaxStridedSliceEntries = 31;

// StridedSlice's attrs: bit i of each mask applies to entry i of the spec.
struct StridedSliceMasks {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t ellipsis = 0;
  int64_t new_axis = 0;
  int64_t shrink_axis = 0;
};

// A slice spec as StridedSlice's inputs and attrs give it: one entry per
// element of begin/end/strides. An entry is an ellipsis (the dimensions no
// other entry names), a new axis of size 1, a single index whose dimension
// is dropped (shrink), or a strided range (begin and end replaced by the
// whole range where masked).
struct SparseSliceSpec {
  // Entries in each of begin, end and strides.
  int64_t length = 0;
  // Their values; nullopt where not known while building the graph (a
  // kernel knows them all).
  std::optional<std::vector<int64_t>> begin;
  std::optional<std::vector<int64_t>> end;
  std::optional<std::vector<int64_t>> strides;
  StridedSliceMasks masks;
};

// The spec expanded to one entry per input dimension.
struct StridedSliceSpec {
  // Per input dimension: the first index taken, the bound not reached and
  // the step, with negative indices and masks resolved and ranges clamped
  // to the dimension. A shrunk dimension takes [index, index + 1). Valid
  // where the dimension's size, begin, end and stride are all known.
  std::vector<int64_t> begin;
  std::vector<int64_t> end;
  std::vector<int64_t> strides;
  // The slice in the input's rank (what is copied) and the output's shape
  // (shrunk dimensions dropped, new axes inserted); -1 where not known.
  PartialTensorShape processing_shape;
  PartialTensorShape final_shape;
};

// Resolves `spec` against `input`. INVALID_ARGUMENT, naming the entry, for
// more than kMaxStridedSliceEntries entries, values of another length,
// more than one ellipsis, more entries than the input has dimensions, a
// zero stride, a shrunk entry with a negative stride or an index out of
// its dimension. Unknown values and dimension sizes give unknown output
// dimensions, as TensorFlow's shape function does. REQUIRES: the input's
// rank is known.
absl::StatusOr<StridedSliceSpec> ResolveStridedSlice(const PartialTensorShape& input,
                                                     const SparseSliceSpec& spec);

}  // namespace rill

#endif  // RILL_OPS_STRIDED_SLICE_SPEC_H_
