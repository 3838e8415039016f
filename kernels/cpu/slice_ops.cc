// CPU kernels that cut a box out of a tensor: Slice and StridedSlice. The
// result is a view of the input when it is a run of whole rows of it.
// clang-format off
#include "kernels/cpu_threads.h"
// clang-format on

#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/cpu/transform_util.h"
#include "kernels/kernel_registry.h"
#include "kernels/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using transform_util::ReadInts;
using transform_util::RowMajorStrides;
using transform_util::StridedGather;

class SliceOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& x = ctx.input(0);
    const int rank = x.dims();
    const std::vector<int64_t> begin = ReadInts(ctx.input(1));
    std::vector<int64_t> size = ReadInts(ctx.input(2));
    if (static_cast<int>(begin.size()) != rank || static_cast<int>(size.size()) != rank) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "Slice: begin and size must have %d values (the input's rank), got %d and %d", rank,
          begin.size(), size.size()));
    }
    for (int i = 0; i < rank; ++i) {
      if (size[i] == -1) size[i] = x.dim_size(i) - begin[i];
      if (begin[i] < 0 || size[i] < 0 || begin[i] + size[i] > x.dim_size(i)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "Slice: expected 0 <= begin[%d] <= begin[%d] + size[%d] <= %d, got begin %d, size %d",
            i, i, i, x.dim_size(i), begin[i], size[i]));
      }
    }
    const TensorShape shape(absl::MakeConstSpan(size));
    if (rank >= 1 && std::equal(size.begin() + 1, size.end(), x.shape().dim_sizes().begin() + 1)) {
      // Whole rows of dim 0: a view.
      ASSIGN_OR_RETURN(Tensor view, x.Slice(begin[0], begin[0] + size[0]).Reshaped(shape));
      ctx.set_output(0, std::move(view));
      return absl::OkStatus();
    }
    const std::vector<int64_t> strides = RowMajorStrides(x.shape());
    int64_t offset = 0;
    for (int i = 0; i < rank; ++i) offset += begin[i] * strides[i];
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    return StridedGather(x, offset, strides, *out, "Slice");
  }
};

class StridedSliceOp final : public OpKernel {
 public:
  struct Masks {
    int64_t begin = 0, end = 0, ellipsis = 0, new_axis = 0, shrink = 0;
  };
  StridedSliceOp(const OpKernelConstruction& c, Masks masks) : OpKernel(c), masks_(masks) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    Masks m;
    ASSIGN_OR_RETURN(m.begin, GetIntAttr(c.def(), "begin_mask"));
    ASSIGN_OR_RETURN(m.end, GetIntAttr(c.def(), "end_mask"));
    ASSIGN_OR_RETURN(m.ellipsis, GetIntAttr(c.def(), "ellipsis_mask"));
    ASSIGN_OR_RETURN(m.new_axis, GetIntAttr(c.def(), "new_axis_mask"));
    ASSIGN_OR_RETURN(m.shrink, GetIntAttr(c.def(), "shrink_axis_mask"));
    if ((m.ellipsis & (m.ellipsis - 1)) != 0) {
      return absl::InvalidArgumentError("StridedSlice: multiple ellipses are not allowed");
    }
    return std::unique_ptr<OpKernel>(std::make_unique<StridedSliceOp>(c, m));
  }

  absl::Status Compute(KernelContext& ctx) const override;

 private:
  const Masks masks_;
};

