// What the cuDNN kernels (dnn_conv_ops.cc, dnn_pooling_ops.cc) share: owned cuDNN descriptors,
// and the copies between a node's layout and cuDNN's padded NCHW.
#ifndef RILL_KERNELS_CUDA_DNN_LAYOUT_H_
#define RILL_KERNELS_CUDA_DNN_LAYOUT_H_

#include <cudnn.h>

#include <array>
#include <climits>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/proto/node_def.pb.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/nhwc_node.h"
#include "kernels/common/window_geometry.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/random_kernels.h"
#include "kernels/framework/op_kernel.h"

namespace rill::dnn {

template <typename T>
constexpr cudnnDataType_t kCudnnType =
    std::is_same_v<T, float> ? CUDNN_DATA_FLOAT : CUDNN_DATA_DOUBLE;

template <typename P, cudnnStatus_t (*kDestroy)(P)>
struct Destroyer {
  void operator()(P p) const { kDestroy(p); }
};
template <typename P, cudnnStatus_t (*kDestroy)(P)>
using Owned = std::unique_ptr<std::remove_pointer_t<P>, Destroyer<P, kDestroy>>;
using TensorDesc = Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor>;
using FilterDesc = Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor>;
using ConvDesc = Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor>;
using PoolDesc = Owned<cudnnPoolingDescriptor_t, cudnnDestroyPoolingDescriptor>;
using OpTensorDesc = Owned<cudnnOpTensorDescriptor_t, cudnnDestroyOpTensorDescriptor>;

// cuDNN takes sizes as int.
inline absl::Status CheckFitsInt(const KernelContext& ctx, std::initializer_list<int64_t> sizes) {
  for (int64_t size : sizes) {
    if (size > INT_MAX) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "%s: a dimension of %d is more than cuDNN takes", ctx.node().name(), size));
    }
  }
  return absl::OkStatus();
}

// Logical sizes of a batch of images, whatever their layout.
struct Dims4 {
  int64_t n = 0, c = 0, h = 0, w = 0;
};

template <typename T>
inline absl::StatusOr<TensorDesc> MakeTensorDesc(const KernelContext& ctx, const Dims4& d) {
  RETURN_IF_ERROR(CheckFitsInt(ctx, {d.n, d.c, d.h, d.w}));
  cudnnTensorDescriptor_t desc;
  RETURN_IF_ERROR(CudnnResult(cudnnCreateTensorDescriptor(&desc), "cudnnCreateTensorDescriptor"));
  TensorDesc owned(desc);
  RETURN_IF_ERROR(
      CudnnResult(cudnnSetTensor4dDescriptor(desc, CUDNN_TENSOR_NCHW, kCudnnType<T>,
                                             static_cast<int>(d.n), static_cast<int>(d.c),
                                             static_cast<int>(d.h), static_cast<int>(d.w)),
                  ctx.node().name() + ": cudnnSetTensor4dDescriptor"));
  return owned;
}

// Filters as [out_depth (n), in_depth (c), rows (h), cols (w)].
template <typename T>
inline absl::StatusOr<FilterDesc> MakeFilterDesc(const KernelContext& ctx, const Dims4& d) {
  RETURN_IF_ERROR(CheckFitsInt(ctx, {d.n, d.c, d.h, d.w}));
  cudnnFilterDescriptor_t desc;
  RETURN_IF_ERROR(CudnnResult(cudnnCreateFilterDescriptor(&desc), "cudnnCreateFilterDescriptor"));
  FilterDesc owned(desc);
  RETURN_IF_ERROR(
      CudnnResult(cudnnSetFilter4dDescriptor(desc, kCudnnType<T>, CUDNN_TENSOR_NCHW,
                                             static_cast<int>(d.n), static_cast<int>(d.c),
                                             static_cast<int>(d.h), static_cast<int>(d.w)),
                  ctx.node().name() + ": cudnnSetFilter4dDescriptor"));
  return owned;
}

enum class Format { kNhwc, kNchw };

inline absl::StatusOr<Format> ReadFormat(const NodeDef& node) {
  if (!node.attr().contains("data_format")) return Format::kNhwc;
  ASSIGN_OR_RETURN(std::string format, GetStringAttr(node, "data_format"));
  if (format == "NHWC") return Format::kNhwc;
  if (format == "NCHW") return Format::kNchw;
  return absl::UnimplementedError(absl::StrFormat(
      "%s on the GPU supports the NHWC and NCHW data formats, not %s", node.op(), format));
}

// The node's layout and its attrs in NHWC order.
struct Layout {
  Format format = Format::kNhwc;
  NodeDef nhwc;
};

inline absl::StatusOr<Layout> ReadLayout(const NodeDef& node) {
  ASSIGN_OR_RETURN(Format format, ReadFormat(node));
  return Layout{format, format == Format::kNchw ? window::AsNhwcNode(node) : node};
}

