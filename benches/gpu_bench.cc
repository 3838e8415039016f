// GPU kernels through Session::Run beside the raw library call they are
// built on, in one run: MatMul beside cublasSgemm; Conv2D and its two
// gradients beside cuDNN running its fastest measured algorithm for the
// shape, as the kernels choose theirs; and the Fashion-MNIST training steps
// on /gpu:0 beside /cpu:0.
//
// Each session step and each baseline iteration ends by copying one
// element of the result to the host, so both wait for the GPU. The
// baselines' buffers hold random uniform values, as the session's
// variables do. Sessions run without soft placement, so that a node
// without a GPU kernel fails its benchmark instead of quietly timing the
// CPU. The fixed cost of a session step, what it costs beyond its kernel,
// reads off as BM_SessionMatMul/m:16/k:16/n:16 minus
// BM_CublasSgemm/m:16/k:16/n:16. Every benchmark skips, saying why,
// without a GPU. Figures: benches/README.md.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <random>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "benches/gpu_bench_util.h"
#include "benchmark/benchmark.h"
#include "examples/fashion_mlp_model.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/device/device_query.h"
#include "runtime/session.h"

namespace rill {
namespace {

using gpu_bench::Check;
using gpu_bench::DeviceFloats;
using gpu_bench::Failed;
using gpu_bench::HaveGpu;
using gpu_bench::InitializedSession;
using gpu_bench::Make;
using gpu_bench::NewDeviceFloats;
using gpu_bench::Owned;
using gpu_bench::RandomDeviceFloats;
using gpu_bench::RandomVariable;
using gpu_bench::SetTflops;
using gpu_bench::TimeLibraryCalls;
using gpu_bench::TimeSessionSteps;

constexpr float kOne = 1, kZero = 0;

// [m, k] x [k, n] on /gpu:0 from two variables, fetching one element of
// the product.
void BM_SessionMatMul(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Output a = RandomVariable(root, "a", {m, k});
  const Output b = RandomVariable(root, "b", {k, n});
  const Output product = ops::MatMul(root.WithOpName("product"), a, b);
  const Output corner = ops::Slice(root.WithOpName("corner"), product, {0, 0}, {1, 1});
  TimeSessionSteps(state, root, corner, 2.0 * m * k * n);
}

// The same product by cuBLAS on device buffers (row-major, as the kernel
// computes it: C^T = B^T A^T).
void BM_CublasSgemm(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  absl::StatusOr<DeviceFloats> a = RandomDeviceFloats(int64_t{m} * k, 1);
  absl::StatusOr<DeviceFloats> b = RandomDeviceFloats(int64_t{k} * n, 2);
  absl::StatusOr<DeviceFloats> c = NewDeviceFloats(int64_t{m} * n);
  Owned<cudaStream_t, cudaStreamDestroy> stream;
  Owned<cublasHandle_t, cublasDestroy> handle;
  if (Failed(state, a.status()) || Failed(state, b.status()) || Failed(state, c.status()) ||
      Failed(state, Make(stream, cudaStreamCreate, "cudaStreamCreate")) ||
      Failed(state, Make(handle, cublasCreate, "cublasCreate")) ||
      Failed(state, Check(cublasSetStream(handle.get(), stream.get()), "cublasSetStream"))) {
    return;
  }
  TimeLibraryCalls(state, stream.get(), c->get(), 2.0 * m * k * n, "cublasSgemm", [&] {
    return cublasSgemm(handle.get(), CUBLAS_OP_N, CUBLAS_OP_N, n, m, k, &kOne, b->get(), n,
                       a->get(), k, &kZero, c->get(), n);
  });
}

// The 4096^2 product, the MLP's layers at batch 1024 and 64, and 16^3,
// whose time is nearly all fixed cost: there the session's time minus
// cuBLAS's is what a session step costs beyond its kernel.
void MatMulShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "k", "n"});
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {4096, 4096, 4096}, {1024, 784, 128}, {1024, 128, 10}, {64, 784, 128}, {16, 16, 16}}) {
    b->Args({m, k, n});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_SessionMatMul)->Apply(MatMulShapes);
