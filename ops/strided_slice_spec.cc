// TensorFlow's StridedSlice canonicalization (ValidateStridedSliceOp) in two
// steps: expand the sparse spec to one entry per input dimension, then
// resolve each entry against its dimension's size.
#include "ops/strided_slice_spec.h"

#include <algorithm>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/types/span.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// Marks an output dimension that is a new axis rather than a processing
// dimension.
constexpr int kNewAxis = -1;

// Bit i of an attr mask. REQUIRES: 0 <= i <= kMaxStridedSliceEntries, so
// that the shift stays inside the 64-bit value.
bool Bit(int64_t mask, int64_t i) { return ((static_cast<uint64_t>(mask) >> i) & 1) != 0; }

// One input dimension of the expanded spec.
struct DenseEntry {
  int64_t sparse_index = -1;  // The entry it comes from; -1 under the ellipsis.
  int64_t begin = 0;
  int64_t end = 0;
  std::optional<int64_t> stride = 1;  // nullopt when the strides are not known.
  bool begin_masked = false;
  bool end_masked = false;
  bool shrink = false;
};

absl::Status CheckSparseSpec(const SparseSliceSpec& spec) {
  if (spec.length > kMaxStridedSliceEntries) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "StridedSlice: begin, end and strides have %d entries; at most %d are allowed (the masks "
        "have 32 bits, one per entry and one for an implied ellipsis)",
        spec.length, kMaxStridedSliceEntries));
  }
  const std::pair<std::string_view, const std::optional<std::vector<int64_t>>*> values[] = {
      {"begin", &spec.begin}, {"end", &spec.end}, {"strides", &spec.strides}};
  for (const auto& [name, value] : values) {
    if (*value && static_cast<int64_t>((*value)->size()) != spec.length) {
      return absl::InvalidArgumentError(
          absl::StrFormat("StridedSlice: %s has %d entries but the spec has %d; begin, end and "
                          "strides must have one length",
                          name, (*value)->size(), spec.length));
    }
  }
  if (const auto bits = static_cast<uint64_t>(spec.masks.ellipsis); (bits & (bits - 1)) != 0) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "StridedSlice: ellipsis_mask %d has more than one ellipsis", spec.masks.ellipsis));
  }
  return absl::OkStatus();
}

// TensorFlow's BuildDenseSpec: one entry per input dimension, the ellipsis
// (implied at the end when the spec has none) standing for the dimensions
// that no other entry and no new axis after it takes. Sets `gather` to
// where each output dimension comes from, shrunk dimensions left out.
absl::StatusOr<std::vector<DenseEntry>> ExpandSpec(const SparseSliceSpec& spec, int rank,
                                                   std::vector<int>* gather) {
  int64_t ellipsis = -1;
  int64_t new_axes_after_ellipsis = 0;
  for (int64_t i = 0; i < spec.length; ++i) {
    if (ellipsis >= 0 && Bit(spec.masks.new_axis, i)) ++new_axes_after_ellipsis;
    if (ellipsis < 0 && Bit(spec.masks.ellipsis, i)) ellipsis = i;
  }
  const int64_t sparse_length = ellipsis >= 0 ? spec.length : spec.length + 1;
  if (ellipsis < 0) ellipsis = spec.length;

  std::vector<DenseEntry> dense(rank);
  int full_index = 0;
  for (int64_t i = 0; i < sparse_length; ++i) {
    if (i == ellipsis) {
      const int64_t next =
          std::min<int64_t>(rank - (sparse_length - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full_index < next; ++full_index) {
        dense[full_index].begin_masked = dense[full_index].end_masked = true;
        gather->push_back(full_index);
      }
    } else if (Bit(spec.masks.new_axis, i)) {
      gather->push_back(kNewAxis);
    } else {
      if (full_index == rank) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "StridedSlice: slice entry %d is out of range for an input of rank %d", i, rank));
      }
      DenseEntry& d = dense[full_index];
      d.sparse_index = i;
      if (spec.begin) d.begin = (*spec.begin)[i];
      if (spec.end) d.end = (*spec.end)[i];
      d.stride = spec.strides ? std::optional<int64_t>((*spec.strides)[i]) : std::nullopt;
      d.begin_masked = Bit(spec.masks.begin, i);
      d.end_masked = Bit(spec.masks.end, i);
      d.shrink = Bit(spec.masks.shrink_axis, i);
      if (!d.shrink) gather->push_back(full_index);
      ++full_index;
    }
  }
  return dense;
}

