// GPU kernels that move elements around: Transpose, Tile, Slice,
// StridedSlice, ConcatV2, Pack, Split, SplitV, Unpack, Gather, GatherV2 and
// OneHot. Their checks and geometry are the CPU kernels'
// (kernels/common/transform_util.h); every copy is one strided-copy launch
// (transform_kernels.cu), and pieces along dim 0 are views, as on the CPU.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/gather_geometry.h"
#include "kernels/common/slice_geometry.h"
#include "kernels/common/split_join.h"
#include "kernels/common/transform_util.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/transform_kernels.h"

namespace rill {
namespace {

using transform_util::CheckGatherV2BatchDims;
using transform_util::DropUnpackedAxis;
using transform_util::GatherGeometry;
using transform_util::GatherGeometryOf;
using transform_util::JoinInto;
using transform_util::JoinSpec;
using transform_util::OneHotGeometry;
using transform_util::ReadConcatV2;
using transform_util::ReadGatherV2Axis;
using transform_util::ReadInts;
using transform_util::ReadOneHot;
using transform_util::ReadOneHotAxis;
using transform_util::ReadPack;
using transform_util::ReadSplit;
using transform_util::ReadSplitV;
using transform_util::ReadStridedSliceMasks;
using transform_util::ReadUnpack;
using transform_util::ResolveStridedSliceOf;
using transform_util::RowCopy;
using transform_util::RowMajorStrides;
using transform_util::SliceInto;
using transform_util::SplitInto;
using transform_util::SplitSpec;
using transform_util::StridedSliceGeometry;
using transform_util::StridedView;
using transform_util::TiledShape;
using transform_util::TransposeView;

// The types these kernels move: those a GPU keeps in its own memory
// (int32 tensors stay in host memory, so no GPU kernel takes them).
const DataTypeVector& MovedTypes() {
  static const auto* types = new DataTypeVector{DT_FLOAT, DT_DOUBLE, DT_INT64, DT_BOOL};
  return *types;
}

// A launcher's error as CheckLaunch words it.
absl::Status Launched(const KernelContext& ctx, cudaError_t error, std::string_view what) {
  if (error == cudaSuccess) return absl::OkStatus();
  return CudaError(error, absl::StrFormat("%s: %s", ctx.node().name(), what));
}

// Where element `element` of `t` lies. REQUIRES: t is not empty.
char* BytesAt(const Tensor& t, int64_t element) {
  return static_cast<char*>(t.raw_data()) + element * DataTypeSize(t.dtype());
}

// out (dense, of view.shape) = the elements of `in` that `view` names.
absl::Status GatherView(const KernelContext& ctx, const GpuDeviceContext& gpu, const Tensor& in,
                        const StridedView& view, Tensor& out, std::string_view what) {
  if (out.NumElements() == 0) return absl::OkStatus();
  const std::vector<int64_t> dst_strides = RowMajorStrides(view.shape);
  return Launched(
      ctx,
      cuda::LaunchStridedCopy(BytesAt(in, view.offset), out.raw_data(), DataTypeSize(in.dtype()),
                              view.shape.dims(), view.shape.dim_sizes().data(), view.strides.data(),
                              dst_strides.data(), gpu.compute_stream()),
      what);
}

// The device's row copies (Concat, Split and their kin).
RowCopy GpuRows(const KernelContext& ctx, const GpuDeviceContext& gpu, std::string_view what) {
  return [&ctx, &gpu, what](const Tensor& src, int64_t src_off, int64_t src_row, const Tensor& dst,
                            int64_t dst_off, int64_t dst_row, int64_t rows, int64_t len) {
    if (rows == 0 || len == 0) return absl::OkStatus();
    const int64_t dims[2] = {rows, len};
    const int64_t src_strides[2] = {src_row, 1};
    const int64_t dst_strides[2] = {dst_row, 1};
    return Launched(ctx,
                    cuda::LaunchStridedCopy(BytesAt(src, src_off), BytesAt(dst, dst_off),
                                            DataTypeSize(src.dtype()), 2, dims, src_strides,
                                            dst_strides, gpu.compute_stream()),
                    what);
  };
}

bool IsIdentity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

class GpuTransposeOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(const StridedView view, TransposeView(x, ctx.input(1)));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, view.shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (IsIdentity(ReadInts(ctx.input(1)))) {
      return gpu->CopyWithinDevice(x.raw_data(), out->raw_data(), x.TotalBytes());
    }
    return GatherView(ctx, *gpu, x, view, *out, "Transpose");
  }
};

