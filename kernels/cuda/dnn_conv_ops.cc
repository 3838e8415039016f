// GPU convolutions through cuDNN: Conv2D and its two gradients, float and
// double.
//
// cuDNN runs on NCHW tensors and OIHW filters, the layouts every cuDNN
// algorithm takes in float and in double. Each kernel copies its operands
// there (dnn_layout.h, with random_kernels.cu's Relayout4d), padding the spatial dimensions
// explicitly on the way, so that cuDNN itself never pads: TensorFlow's SAME
// padding puts the odd row or column after the image, which cuDNN's
// symmetric padding cannot express, and the copy is needed for the layout
// anyway. Results are copied back into the node's layout (NHWC, or NCHW,
// which only GPUs run, as in TensorFlow), cropping the padding. A
// convolution runs the algorithm that cuDNN measured fastest for its shape
// on its device, searched on the shape's first run.
#include <algorithm>
#include <array>
#include <compare>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "kernels/common/conv_geometry.h"
#include "kernels/common/window_geometry.h"
#include "kernels/cuda/cuda_status.h"
#include "kernels/cuda/dnn_layout.h"
#include "kernels/cuda/gpu_kernel_util.h"
#include "kernels/cuda/gpu_kernels.h"
#include "kernels/cuda/random_kernels.h"