// The number of indices from a range of `interval` (end - begin) taken
// every `stride`: zero when the range runs against the stride.
int64_t StepCount(int64_t interval, int64_t stride) {
  if (interval == 0 || (interval < 0) != (stride < 0)) return 0;
  return interval / stride + (interval % stride != 0 ? 1 : 0);
}

}  // namespace

absl::StatusOr<StridedSliceSpec> ResolveStridedSlice(const PartialTensorShape& input,
                                                     const SparseSliceSpec& spec) {
  RETURN_IF_ERROR(CheckSparseSpec(spec));
  const int rank = input.dims();
  std::vector<int> gather;
  ASSIGN_OR_RETURN(std::vector<DenseEntry> dense, ExpandSpec(spec, rank, &gather));
  const bool bounds_known = spec.begin.has_value() && spec.end.has_value();
  std::vector<int64_t> processing;
  for (int i = 0; i < rank; ++i) {
    DenseEntry& d = dense[i];
    if (d.stride == 0) {
      return absl::InvalidArgumentError(
          absl::StrFormat("StridedSlice: strides[%d] must be non-zero", d.sparse_index));
    }
    const int64_t size = input.dim_size(i);
    if (size < 0) {
      processing.push_back(d.shrink ? 1 : -1);
      continue;
    }
    if (d.shrink && d.stride && *d.stride < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "StridedSlice: entry %d shrinks its dimension (shrink_axis_mask) and so takes a "
          "positive stride, got strides[%d] = %d",
          d.sparse_index, d.sparse_index, *d.stride));
    }
    std::optional<int64_t> interval;
    if (bounds_known && d.shrink) {
      // The end given for a single index means nothing (x[-1] has end 0):
      // the index alone is taken, and must be inside the dimension.
      const int64_t index = d.begin < 0 ? d.begin + size : d.begin;
      if (index < 0 || index >= size) {
        return absl::InvalidArgumentError(
            absl::StrFormat("StridedSlice: index %d (begin[%d]) is out of bounds for dimension "
                            "%d of size %d",
                            d.begin, d.sparse_index, i, size));
      }
      d.begin = index;
      d.end = index + 1;
      interval = 1;
    } else if (bounds_known && d.stride) {
      // Valid positions: [0, size] going forward, [-1, size - 1] going back.
      const int64_t stride = *d.stride;
      const int64_t lo = stride > 0 ? 0 : -1;
      const int64_t hi = stride > 0 ? size : size - 1;
      const auto canonical = [&](int64_t x, bool masked, bool is_begin) {
        if (masked) return is_begin == (stride > 0) ? lo : hi;
        return std::clamp(x < 0 ? x + size : x, lo, hi);
      };
      d.begin = canonical(d.begin, d.begin_masked, true);
      d.end = canonical(d.end, d.end_masked, false);
      interval = d.end - d.begin;
    } else if (d.shrink) {
      interval = 1;
    } else if (d.begin_masked && d.end_masked && d.stride) {
      interval = *d.stride < 0 ? -size : size;
    }
    processing.push_back(interval ? StepCount(*interval, d.stride.value_or(1)) : -1);
  }

  StridedSliceSpec resolved;
  std::vector<int64_t> final_dims;
  for (int g : gather) final_dims.push_back(g == kNewAxis ? 1 : processing[g]);
  for (const DenseEntry& d : dense) {
    resolved.begin.push_back(d.begin);
    resolved.end.push_back(d.end);
    resolved.strides.push_back(d.stride.value_or(1));
  }
  // New axes can take the rank past the maximum.
  ASSIGN_OR_RETURN(resolved.processing_shape, PartialTensorShape::Create(processing));
  ASSIGN_OR_RETURN(resolved.final_shape, PartialTensorShape::Create(final_dims));
  return resolved;
}

}  // namespace rill