BENCHMARK(BM_CublasSgemm)->Apply(MatMulShapes);

// An NHWC convolution of a ResNet-like layer: [batch, 56, 56, 64] by a
// 3x3x64x64 filter, stride 1, SAME, so the output (and the gradient
// flowing back into it) has the image's shape. Its two gradients take as
// many multiply-adds as the convolution.
constexpr int kConvBatch = 32, kConvSide = 56, kConvDepth = 64, kConvWindow = 3;
double ConvFlops() {
  return 2.0 * kConvBatch * kConvSide * kConvSide * kConvDepth * kConvDepth * kConvWindow *
         kConvWindow;
}

// The image's and the filter's shapes as int32 vectors, the form of
// RandomUniform's shape and of the gradients' input_sizes and
// filter_sizes.
Tensor ConvImageShape() {
  return Tensor::FromVector<int32_t>({kConvBatch, kConvSide, kConvSide, kConvDepth},
                                     TensorShape({4}));
}
Tensor ConvFilterShape() {
  return Tensor::FromVector<int32_t>({kConvWindow, kConvWindow, kConvDepth, kConvDepth},
                                     TensorShape({4}));
}

Output FirstElement4d(const Scope& root, const Output& tensor) {
  return ops::Slice(root.WithOpName("corner"), tensor, {0, 0, 0, 0}, {1, 1, 1, 1});
}

void BM_SessionConv2D(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Output x = RandomVariable(root, "x", ConvImageShape());
  const Output w = RandomVariable(root, "w", ConvFilterShape());
  const Output y = ops::Conv2D(root.WithOpName("conv"), x, w, {1, 1, 1, 1}, "SAME");
  TimeSessionSteps(state, root, FirstElement4d(root, y), ConvFlops());
}

// The gradient of the convolution's image from its filter and the
// gradient of its output.
void BM_SessionConv2DBackpropInput(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Output w = RandomVariable(root, "w", ConvFilterShape());
  const Output dy = RandomVariable(root, "dy", ConvImageShape());
  const Output dx = ops::Conv2DBackpropInput(root.WithOpName("conv_input_grad"), ConvImageShape(),
                                             w, dy, {1, 1, 1, 1}, "SAME");
  TimeSessionSteps(state, root, FirstElement4d(root, dx), ConvFlops());
}

// The gradient of the convolution's filter from its image and the
// gradient of its output.
void BM_SessionConv2DBackpropFilter(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Output x = RandomVariable(root, "x", ConvImageShape());
  const Output dy = RandomVariable(root, "dy", ConvImageShape());
  const Output dw = ops::Conv2DBackpropFilter(root.WithOpName("conv_filter_grad"), x,
                                              ConvFilterShape(), dy, {1, 1, 1, 1}, "SAME");
  TimeSessionSteps(state, root, FirstElement4d(root, dw), ConvFlops());
}

// The largest workspace a cuDNN algorithm may take here: the cap of the
// kernels (kMaxWorkspaceBytes in kernels/cuda/dnn_conv_ops.cc), so that the
// baselines choose among the same candidates.
constexpr size_t kCudnnWorkspaceBytes = size_t{256} << 20;

// The convolution set up for raw cuDNN, shared by its three baselines:
// x the NHWC image, w the filter (in cuDNN's NHWC filter layout), y the
// NHWC output, all three holding random uniform values (each operation
// writes one and reads the other two); CUDNN_FMA_MATH, the full float32
// math the kernels ask for (no TF32 on tensor cores). Members are
// destroyed in reverse order: the handle before its stream.
struct CudnnConvolution {
  Owned<cudaStream_t, cudaStreamDestroy> stream;
  Owned<cudnnHandle_t, cudnnDestroy> handle;
  Owned<cudnnTensorDescriptor_t, cudnnDestroyTensorDescriptor> x_desc, y_desc;
  Owned<cudnnFilterDescriptor_t, cudnnDestroyFilterDescriptor> w_desc;
  Owned<cudnnConvolutionDescriptor_t, cudnnDestroyConvolutionDescriptor> conv;
  DeviceFloats x, w, y;
  Owned<void*, cudaFree> workspace;
};