namespace rill {
namespace dnn {
namespace {

using conv::ConvGeometry;
using window::DimWindow;

// The largest cuDNN workspace a convolution may take; algorithms that want
// more are passed over.
constexpr size_t kMaxWorkspaceBytes = size_t{256} << 20;

absl::StatusOr<Tensor> Workspace(KernelContext& ctx, size_t bytes) {
  return ctx.AllocateTemp(DT_INT8, TensorShape({static_cast<int64_t>(std::max<size_t>(bytes, 1))}));
}

enum class ConvOp { kForward, kBackpropInput, kBackpropFilter };

// cuDNN's algorithm for one convolution shape, and the workspace it needs.
struct Algorithm {
  int algo = 0;
  size_t workspace = 0;
};

// The first algorithm of a cuDNN ranking (the heuristics' or the measured
// one) that runs here within kMaxWorkspaceBytes, deterministic ones first,
// never on tensor cores (TF32 would lose float precision).
template <typename Perf>
absl::StatusOr<int> PickAlgorithm(const KernelContext& ctx, const Perf* perf, int count) {
  for (const bool need_deterministic : {true, false}) {
    for (int i = 0; i < count; ++i) {
      const Perf& p = perf[i];
      if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kMaxWorkspaceBytes) continue;
      if (p.mathType == CUDNN_TENSOR_OP_MATH ||
          p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
        continue;
      }
      if (need_deterministic && p.determinism != CUDNN_DETERMINISTIC) continue;
      return static_cast<int>(p.algo);
    }
  }
  return absl::UnimplementedError(
      absl::StrFormat("%s: cuDNN has no algorithm for this convolution", ctx.node().name()));
}

// The descriptors of one convolution: x the padded NCHW input, w the OIHW
// filter, y the NCHW output.
struct ConvDescs {
  TensorDesc x;
  FilterDesc w;
  TensorDesc y;
  ConvDesc conv;
};

template <typename T>
absl::StatusOr<ConvDescs> MakeConvDescs(const KernelContext& ctx, const ConvGeometry& g,
                                        const Spatial& s) {
  ConvDescs d;
  ASSIGN_OR_RETURN(d.x, MakeTensorDesc<T>(ctx, Dims4{g.batch, g.depth, s.height, s.width}));
  ASSIGN_OR_RETURN(
      d.w, MakeFilterDesc<T>(ctx, Dims4{g.out_depth, g.depth, g.rows.window, g.cols.window}));
  ASSIGN_OR_RETURN(
      d.y, MakeTensorDesc<T>(ctx, Dims4{g.batch, g.out_depth, g.rows.output, g.cols.output}));
  RETURN_IF_ERROR(
      CheckFitsInt(ctx, {g.rows.stride, g.cols.stride, g.rows.dilation, g.cols.dilation}));
  cudnnConvolutionDescriptor_t conv;
  RETURN_IF_ERROR(
      CudnnResult(cudnnCreateConvolutionDescriptor(&conv), "cudnnCreateConvolutionDescriptor"));
  d.conv.reset(conv);
  const std::string what = ctx.node().name() + ": cuDNN convolution descriptor";
  RETURN_IF_ERROR(
      CudnnResult(cudnnSetConvolution2dDescriptor(
                      conv, 0, 0, static_cast<int>(g.rows.stride), static_cast<int>(g.cols.stride),
                      static_cast<int>(g.rows.dilation), static_cast<int>(g.cols.dilation),
                      CUDNN_CROSS_CORRELATION, kCudnnType<T>),
                  what));
  // CUDNN_DEFAULT_MATH would allow TF32 tensor cores for float on Ampere
  // and later; FMA keeps full float32, as the CPU computes. Double keeps
  // the default, which has no reduced-precision math to fall into.
  if constexpr (std::is_same_v<T, float>) {
    RETURN_IF_ERROR(CudnnResult(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), what));
  }
  int n, c, h, w;
  RETURN_IF_ERROR(CudnnResult(
      cudnnGetConvolution2dForwardOutputDim(conv, d.x.get(), d.w.get(), &n, &c, &h, &w), what));
  if (n != g.batch || c != g.out_depth || h != g.rows.output || w != g.cols.output) {
    return absl::InternalError(absl::StrFormat(
        "%s: cuDNN computes a [%d,%d,%d,%d] output where [%d,%d,%d,%d] is expected",
        ctx.node().name(), n, c, h, w, g.batch, g.out_depth, g.rows.output, g.cols.output));
  }
  return d;
}

// The device buffers of one convolution, as ConvDescs describes them; the
// operation writes one (y forward, x for the input's gradient, w for the
// filter's) and reads the other two.
struct ConvBuffers {
  void* x = nullptr;
  void* w = nullptr;
  void* y = nullptr;
};

// The cuDNN calls of each convolution, so that choosing and running an
// algorithm is written once for all three.
template <ConvOp kOp>
struct ConvCalls;

template <>
struct ConvCalls<ConvOp::kForward> {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  using Algo = cudnnConvolutionFwdAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_FWD_ALGO_COUNT;
  static constexpr const char* kRun = "cudnnConvolutionForward";

  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescs& d, int* count, Perf* perf) {
    return cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                  kCount, count, perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b,
                            void* workspace, size_t bytes, int* count, Perf* perf) {
    return cudnnFindConvolutionForwardAlgorithmEx(h, d.x.get(), b.x, d.w.get(), b.w, d.conv.get(),
                                                  d.y.get(), b.y, kCount, count, perf, workspace,
                                                  bytes);
  }
  static cudnnStatus_t WorkspaceSize(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(h, d.x.get(), d.w.get(), d.conv.get(), d.y.get(),
                                                   static_cast<Algo>(algo), bytes);
  }
  static cudnnStatus_t Run(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b, int algo,
                           void* workspace, size_t bytes, const void* one, const void* zero) {
    return cudnnConvolutionForward(h, one, d.x.get(), b.x, d.w.get(), b.w, d.conv.get(),
                                   static_cast<Algo>(algo), workspace, bytes, zero, d.y.get(), b.y);
  }
};

template <>
struct ConvCalls<ConvOp::kBackpropInput> {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  using Algo = cudnnConvolutionBwdDataAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT;
  static constexpr const char* kRun = "cudnnConvolutionBackwardData";

  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescs& d, int* count, Perf* perf) {
    return cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w.get(), d.y.get(), d.conv.get(),
                                                       d.x.get(), kCount, count, perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b,
                            void* workspace, size_t bytes, int* count, Perf* perf) {
    return cudnnFindConvolutionBackwardDataAlgorithmEx(h, d.w.get(), b.w, d.y.get(), b.y,
                                                       d.conv.get(), d.x.get(), b.x, kCount, count,
                                                       perf, workspace, bytes);
  }
  static cudnnStatus_t WorkspaceSize(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(h, d.w.get(), d.y.get(), d.conv.get(),
                                                        d.x.get(), static_cast<Algo>(algo), bytes);
  }
  static cudnnStatus_t Run(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b, int algo,
                           void* workspace, size_t bytes, const void* one, const void* zero) {
    return cudnnConvolutionBackwardData(h, one, d.w.get(), b.w, d.y.get(), b.y, d.conv.get(),
                                        static_cast<Algo>(algo), workspace, bytes, zero, d.x.get(),
                                        b.x);
  }
};