// TensorFlow's two-step canonicalisation: the sparse spec (with ellipsis and
// new axes) is expanded to one entry per input dim, then each dim's begin
// and end are resolved against its size.
absl::Status StridedSliceOp::Compute(KernelContext& ctx) const {
  const Tensor& x = ctx.input(0);
  const std::vector<int64_t> sb = ReadInts(ctx.input(1));
  const std::vector<int64_t> se = ReadInts(ctx.input(2));
  const std::vector<int64_t> ss = ReadInts(ctx.input(3));
  if (ctx.input(1).dims() != 1 || se.size() != sb.size() || ss.size() != sb.size()) {
    return absl::InvalidArgumentError(
        "StridedSlice: begin, end and strides must be vectors of one length");
  }
  int sparse_dims = static_cast<int>(sb.size());
  int64_t ellipsis = masks_.ellipsis;
  if (ellipsis == 0) ellipsis = int64_t{1} << sparse_dims++;  // An implied trailing ellipsis.
  int new_axes_after_ellipsis = 0;
  bool after = false;
  for (int i = 0; i < sparse_dims; ++i) {
    if (after && (masks_.new_axis >> i & 1)) ++new_axes_after_ellipsis;
    if (ellipsis >> i & 1) after = true;
  }
  const int rank = x.dims();
  constexpr int64_t kNewAxis = -1, kShrink = -2;
  std::vector<int64_t> begin(rank, 0), end(rank, 0), stride(rank, 1);
  std::vector<bool> begin_masked(rank, false), end_masked(rank, false), shrink(rank, false);
  std::vector<int64_t> gather;  // Per output dim: a dense dim, kNewAxis or kShrink.
  int full = 0;
  for (int i = 0; i < sparse_dims; ++i) {
    if (ellipsis >> i & 1) {
      const int next = std::min(rank - (sparse_dims - i) + 1 + new_axes_after_ellipsis, rank);
      for (; full < next; ++full) {
        begin_masked[full] = end_masked[full] = true;
        gather.push_back(full);
      }
    } else if (masks_.new_axis >> i & 1) {
      gather.push_back(kNewAxis);
    } else {
      if (full >= rank) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "StridedSlice: index %d is out of range for an input of rank %d", i, rank));
      }
      begin[full] = sb[i];
      end[full] = se[i];
      stride[full] = ss[i];
      begin_masked[full] = masks_.begin >> i & 1;
      end_masked[full] = masks_.end >> i & 1;
      shrink[full] = masks_.shrink >> i & 1;
      gather.push_back(shrink[full] ? kShrink : full);
      ++full;
    }
  }
  std::vector<int64_t> sizes(rank);
  for (int i = 0; i < rank; ++i) {
    const int64_t dim = x.dim_size(i);
    if (stride[i] == 0) {
      return absl::InvalidArgumentError(absl::StrFormat("StridedSlice: strides[%d] is 0", i));
    }
    if (shrink[i]) {
      const int64_t b = begin[i] < 0 ? begin[i] + dim : begin[i];
      if (b < 0 || b >= dim) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "StridedSlice: index %d of dimension %d is out of bounds [0, %d)", begin[i], i, dim));
      }
      begin[i] = b;
      stride[i] = 1;
      sizes[i] = 1;
      continue;
    }
    const int64_t lo = stride[i] > 0 ? 0 : -1;
    const int64_t hi = stride[i] > 0 ? dim : dim - 1;
    const auto canonical = [&](int64_t v, bool masked, bool is_begin) {
      if (masked) return (stride[i] > 0) == is_begin ? lo : hi;
      const int64_t fwd = v < 0 ? v + dim : v;
      return std::clamp(fwd, lo, hi);
    };
    begin[i] = canonical(begin[i], begin_masked[i], true);
    end[i] = canonical(end[i], end_masked[i], false);
    const int64_t length = end[i] - begin[i];
    if (length == 0 || (length < 0) != (stride[i] < 0)) {
      sizes[i] = 0;
    } else {
      sizes[i] = length / stride[i] + (length % stride[i] != 0 ? 1 : 0);
    }
  }
  std::vector<int64_t> out_dims;
  for (int64_t g : gather) {
    if (g == kNewAxis) out_dims.push_back(1);
    if (g >= 0) out_dims.push_back(sizes[g]);
  }
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, TensorShape(absl::MakeConstSpan(out_dims))));
  // Copy in the dense (input-rank) layout, which has the same element order.
  const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
  std::vector<int64_t> strides(rank);
  int64_t offset = 0;
  for (int i = 0; i < rank; ++i) {
    offset += begin[i] * in_strides[i];
    strides[i] = stride[i] * in_strides[i];
  }
  ASSIGN_OR_RETURN(Tensor dense, out->Reshaped(TensorShape(absl::MakeConstSpan(sizes))));
  return StridedGather(x, offset, strides, dense, "StridedSlice");
}

}  // namespace

void RegisterCpuSliceKernels(KernelRegistry& r) {
  r.Register(KernelDef("Slice").Device(kDeviceCpu), MakeKernel<SliceOp>);
  r.Register(KernelDef("StridedSlice").Device(kDeviceCpu), StridedSliceOp::Create);
}

}  // namespace rill