absl::Status SetUp(CudnnConvolution& c) {
  constexpr int n = kConvBatch, side = kConvSide, depth = kConvDepth, window = kConvWindow;
  RETURN_IF_ERROR(Make(c.stream, cudaStreamCreate, "cudaStreamCreate"));
  RETURN_IF_ERROR(Make(c.handle, cudnnCreate, "cudnnCreate"));
  RETURN_IF_ERROR(Check(cudnnSetStream(c.handle.get(), c.stream.get()), "cudnnSetStream"));
  for (auto* desc : {&c.x_desc, &c.y_desc}) {
    RETURN_IF_ERROR(Make(*desc, cudnnCreateTensorDescriptor, "cudnnCreateTensorDescriptor"));
    RETURN_IF_ERROR(Check(cudnnSetTensor4dDescriptor(desc->get(), CUDNN_TENSOR_NHWC,
                                                     CUDNN_DATA_FLOAT, n, depth, side, side),
                          "cudnnSetTensor4dDescriptor"));
  }
  RETURN_IF_ERROR(Make(c.w_desc, cudnnCreateFilterDescriptor, "cudnnCreateFilterDescriptor"));
  RETURN_IF_ERROR(Check(cudnnSetFilter4dDescriptor(c.w_desc.get(), CUDNN_DATA_FLOAT,
                                                   CUDNN_TENSOR_NHWC, depth, depth, window, window),
                        "cudnnSetFilter4dDescriptor"));
  RETURN_IF_ERROR(
      Make(c.conv, cudnnCreateConvolutionDescriptor, "cudnnCreateConvolutionDescriptor"));
  RETURN_IF_ERROR(
      Check(cudnnSetConvolution2dDescriptor(c.conv.get(), window / 2, window / 2, 1, 1, 1, 1,
                                            CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT),
            "cudnnSetConvolution2dDescriptor"));
  RETURN_IF_ERROR(Check(cudnnSetConvolutionMathType(c.conv.get(), CUDNN_FMA_MATH),
                        "cudnnSetConvolutionMathType"));
  const int64_t image = int64_t{n} * side * side * depth;
  ASSIGN_OR_RETURN(c.x, RandomDeviceFloats(image, 1));
  ASSIGN_OR_RETURN(c.w, RandomDeviceFloats(int64_t{window} * window * depth * depth, 2));
  ASSIGN_OR_RETURN(c.y, RandomDeviceFloats(image, 3));
  return Make(
      c.workspace, [](void** p) { return cudaMalloc(p, kCudnnWorkspaceBytes); }, "cudaMalloc");
}

// The first algorithm of a cuDNN ranking that `rank(kCount, &count, perf)`
// writes (the heuristics' order, or the measured one, fastest first) that
// runs within the workspace and off the tensor cores: CUDNN_FMA_MATH asks
// for full float32, yet a ranking may still list TF32 entries, which the
// kernels pass over too.
template <typename Perf, int kCount, typename Rank>
absl::StatusOr<decltype(Perf::algo)> Choose(const char* what, Rank rank) {
  std::array<Perf, kCount> perf;
  int count = 0;
  RETURN_IF_ERROR(Check(rank(kCount, &count, perf.data()), what));
  // A candidate that could not launch during a search leaves its error for
  // this thread's next launch check; the search has passed it over already.
  static_cast<void>(cudaGetLastError());
  for (int i = 0; i < count; ++i) {
    const Perf& p = perf[i];
    if (p.status != CUDNN_STATUS_SUCCESS || p.memory > kCudnnWorkspaceBytes ||
        p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION) {
      continue;
    }
    return p.algo;
  }
  return absl::NotFoundError(
      absl::StrCat(what, ": no algorithm within the workspace and off the tensor cores"));
}