template <>
struct ConvCalls<ConvOp::kBackpropFilter> {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  using Algo = cudnnConvolutionBwdFilterAlgo_t;
  static constexpr int kCount = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT;
  static constexpr const char* kRun = "cudnnConvolutionBackwardFilter";

  static cudnnStatus_t Heuristic(cudnnHandle_t h, const ConvDescs& d, int* count, Perf* perf) {
    return cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.get(), d.y.get(), d.conv.get(),
                                                         d.w.get(), kCount, count, perf);
  }
  static cudnnStatus_t Find(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b,
                            void* workspace, size_t bytes, int* count, Perf* perf) {
    return cudnnFindConvolutionBackwardFilterAlgorithmEx(h, d.x.get(), b.x, d.y.get(), b.y,
                                                         d.conv.get(), d.w.get(), b.w, kCount,
                                                         count, perf, workspace, bytes);
  }
  static cudnnStatus_t WorkspaceSize(cudnnHandle_t h, const ConvDescs& d, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(
        h, d.x.get(), d.y.get(), d.conv.get(), d.w.get(), static_cast<Algo>(algo), bytes);
  }
  static cudnnStatus_t Run(cudnnHandle_t h, const ConvDescs& d, const ConvBuffers& b, int algo,
                           void* workspace, size_t bytes, const void* one, const void* zero) {
    return cudnnConvolutionBackwardFilter(h, one, d.x.get(), b.x, d.y.get(), b.y, d.conv.get(),
                                          static_cast<Algo>(algo), workspace, bytes, zero,
                                          d.w.get(), b.w);
  }
};

// The fastest algorithm for `d` as measured on this device, as
// TensorFlow's autotuning chooses: cudnnFind*Ex runs every candidate once
// on the kernel's own buffers (it writes the output, which the real run
// then overwrites; it reads the inputs only) and ranks them by time. Its
// scratch workspace is the largest that a candidate of the heuristics
// wants within kMaxWorkspaceBytes, so the search leaves out only what the
// run could not take either. The heuristics' first choice stands when the
// search cannot run (no memory for its workspace, a cuDNN error) or keeps
// nothing.
template <ConvOp kOp>
absl::StatusOr<Algorithm> ChooseAlgorithm(KernelContext& ctx, const GpuDeviceContext& gpu,
                                          const ConvDescs& d, const ConvBuffers& b)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.library_mu()) {
  using Calls = ConvCalls<kOp>;
  typename Calls::Perf perf[Calls::kCount];
  int count = 0;
  RETURN_IF_ERROR(CudnnResult(Calls::Heuristic(gpu.cudnn(), d, &count, perf),
                              ctx.node().name() + ": choosing a cuDNN convolution"));
  absl::StatusOr<int> algo = PickAlgorithm(ctx, perf, count);
  size_t search_bytes = 0;
  for (int i = 0; i < count; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kMaxWorkspaceBytes) {
      search_bytes = std::max(search_bytes, perf[i].memory);
    }
  }
  if (absl::StatusOr<Tensor> scratch = Workspace(ctx, search_bytes); scratch.ok()) {
    typename Calls::Perf measured[Calls::kCount];
    int measured_count = 0;
    const cudnnStatus_t found = Calls::Find(gpu.cudnn(), d, b, scratch->raw_data(), search_bytes,
                                            &measured_count, measured);
    // A candidate that could not launch here leaves its error for this
    // thread's next launch check; the search has passed it over already.
    static_cast<void>(cudaGetLastError());
    if (found == CUDNN_STATUS_SUCCESS) {
      if (absl::StatusOr<int> fastest = PickAlgorithm(ctx, measured, measured_count);
          fastest.ok()) {
        algo = fastest;
      }
    }
  }
  if (!algo.ok()) return algo.status();
  Algorithm a;
  a.algo = *algo;
  RETURN_IF_ERROR(CudnnResult(Calls::WorkspaceSize(gpu.cudnn(), d, a.algo, &a.workspace),
                              ctx.node().name() + ": cuDNN workspace size"));
  return a;
}