// Tile as a copy of twice the rank: each dimension d of the input becomes
// a loop over its `multiples[d]` copies (reading the same input again) and
// a loop over the dimension itself.
class GpuTileOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(const TensorShape shape, TiledShape(x, ctx.input(1)));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    const std::vector<int64_t> in_strides = RowMajorStrides(x.shape());
    const std::vector<int64_t> out_strides = RowMajorStrides(shape);
    std::vector<int64_t> dims, src_strides, dst_strides;
    for (int d = 0; d < x.dims(); ++d) {
      const int64_t size = x.dim_size(d);
      dims.insert(dims.end(), {shape.dim_size(d) / size, size});
      src_strides.insert(src_strides.end(), {0, in_strides[d]});
      dst_strides.insert(dst_strides.end(), {size * out_strides[d], out_strides[d]});
    }
    return Launched(
        ctx,
        cuda::LaunchStridedCopy(x.raw_data(), out->raw_data(), DataTypeSize(x.dtype()),
                                static_cast<int>(dims.size()), dims.data(), src_strides.data(),
                                dst_strides.data(), gpu->compute_stream()),
        "Tile");
  }
};

class GpuSliceOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    return SliceInto(ctx, ctx.input(0), ctx.input(1), ctx.input(2),
                     [&](const Tensor& in, const StridedView& view, Tensor& out) {
                       return GatherView(ctx, *gpu, in, view, out, "Slice");
                     });
  }
};

class GpuStridedSliceOp final : public OpKernel {
 public:
  GpuStridedSliceOp(const OpKernelConstruction& c, StridedSliceMasks masks)
      : OpKernel(c), masks_(masks) {}

  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(const StridedSliceMasks masks, ReadStridedSliceMasks(c));
    return std::unique_ptr<OpKernel>(std::make_unique<GpuStridedSliceOp>(c, masks));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& x = ctx.input(0);
    ASSIGN_OR_RETURN(const StridedSliceGeometry g,
                     ResolveStridedSliceOf(x, ctx.input(1), ctx.input(2), ctx.input(3), masks_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.out_shape));
    // The output's elements in the processing (input-rank) layout, which
    // has the same order.
    return GatherView(ctx, *gpu, x, g.view, *out, "StridedSlice");
  }

 private:
  const StridedSliceMasks masks_;
};

class GpuConcatV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(const JoinSpec spec, ReadConcatV2(ctx));
    return JoinInto(ctx, spec, GpuRows(ctx, *gpu, "ConcatV2"));
  }
};

class GpuPackOp final : public OpKernel {
 public:
  GpuPackOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
    return std::unique_ptr<OpKernel>(std::make_unique<GpuPackOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(const JoinSpec spec, ReadPack(ctx, axis_));
    return JoinInto(ctx, spec, GpuRows(ctx, *gpu, "Pack"));
  }

 private:
  const int64_t axis_;
};

class GpuSplitOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& value = ctx.input(1);
    ASSIGN_OR_RETURN(const SplitSpec spec, ReadSplit(ctx.input(0), value, ctx.num_outputs()));
    return SplitInto(ctx, value, spec, GpuRows(ctx, *gpu, "Split"));
  }
};

class GpuSplitVOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& value = ctx.input(0);
    ASSIGN_OR_RETURN(const SplitSpec spec,
                     ReadSplitV(value, ctx.input(1), ctx.input(2), ctx.num_outputs()));
    return SplitInto(ctx, value, spec, GpuRows(ctx, *gpu, "SplitV"));
  }
};

class GpuUnpackOp final : public OpKernel {
 public:
  GpuUnpackOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, GetIntAttr(c.def(), "axis"));
    return std::unique_ptr<OpKernel>(std::make_unique<GpuUnpackOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    const Tensor& value = ctx.input(0);
    ASSIGN_OR_RETURN(const SplitSpec spec, ReadUnpack(value, axis_, ctx.num_outputs()));
    RETURN_IF_ERROR(SplitInto(ctx, value, spec, GpuRows(ctx, *gpu, "Unpack")));
    return DropUnpackedAxis(ctx, value, spec.axis);
  }

 private:
  const int64_t axis_;
};