// cudnnConvolutionForward with the algorithm that cuDNN measures fastest
// here (`measured`, the baseline to compare with) or that its heuristics
// rank first, without running anything.
void CudnnForward(benchmark::State& state, bool measured) {
  CudnnConvolution c;
  if (!HaveGpu(state) || Failed(state, SetUp(c))) return;
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  const absl::StatusOr<cudnnConvolutionFwdAlgo_t> algo =
      measured
          ? Choose<Perf, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
                "cudnnFindConvolutionForwardAlgorithmEx",
                [&](int max, int* count, Perf* perf) {
                  return cudnnFindConvolutionForwardAlgorithmEx(
                      c.handle.get(), c.x_desc.get(), c.x.get(), c.w_desc.get(), c.w.get(),
                      c.conv.get(), c.y_desc.get(), c.y.get(), max, count, perf, c.workspace.get(),
                      kCudnnWorkspaceBytes);
                })
          : Choose<Perf, CUDNN_CONVOLUTION_FWD_ALGO_COUNT>(
                "cudnnGetConvolutionForwardAlgorithm_v7", [&](int max, int* count, Perf* perf) {
                  return cudnnGetConvolutionForwardAlgorithm_v7(c.handle.get(), c.x_desc.get(),
                                                                c.w_desc.get(), c.conv.get(),
                                                                c.y_desc.get(), max, count, perf);
                });
  if (Failed(state, algo.status())) return;
  TimeLibraryCalls(state, c.stream.get(), c.y.get(), ConvFlops(), "cudnnConvolutionForward", [&] {
    return cudnnConvolutionForward(c.handle.get(), &kOne, c.x_desc.get(), c.x.get(), c.w_desc.get(),
                                   c.w.get(), c.conv.get(), *algo, c.workspace.get(),
                                   kCudnnWorkspaceBytes, &kZero, c.y_desc.get(), c.y.get());
  });
}

void BM_CudnnConvolutionForwardFastest(benchmark::State& state) { CudnnForward(state, true); }
void BM_CudnnConvolutionForwardHeuristic(benchmark::State& state) { CudnnForward(state, false); }

// The image's gradient (into x) from the filter and the output's gradient
// (y), with the fastest measured algorithm.
void BM_CudnnConvolutionBackwardDataFastest(benchmark::State& state) {
  CudnnConvolution c;
  if (!HaveGpu(state) || Failed(state, SetUp(c))) return;
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  const absl::StatusOr<cudnnConvolutionBwdDataAlgo_t> algo =
      Choose<Perf, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT>(
          "cudnnFindConvolutionBackwardDataAlgorithmEx", [&](int max, int* count, Perf* perf) {
            return cudnnFindConvolutionBackwardDataAlgorithmEx(
                c.handle.get(), c.w_desc.get(), c.w.get(), c.y_desc.get(), c.y.get(), c.conv.get(),
                c.x_desc.get(), c.x.get(), max, count, perf, c.workspace.get(),
                kCudnnWorkspaceBytes);
          });
  if (Failed(state, algo.status())) return;
  TimeLibraryCalls(
      state, c.stream.get(), c.x.get(), ConvFlops(), "cudnnConvolutionBackwardData", [&] {
        return cudnnConvolutionBackwardData(c.handle.get(), &kOne, c.w_desc.get(), c.w.get(),
                                            c.y_desc.get(), c.y.get(), c.conv.get(), *algo,
                                            c.workspace.get(), kCudnnWorkspaceBytes, &kZero,
                                            c.x_desc.get(), c.x.get());
      });
}