// The algorithms chosen so far, for every convolution kernel of the
// process, keyed by what the cuDNN call sees: the operation, dtype,
// device, padded input, filter, strides and dilations. One map for the
// process, as TensorFlow keeps: the search takes milliseconds, and every
// session builds its kernels anew, so a map per kernel would search again
// for each session and for each node of a shape met before.
//
// Thread safety: the map is guarded by mu.
struct AlgorithmCache {
  struct Key {
    ConvOp op;
    cudnnDataType_t dtype;
    int device;
    std::array<int64_t, 4> input;   // Padded NCHW.
    std::array<int64_t, 3> filter;  // Out depth, rows, cols.
    std::array<int64_t, 4> steps;   // Strides and dilations, rows then cols.
    auto operator<=>(const Key&) const = default;
  };
  absl::Mutex mu;
  std::map<Key, Algorithm> algorithms ABSL_GUARDED_BY(mu);
};

AlgorithmCache& ConvAlgorithms() {
  // Never destroyed: kernels may run while the process exits.
  static AlgorithmCache* const cache = new AlgorithmCache;
  return *cache;
}

// The algorithm for the convolution that `d` describes, searched once per
// key: calls on one device context hold its library_mu() throughout, so
// they never search a key twice (two contexts of one GPU may, harmlessly).
template <typename T, ConvOp kOp>
absl::StatusOr<Algorithm> CachedAlgorithm(KernelContext& ctx, const GpuDeviceContext& gpu,
                                          const ConvGeometry& g, const Spatial& s,
                                          const ConvDescs& d, const ConvBuffers& b)
    ABSL_EXCLUSIVE_LOCKS_REQUIRED(gpu.library_mu()) {
  const AlgorithmCache::Key key = {
      kOp,
      kCudnnType<T>,
      gpu.ordinal(),
      {g.batch, g.depth, s.height, s.width},
      {g.out_depth, g.rows.window, g.cols.window},
      {g.rows.stride, g.cols.stride, g.rows.dilation, g.cols.dilation}};
  AlgorithmCache& cache = ConvAlgorithms();
  {
    absl::MutexLock lock(&cache.mu);
    if (auto it = cache.algorithms.find(key); it != cache.algorithms.end()) return it->second;
  }
  ASSIGN_OR_RETURN(Algorithm chosen, ChooseAlgorithm<kOp>(ctx, gpu, d, b));
  absl::MutexLock lock(&cache.mu);
  cache.algorithms[key] = chosen;
  return chosen;
}

template <typename T, ConvOp kOp>
class ConvGpu final : public OpKernel {
 public:
  static absl::StatusOr<std::unique_ptr<OpKernel>> Create(const OpKernelConstruction& c) {
    ASSIGN_OR_RETURN(Layout layout, ReadLayout(c.def()));
    ASSIGN_OR_RETURN(window::WindowAttrs attrs,
                     window::ReadWindowAttrs(layout.nhwc, /*dilated=*/true));
    return std::unique_ptr<OpKernel>(new ConvGpu(c, layout.format, attrs));
  }

  absl::Status Compute(KernelContext& ctx) const override {
    ASSIGN_OR_RETURN(GpuDeviceContext * gpu, GpuContext(ctx));
    if constexpr (kOp == ConvOp::kForward) {
      return Forward(ctx, *gpu);
    } else if constexpr (kOp == ConvOp::kBackpropInput) {
      return BackpropInput(ctx, *gpu);
    } else {
      return BackpropFilter(ctx, *gpu);
    }
  }

 private:
  ConvGpu(const OpKernelConstruction& c, Format format, window::WindowAttrs attrs)
      : OpKernel(c), format_(format), attrs_(attrs) {}

