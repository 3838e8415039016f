// CPU kernels that join tensors along an axis or cut one into pieces:
// ConcatV2, Pack, Split, SplitV and Unpack. Pieces along dim 0 are views
// of the input.
// clang-format off
#include "kernels/framework/cpu_threads.h"
// clang-format on

#include <cstdint>
#include <memory>
#include <string_view>

#include "absl/status/status.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/split_join.h"
#include "kernels/common/transform_util.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"

namespace rill {
namespace {

using transform_util::CopyRows;
using transform_util::DropUnpackedAxis;
using transform_util::JoinInto;
using transform_util::JoinSpec;
using transform_util::ReadConcatV2;
using transform_util::ReadPack;
using transform_util::ReadSplit;
using transform_util::ReadSplitV;
using transform_util::ReadUnpack;
using transform_util::RowCopy;
using transform_util::SplitInto;
using transform_util::SplitSpec;

// The CPU's row copies, with `op` named in their errors.
RowCopy CpuRows(std::string_view op) {
  return [op](const Tensor& src, int64_t src_off, int64_t src_row, const Tensor& dst,
              int64_t dst_off, int64_t dst_row, int64_t rows, int64_t len) {
    return CopyRows(src, src_off, src_row, dst, dst_off, dst_row, rows, len, op);
  };
}

class SplitOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(1);
    ASSIGN_OR_RETURN(const SplitSpec spec, ReadSplit(ctx.input(0), value, ctx.num_outputs()));
    return SplitInto(ctx, value, spec, CpuRows("Split"));
  }
};

class SplitVOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(0);
    ASSIGN_OR_RETURN(const SplitSpec spec,
                     ReadSplitV(value, ctx.input(1), ctx.input(2), ctx.num_outputs()));
    return SplitInto(ctx, value, spec, CpuRows("SplitV"));
  }
};

class ConcatV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const JoinSpec spec, ReadConcatV2(ctx));
    return JoinInto(ctx, spec, CpuRows("ConcatV2"));
  }
};

// Pack and Unpack read `axis` at construction; its range depends on the
// input rank, so it is checked at run time.
class PackOp final : public OpKernel {
 public:
  PackOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
    return std::unique_ptr<OpKernel>(std::make_unique<PackOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(const JoinSpec spec, ReadPack(ctx, axis_));
    return JoinInto(ctx, spec, CpuRows("Pack"));
  }

 private:
  const int64_t axis_;
};

class UnpackOp final : public OpKernel {
 public:
  UnpackOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
    return std::unique_ptr<OpKernel>(std::make_unique<UnpackOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    const Tensor& value = ctx.input(0);
    ASSIGN_OR_RETURN(const SplitSpec spec, ReadUnpack(value, axis_, ctx.num_outputs()));
    RETURN_IF_ERROR(SplitInto(ctx, value, spec, CpuRows("Unpack")));
    return DropUnpackedAxis(ctx, value, spec.axis);
  }

 private:
  const int64_t axis_;
};

}  // namespace

void RegisterCpuConcatSplitKernels(KernelRegistry& r) {
  r.Register(KernelDef("Split").Device(kDeviceCpu), MakeKernel<SplitOp>);
  r.Register(KernelDef("SplitV").Device(kDeviceCpu), MakeKernel<SplitVOp>);
  r.Register(KernelDef("ConcatV2").Device(kDeviceCpu), MakeKernel<ConcatV2Op>);
  r.Register(KernelDef("Pack").Device(kDeviceCpu), PackOp::Create);
  r.Register(KernelDef("Unpack").Device(kDeviceCpu), UnpackOp::Create);
}

}  // namespace rill