// Gather and GatherV2. The CPU rejects an index outside [0, bound); here
// the indices are on the device, and checking them would wait for the
// stream, so such an index gives a row of zeros, as in TensorFlow's GPU
// kernel.
absl::Status GatherOnGpu(KernelContext& ctx, GpuDeviceContext& gpu, int axis,
                         std::string_view what) {
  const Tensor& params = ctx.input(0);
  ASSIGN_OR_RETURN(const GatherGeometry g,
                   GatherGeometryOf(params.shape(), ctx.input(1).shape(), axis));
  ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.shape));
  if (out->NumElements() == 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(const Tensor indices, InputOnDevice(ctx, gpu, 1));
  return Launched(
      ctx,
      cuda::LaunchGather(params.raw_data(), indices.raw_data(), indices.dtype() == DT_INT64,
                         out->raw_data(), DataTypeSize(params.dtype()), g.outer, g.bound, g.n,
                         g.inner, gpu.compute_stream()),
      what);
}

class GpuGatherOp final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    if (ctx.input(0).dims() < 1) {
      return absl::InvalidArgumentError("Gather: params must have rank >= 1");
    }
    return GatherOnGpu(ctx, *gpu, 0, "Gather");
  }
};

class GpuGatherV2Op final : public OpKernel {
 public:
  using OpKernel::OpKernel;
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    RETURN_IF_ERROR(CheckGatherV2BatchDims(c));
    return std::unique_ptr<OpKernel>(std::make_unique<GpuGatherV2Op>(c));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(const int axis, ReadGatherV2Axis(ctx.input(0), ctx.input(2)));
    return GatherOnGpu(ctx, *gpu, axis, "GatherV2");
  }
};

// Indices outside [0, depth) give a row of off_value, as on the CPU.
class GpuOneHotOp final : public OpKernel {
 public:
  GpuOneHotOp(const OpKernelConstruction& c, int64_t axis) : OpKernel(c), axis_(axis) {}
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(int64_t axis, ReadOneHotAxis(c));
    return std::unique_ptr<OpKernel>(std::make_unique<GpuOneHotOp>(c, axis));
  }
  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    ASSIGN_OR_RETURN(const OneHotGeometry g, ReadOneHot(ctx, axis_));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, g.shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    ASSIGN_OR_RETURN(const Tensor indices, InputOnDevice(ctx, *gpu, 0));
    return Launched(
        ctx,
        cuda::LaunchOneHot(indices.raw_data(), indices.dtype() == DT_INT64, ctx.input(2).raw_data(),
                           ctx.input(3).raw_data(), out->raw_data(), DataTypeSize(out->dtype()),
                           g.outer, g.depth, g.inner, gpu->compute_stream()),
        "OneHot");
  }

 private:
  const int64_t axis_;
};

}  // namespace

void RegisterGpuTransformKernels(KernelRegistry& r) {
  const DataTypeVector& types = MovedTypes();
  const DataTypeVector indices = {DT_INT32, DT_INT64};
  const auto gpu = [&](const char* op) {
    return KernelDef(op).Device(kDeviceGpu).TypeConstraint("T", types);
  };
  r.Register(gpu("Transpose").TypeConstraint("Tperm", DT_INT32), MakeKernel<GpuTransposeOp>);
  r.Register(gpu("Tile").TypeConstraint("Tmultiples", DT_INT32), MakeKernel<GpuTileOp>);
  r.Register(gpu("Slice").TypeConstraint("Index", DT_INT32), MakeKernel<GpuSliceOp>);
  r.Register(gpu("StridedSlice").TypeConstraint("Index", DT_INT32), GpuStridedSliceOp::Create);
  r.Register(gpu("ConcatV2").TypeConstraint("Tidx", DT_INT32), MakeKernel<GpuConcatV2Op>);
  r.Register(gpu("Pack"), GpuPackOp::Create);
  r.Register(gpu("Split"), MakeKernel<GpuSplitOp>);
  r.Register(gpu("SplitV").TypeConstraint("Tlen", DT_INT32), MakeKernel<GpuSplitVOp>);
  r.Register(gpu("Unpack"), GpuUnpackOp::Create);
  r.Register(KernelDef("Gather")
                 .Device(kDeviceGpu)
                 .TypeConstraint("Tparams", types)
                 .TypeConstraint("Tindices", indices),
             MakeKernel<GpuGatherOp>);
  r.Register(KernelDef("GatherV2")
                 .Device(kDeviceGpu)
                 .TypeConstraint("Tparams", types)
                 .TypeConstraint("Tindices", indices)
                 .TypeConstraint("Taxis", DT_INT32),
             GpuGatherV2Op::Create);
  r.Register(gpu("OneHot").TypeConstraint("TI", indices), GpuOneHotOp::Create);
}

}  // namespace rill