  // The filter [rows, cols, depth, out_depth] as cuDNN's OIHW.
  absl::StatusOr<Tensor> FilterToOihw(KernelContext& ctx, GpuDeviceContext& gpu,
                                      const Tensor& filter, const ConvGeometry& g) const {
    const int64_t r = g.rows.window, s = g.cols.window, i = g.depth, o = g.out_depth;
    ASSIGN_OR_RETURN(Tensor out, ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({o, i, r, s})));
    const cuda::Relayout4d relayout = {
        {o, i, r, s}, {o, i, r, s}, {1, o, s * i * o, i * o}, {0, 0, 0, 0}};
    RETURN_IF_ERROR(Relayout<T>(ctx, gpu, filter.data<T>(), out.data<T>(), relayout, T(0)));
    return out;
  }

  // Runs the convolution on cuDNN's layouts (ConvDescs), choosing its
  // algorithm on the first run of the shape.
  absl::Status Convolve(KernelContext& ctx, GpuDeviceContext& gpu, const ConvGeometry& g,
                        const Spatial& s, const ConvBuffers& b) const {
    absl::MutexLock lock(&gpu.library_mu());
    ASSIGN_OR_RETURN(ConvDescs d, MakeConvDescs<T>(ctx, g, s));
    ASSIGN_OR_RETURN(Algorithm algo, (CachedAlgorithm<T, kOp>(ctx, gpu, g, s, d, b)));
    Tensor workspace;
    if (algo.workspace > 0) {
      ASSIGN_OR_RETURN(workspace, Workspace(ctx, algo.workspace));
    }
    const T one = 1, zero = 0;
    return CudnnResult(ConvCalls<kOp>::Run(gpu.cudnn(), d, b, algo.algo, workspace.raw_data(),
                                           algo.workspace, &one, &zero),
                       ctx.node().name() + ": " + ConvCalls<kOp>::kRun);
  }

  absl::Status Forward(KernelContext& ctx, GpuDeviceContext& gpu) const {
    const Tensor& input = ctx.input(0);
    const Tensor& filter = ctx.input(1);
    ASSIGN_OR_RETURN(ConvGeometry g,
                     conv::ComputeGeometry(attrs_, ToNhwc(format_, input.shape()), filter.shape()));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, FromNhwc(format_, g.output_shape())));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (input.NumElements() == 0 || filter.NumElements() == 0) return ZeroFill(ctx, gpu, *out);

    const Dims4 in_dims = DimsOf(g.input_shape());
    const Dims4 out_dims = DimsOf(g.output_shape());
    const Spatial s = PaddedSpatial(g.rows, g.cols);
    Tensor x = input;
    if (!IsUnpadded(format_, in_dims, s)) {
      ASSIGN_OR_RETURN(x, ToNchw<T>(ctx, gpu, format_, input, in_dims, s, T(0)));
    }
    ASSIGN_OR_RETURN(Tensor w, FilterToOihw(ctx, gpu, filter, g));
    Tensor y = *out;
    if (format_ != Format::kNchw) {
      ASSIGN_OR_RETURN(y,
                       ctx.AllocateTemp(kDataTypeOf<T>, FromNhwc(Format::kNchw, g.output_shape())));
    }
    RETURN_IF_ERROR(
        Convolve(ctx, gpu, g, s, ConvBuffers{x.raw_data(), w.raw_data(), y.raw_data()}));
    if (format_ == Format::kNchw) return absl::OkStatus();
    return FromNchw<T>(ctx, gpu, y, Spatial{0, 0, out_dims.h, out_dims.w}, format_, out_dims, *out);
  }

  absl::Status BackpropInput(KernelContext& ctx, GpuDeviceContext& gpu) const {
    ASSIGN_OR_RETURN(TensorShape input_shape, conv::ShapeFromInput(ctx.input(0), "input_sizes"));
    const Tensor& filter = ctx.input(1);
    const Tensor& out_backprop = ctx.input(2);
    ASSIGN_OR_RETURN(ConvGeometry g,
                     conv::ComputeGeometry(attrs_, ToNhwc(format_, input_shape), filter.shape()));
    RETURN_IF_ERROR(conv::CheckOutBackprop(g, ToNhwc(format_, out_backprop.shape())));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, input_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (out_backprop.NumElements() == 0 || filter.NumElements() == 0) {
      return ZeroFill(ctx, gpu, *out);
    }

    const Dims4 in_dims = DimsOf(g.input_shape());
    const Spatial s = PaddedSpatial(g.rows, g.cols);
    ASSIGN_OR_RETURN(Tensor dy,
                     ToNchw<T>(ctx, gpu, format_, out_backprop, DimsOf(g.output_shape())));
    ASSIGN_OR_RETURN(Tensor w, FilterToOihw(ctx, gpu, filter, g));
    const bool direct = IsUnpadded(format_, in_dims, s);
    Tensor dx = *out;
    if (!direct) {
      ASSIGN_OR_RETURN(
          dx, ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({g.batch, g.depth, s.height, s.width})));
    }
    RETURN_IF_ERROR(
        Convolve(ctx, gpu, g, s, ConvBuffers{dx.raw_data(), w.raw_data(), dy.raw_data()}));
    if (direct) return absl::OkStatus();
    return FromNchw<T>(ctx, gpu, dx, s, format_, in_dims, *out);
  }

  absl::Status BackpropFilter(KernelContext& ctx, GpuDeviceContext& gpu) const {
    const Tensor& input = ctx.input(0);
    ASSIGN_OR_RETURN(TensorShape filter_shape, conv::ShapeFromInput(ctx.input(1), "filter_sizes"));
    const Tensor& out_backprop = ctx.input(2);
    ASSIGN_OR_RETURN(ConvGeometry g,
                     conv::ComputeGeometry(attrs_, ToNhwc(format_, input.shape()), filter_shape));
    RETURN_IF_ERROR(conv::CheckOutBackprop(g, ToNhwc(format_, out_backprop.shape())));
    ASSIGN_OR_RETURN(Tensor * out, ctx.AllocateOutput(0, filter_shape));
    if (out->NumElements() == 0) return absl::OkStatus();
    if (out_backprop.NumElements() == 0 || input.NumElements() == 0) {
      return ZeroFill(ctx, gpu, *out);
    }

    const Dims4 in_dims = DimsOf(g.input_shape());
    const Spatial s = PaddedSpatial(g.rows, g.cols);
    Tensor x = input;
    if (!IsUnpadded(format_, in_dims, s)) {
      ASSIGN_OR_RETURN(x, ToNchw<T>(ctx, gpu, format_, input, in_dims, s, T(0)));
    }
    ASSIGN_OR_RETURN(Tensor dy,
                     ToNchw<T>(ctx, gpu, format_, out_backprop, DimsOf(g.output_shape())));
    const int64_t r = g.rows.window, c = g.cols.window, i = g.depth, o = g.out_depth;
    ASSIGN_OR_RETURN(Tensor dw, ctx.AllocateTemp(kDataTypeOf<T>, TensorShape({o, i, r, c})));
    RETURN_IF_ERROR(
        Convolve(ctx, gpu, g, s, ConvBuffers{x.raw_data(), dw.raw_data(), dy.raw_data()}));
    // OIHW back to the filter's [rows, cols, depth, out_depth].
    const cuda::Relayout4d relayout = {
        {r, c, i, o}, {r, c, i, o}, {c, 1, r * c, i * r * c}, {0, 0, 0, 0}};
    return Relayout<T>(ctx, gpu, dw.data<T>(), out->data<T>(), relayout, T(0));
  }

  const Format format_;
  const window::WindowAttrs attrs_;
};

template <ConvOp kOp, typename... Ts>
void RegisterConv(KernelRegistry& r, const char* op) {
  (r.Register(KernelDef(op).Device(kDeviceGpu).TypeConstraint<Ts>("T"), &ConvGpu<Ts, kOp>::Create),
   ...);
}

}  // namespace
}  // namespace dnn

void RegisterGpuConvKernels(KernelRegistry& registry) {
  dnn::RegisterConv<dnn::ConvOp::kForward, float, double>(registry, "Conv2D");
  dnn::RegisterConv<dnn::ConvOp::kBackpropInput, float, double>(registry, "Conv2DBackpropInput");
  dnn::RegisterConv<dnn::ConvOp::kBackpropFilter, float, double>(registry, "Conv2DBackpropFilter");
}

}  // namespace rill