// The filter's gradient (into w) from the image and the output's gradient
// (y), with the fastest measured algorithm.
void BM_CudnnConvolutionBackwardFilterFastest(benchmark::State& state) {
  CudnnConvolution c;
  if (!HaveGpu(state) || Failed(state, SetUp(c))) return;
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  const absl::StatusOr<cudnnConvolutionBwdFilterAlgo_t> algo =
      Choose<Perf, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT>(
          "cudnnFindConvolutionBackwardFilterAlgorithmEx", [&](int max, int* count, Perf* perf) {
            return cudnnFindConvolutionBackwardFilterAlgorithmEx(
                c.handle.get(), c.x_desc.get(), c.x.get(), c.y_desc.get(), c.y.get(), c.conv.get(),
                c.w_desc.get(), c.w.get(), max, count, perf, c.workspace.get(),
                kCudnnWorkspaceBytes);
          });
  if (Failed(state, algo.status())) return;
  TimeLibraryCalls(
      state, c.stream.get(), c.w.get(), ConvFlops(), "cudnnConvolutionBackwardFilter", [&] {
        return cudnnConvolutionBackwardFilter(c.handle.get(), &kOne, c.x_desc.get(), c.x.get(),
                                              c.y_desc.get(), c.y.get(), c.conv.get(), *algo,
                                              c.workspace.get(), kCudnnWorkspaceBytes, &kZero,
                                              c.w_desc.get(), c.w.get());
      });
}

void ConvTiming(benchmark::internal::Benchmark* b) {
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_SessionConv2D)->Apply(ConvTiming);
BENCHMARK(BM_CudnnConvolutionForwardFastest)->Apply(ConvTiming);
BENCHMARK(BM_CudnnConvolutionForwardHeuristic)->Apply(ConvTiming);
BENCHMARK(BM_SessionConv2DBackpropInput)->Apply(ConvTiming);
BENCHMARK(BM_CudnnConvolutionBackwardDataFastest)->Apply(ConvTiming);
BENCHMARK(BM_SessionConv2DBackpropFilter)->Apply(ConvTiming);
BENCHMARK(BM_CudnnConvolutionBackwardFilterFastest)->Apply(ConvTiming);

// One Adam step of the Fashion-MNIST MLP or CNN on `device`, fed a random
// batch of `batch` images (copied in each step, as in training).
void TrainingStep(benchmark::State& state, bool cnn, const std::string& device) {
  if (device == "/gpu:0" && !HaveGpu(state)) return;
  const int64_t batch = state.range(0);
  const Scope root = ops::NewRootScope().WithDevice(device);
  absl::StatusOr<examples::FashionModel> model =
      cnn ? examples::BuildFashionCnn(root) : examples::BuildFashionMlp(root);
  if (Failed(state, model.status())) return;
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  if (Failed(state, graph.status())) return;
  std::unique_ptr<Session> session = InitializedSession(state, *graph, model->init.name());
  if (session == nullptr) return;
  Tensor images(DT_FLOAT, TensorShape({batch, 784}));
  Tensor labels(DT_INT32, TensorShape({batch}));
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  for (int64_t i = 0; i < images.NumElements(); ++i) images.data<float>()[i] = pixel(rng);
  for (int64_t i = 0; i < batch; ++i) labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % 10);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", images}, {"labels", labels}};
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> loss =
        session->Run(feeds, {model->loss.name()}, {model->train.name()});
    if (Failed(state, loss.status())) return;
  }
  // The time of one epoch of 60,000 images at this batch.
  state.counters["epoch_s"] = benchmark::Counter(
      static_cast<double>(batch) / 60000.0,
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

void BM_MlpStepGpu(benchmark::State& state) { TrainingStep(state, false, "/gpu:0"); }
void BM_MlpStepCpu(benchmark::State& state) { TrainingStep(state, false, "/cpu:0"); }
void BM_CnnStepGpu(benchmark::State& state) { TrainingStep(state, true, "/gpu:0"); }
BENCHMARK(BM_MlpStepGpu)
    ->ArgName("batch")
    ->Arg(64)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_MlpStepCpu)
    ->ArgName("batch")
    ->Arg(64)
    ->Arg(1024)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CnnStepGpu)->ArgName("batch")->Arg(64)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