// The NHWC shape of a shape in `format`, and back; other ranks are left as
// they are for the geometry checks to refuse.
inline TensorShape ToNhwc(Format format, const TensorShape& s) {
  if (format == Format::kNhwc || s.dims() != 4) return s;
  return TensorShape({s.dim_size(0), s.dim_size(2), s.dim_size(3), s.dim_size(1)});
}
inline TensorShape FromNhwc(Format format, const TensorShape& s) {
  if (format == Format::kNhwc || s.dims() != 4) return s;
  return TensorShape({s.dim_size(0), s.dim_size(3), s.dim_size(1), s.dim_size(2)});
}

inline Dims4 DimsOf(const TensorShape& nhwc) {
  return Dims4{nhwc.dim_size(0), nhwc.dim_size(3), nhwc.dim_size(1), nhwc.dim_size(2)};
}

// Strides of (n, c, h, w) in a packed tensor of `format`.
inline std::array<int64_t, 4> StridesOf(Format format, const Dims4& d) {
  if (format == Format::kNhwc) return {d.h * d.w * d.c, 1, d.w * d.c, d.c};
  return {d.c * d.h * d.w, d.h * d.w, d.w, 1};
}

// The padded extent that one spatial dimension of cuDNN's input has: just
// what the windows of every output read, from pad_before rows before the
// image (an input row no window reads is left out).
struct Spatial {
  int64_t top = 0, left = 0;
  int64_t height = 0, width = 0;
};
inline int64_t PaddedExtent(const window::DimWindow& w) {
  return (w.output - 1) * w.stride + (w.window - 1) * w.dilation + 1;
}
inline Spatial PaddedSpatial(const window::DimWindow& rows, const window::DimWindow& cols) {
  return Spatial{rows.pad_before, cols.pad_before, PaddedExtent(rows), PaddedExtent(cols)};
}
// Whether an NCHW image of `d` is already cuDNN's padded input.
inline bool IsUnpadded(Format format, const Dims4& d, const Spatial& s) {
  return format == Format::kNchw && s.top == 0 && s.left == 0 && s.height == d.h && s.width == d.w;
}

template <typename T>
inline absl::Status Relayout(KernelContext& ctx, GpuDeviceContext& gpu, const T* in, T* out,
                             const cuda::Relayout4d& r, T fill) {
  cuda::LaunchRelayout4d<T>(in, out, r, fill, gpu.compute_stream());
  return CheckLaunch(ctx, "relayout for cuDNN");
}

// An NCHW copy of an image batch `d` in `format`, padded to `s` with `fill`.
template <typename T>
inline absl::StatusOr<Tensor> ToNchw(KernelContext& ctx, GpuDeviceContext& gpu, Format format,
                                     const Tensor& in, const Dims4& d, const Spatial& s, T fill) {
  ASSIGN_OR_RETURN(Tensor out,
                   ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({d.n, d.c, s.height, s.width})));
  const std::array<int64_t, 4> strides = StridesOf(format, d);
  const cuda::Relayout4d r = {{d.n, d.c, s.height, s.width},
                              {d.n, d.c, d.h, d.w},
                              {strides[0], strides[1], strides[2], strides[3]},
                              {0, 0, s.top, s.left}};
  RETURN_IF_ERROR(Relayout<T>(ctx, gpu, in.data<T>(), out.data<T>(), r, fill));
  return out;
}

// An NCHW copy of an unpadded image batch `d`: the tensor itself when it
// is one already.
template <typename T>
inline absl::StatusOr<Tensor> ToNchw(KernelContext& ctx, GpuDeviceContext& gpu, Format format,
                                     const Tensor& in, const Dims4& d) {
  if (format == Format::kNchw) return in;
  return ToNchw<T>(ctx, gpu, format, in, d, Spatial{0, 0, d.h, d.w}, T(0));
}

// Copies the NCHW `in` (padded to `s`) into the image batch `out` of `d`
// in `format`, cropping the padding; out rows no window read become 0.
template <typename T>
inline absl::Status FromNchw(KernelContext& ctx, GpuDeviceContext& gpu, const Tensor& in,
                             const Spatial& s, Format format, const Dims4& d, Tensor& out) {
  const int64_t plane = s.height * s.width;
  cuda::Relayout4d r;
  if (format == Format::kNchw) {
    r = {{d.n, d.c, d.h, d.w},
         {d.n, d.c, s.height, s.width},
         {d.c * plane, plane, s.width, 1},
         {0, 0, -s.top, -s.left}};
  } else {
    r = {{d.n, d.h, d.w, d.c},
         {d.n, s.height, s.width, d.c},
         {d.c * plane, s.width, 1, plane},
         {0, -s.top, -s.left, 0}};
  }
  return Relayout<T>(ctx, gpu, in.data<T>(), out.data<T>(), r, T(0));
}

inline absl::Status ZeroFill(KernelContext& ctx, GpuDeviceContext& gpu, Tensor& out) {
  RETURN_IF_CUDA_ERROR(cudaMemsetAsync(out.raw_data(), 0, out.TotalBytes(), gpu.compute_stream()),
                       ctx.node().name() + ": zeroing the output");
  return absl::OkStatus();
}

}  // namespace rill::dnn

#endif  // RILL_KERNELS_CUDA_DNN_LAYOUT_H_
