// GPU kernels through Session::Run beside the raw library call they are
// built on, in one run: MatMul beside cublasSgemm, Conv2D beside
// cudnnConvolutionForward, and the Fashion-MNIST training steps on /gpu:0
// beside /cpu:0. Each session step and each baseline iteration ends by
// copying one element of the result to the host, so both wait for the GPU.
// Every benchmark skips, saying why, without a GPU. Figures:
// benches/README.md.
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cudnn.h>

#include <array>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "benchmark/benchmark.h"
#include "examples/fashion_mlp_model.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/device_query.h"
#include "runtime/session.h"

namespace rill {
namespace {

// Skips `state` and returns false when the process has no GPU.
bool HaveGpu(benchmark::State& state) {
  static const GpuQuery* const gpus = new GpuQuery(QueryGpuDevices());
  if (!gpus->devices.empty()) return true;
  state.SkipWithError(("no GPU: " + gpus->reason).c_str());
  return false;
}

bool Failed(benchmark::State& state, const absl::Status& status) {
  if (status.ok()) return false;
  state.SkipWithError(std::string(status.message()).c_str());
  return true;
}

bool CudaFailed(benchmark::State& state, cudaError_t error, const char* what) {
  if (error == cudaSuccess) return false;
  state.SkipWithError((std::string(what) + ": " + cudaGetErrorString(error)).c_str());
  return true;
}

// A session over `graph` that has run `init`; nullptr (and `state`
// skipped) when either fails.
std::unique_ptr<Session> InitializedSession(benchmark::State& state, const GraphDef& graph,
                                            const std::string& init) {
  SessionOptions options;
  options.allow_soft_placement = true;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
  if (Failed(state, session.status())) return nullptr;
  if (Failed(state, (*session)->Run({}, {}, {init}).status())) return nullptr;
  return std::move(*session);
}

// Runs `fetch` once per iteration, then sets the FLOP rate.
void RunSteps(benchmark::State& state, Session& session, const std::string& fetch, double flops) {
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = session.Run({}, {fetch});
    if (Failed(state, out.status())) return;
  }
  state.counters["TFLOPS"] =
      benchmark::Counter(flops / 1e12, benchmark::Counter::kIsIterationInvariantRate);
}

// [m, k] x [k, n] on /gpu:0 from two variables, fetching one element of
// the product.
void BM_SessionMatMul(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const int m = static_cast<int>(state.range(0)), k = static_cast<int>(state.range(1)),
            n = static_cast<int>(state.range(2));
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Variable a(root, "a", ops::RandomUniform(root, {m, k}, DT_FLOAT));
  const Variable b(root, "b", ops::RandomUniform(root, {k, n}, DT_FLOAT));
  const Output product = ops::MatMul(root.WithOpName("product"), a.value(), b.value());
  const Output corner = ops::Slice(root.WithOpName("corner"), product, {0, 0}, {1, 1});
  const Operation init = GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  if (Failed(state, graph.status())) return;
  std::unique_ptr<Session> session = InitializedSession(state, *graph, init.name());
  if (session != nullptr) RunSteps(state, *session, corner.name(), 2.0 * m * k * n);
}

// The same product by cuBLAS on device buffers (row-major, as the kernel
// computes it: C^T = B^T A^T), then one element copied to the host.
void BM_CublasSgemm(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  float *a = nullptr, *b = nullptr, *c = nullptr;
  cudaStream_t stream = nullptr;
  cublasHandle_t handle = nullptr;
  if (CudaFailed(state, cudaMalloc(&a, m * k * sizeof(float)), "cudaMalloc") ||
      CudaFailed(state, cudaMalloc(&b, k * n * sizeof(float)), "cudaMalloc") ||
      CudaFailed(state, cudaMalloc(&c, m * n * sizeof(float)), "cudaMalloc") ||
      CudaFailed(state, cudaMemset(a, 0, m * k * sizeof(float)), "cudaMemset") ||
      CudaFailed(state, cudaMemset(b, 0, k * n * sizeof(float)), "cudaMemset") ||
      CudaFailed(state, cudaStreamCreate(&stream), "cudaStreamCreate")) {
    return;
  }
  if (cublasCreate(&handle) != CUBLAS_STATUS_SUCCESS) {
    state.SkipWithError("cublasCreate failed");
  } else {
    cublasSetStream(handle, stream);
    const float one = 1, zero = 0;
    float corner = 0;
    for (auto _ : state) {
      cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, static_cast<int>(n), static_cast<int>(m),
                  static_cast<int>(k), &one, b, static_cast<int>(n), a, static_cast<int>(k), &zero,
                  c, static_cast<int>(n));
      cudaMemcpyAsync(&corner, c, sizeof(float), cudaMemcpyDeviceToHost, stream);
      if (CudaFailed(state, cudaStreamSynchronize(stream), "cublasSgemm")) break;
    }
    benchmark::DoNotOptimize(corner);
    state.counters["TFLOPS"] =
        benchmark::Counter(2.0 * m * k * n / 1e12, benchmark::Counter::kIsIterationInvariantRate);
    cublasDestroy(handle);
  }
  cudaStreamDestroy(stream);
  cudaFree(a);
  cudaFree(b);
  cudaFree(c);
}

// The 4096^2 product, then the MLP's layers at batch 1024 and 64.
void MatMulShapes(benchmark::internal::Benchmark* b) {
  b->ArgNames({"m", "k", "n"});
  for (const auto& [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {4096, 4096, 4096}, {1024, 784, 128}, {1024, 128, 10}, {64, 784, 128}}) {
    b->Args({m, k, n});
  }
  b->UseRealTime()->Unit(benchmark::kMicrosecond);
}
BENCHMARK(BM_SessionMatMul)->Apply(MatMulShapes);
BENCHMARK(BM_CublasSgemm)->Apply(MatMulShapes);

// An NHWC convolution of a ResNet-like layer: [batch, 56, 56, 64] by a
// 3x3x64x64 filter, stride 1, SAME.
constexpr int kConvBatch = 32, kConvSide = 56, kConvDepth = 64, kConvWindow = 3;
double ConvFlops() {
  return 2.0 * kConvBatch * kConvSide * kConvSide * kConvDepth * kConvDepth * kConvWindow *
         kConvWindow;
}

void BM_SessionConv2D(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const Scope root = ops::NewRootScope().WithDevice("/gpu:0");
  const Variable x(
      root, "x",
      ops::RandomUniform(root, {kConvBatch, kConvSide, kConvSide, kConvDepth}, DT_FLOAT));
  const Variable w(
      root, "w",
      ops::RandomUniform(root, {kConvWindow, kConvWindow, kConvDepth, kConvDepth}, DT_FLOAT));
  const Output y = ops::Conv2D(root.WithOpName("conv"), x.value(), w.value(), {1, 1, 1, 1}, "SAME");
  const Output corner = ops::Slice(root.WithOpName("corner"), y, {0, 0, 0, 0}, {1, 1, 1, 1});
  const Operation init = GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  if (Failed(state, graph.status())) return;
  std::unique_ptr<Session> session = InitializedSession(state, *graph, init.name());
  if (session != nullptr) RunSteps(state, *session, corner.name(), ConvFlops());
}
BENCHMARK(BM_SessionConv2D)->UseRealTime()->Unit(benchmark::kMicrosecond);

// The same convolution by cuDNN on NHWC buffers with full float32 math
// (as the kernel asks for), its heuristics' first algorithm and workspace.
void BM_CudnnConvolutionForward(benchmark::State& state) {
  if (!HaveGpu(state)) return;
  const int n = kConvBatch, h = kConvSide, w = kConvSide, c = kConvDepth, r = kConvWindow;
  cudnnHandle_t handle = nullptr;
  cudaStream_t stream = nullptr;
  cudnnTensorDescriptor_t x_desc = nullptr, y_desc = nullptr;
  cudnnFilterDescriptor_t w_desc = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  float *x = nullptr, *filter = nullptr, *y = nullptr;
  void* workspace = nullptr;
  size_t workspace_bytes = 0;
  const size_t image_bytes = sizeof(float) * n * h * w * c;
  if (CudaFailed(state, cudaStreamCreate(&stream), "cudaStreamCreate") ||
      CudaFailed(state, cudaMalloc(&x, image_bytes), "cudaMalloc") ||
      CudaFailed(state, cudaMalloc(&y, image_bytes), "cudaMalloc") ||
      CudaFailed(state, cudaMalloc(&filter, sizeof(float) * r * r * c * c), "cudaMalloc") ||
      CudaFailed(state, cudaMemset(x, 0, image_bytes), "cudaMemset") ||
      CudaFailed(state, cudaMemset(filter, 0, sizeof(float) * r * r * c * c), "cudaMemset")) {
    return;
  }
  bool ok = cudnnCreate(&handle) == CUDNN_STATUS_SUCCESS &&
            cudnnSetStream(handle, stream) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateTensorDescriptor(&x_desc) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateTensorDescriptor(&y_desc) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateFilterDescriptor(&w_desc) == CUDNN_STATUS_SUCCESS &&
            cudnnCreateConvolutionDescriptor(&conv) == CUDNN_STATUS_SUCCESS &&
            cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, c, c, r, r) ==
                CUDNN_STATUS_SUCCESS &&
            cudnnSetConvolution2dDescriptor(conv, r / 2, r / 2, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) == CUDNN_STATUS_SUCCESS &&
            cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH) == CUDNN_STATUS_SUCCESS;
  cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
  int count = 0;
  ok = ok && cudnnGetConvolutionForwardAlgorithm_v7(handle, x_desc, w_desc, conv, y_desc,
                                                    CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &count,
                                                    perf) == CUDNN_STATUS_SUCCESS;
  int chosen = -1;
  for (int i = 0; ok && i < count && chosen < 0; ++i) {
    if (perf[i].status == CUDNN_STATUS_SUCCESS) chosen = i;
  }
  ok = ok && chosen >= 0 &&
       cudnnGetConvolutionForwardWorkspaceSize(handle, x_desc, w_desc, conv, y_desc,
                                               perf[chosen].algo,
                                               &workspace_bytes) == CUDNN_STATUS_SUCCESS &&
       (workspace_bytes == 0 || cudaMalloc(&workspace, workspace_bytes) == cudaSuccess);
  if (!ok) {
    state.SkipWithError("setting up cuDNN failed");
  } else {
    const float one = 1, zero = 0;
    float corner = 0;
    for (auto _ : state) {
      cudnnConvolutionForward(handle, &one, x_desc, x, w_desc, filter, conv, perf[chosen].algo,
                              workspace, workspace_bytes, &zero, y_desc, y);
      cudaMemcpyAsync(&corner, y, sizeof(float), cudaMemcpyDeviceToHost, stream);
      if (CudaFailed(state, cudaStreamSynchronize(stream), "cudnnConvolutionForward")) break;
    }
    benchmark::DoNotOptimize(corner);
    state.counters["TFLOPS"] =
        benchmark::Counter(ConvFlops() / 1e12, benchmark::Counter::kIsIterationInvariantRate);
  }
  cudnnDestroyConvolutionDescriptor(conv);
  cudnnDestroyFilterDescriptor(w_desc);
  cudnnDestroyTensorDescriptor(x_desc);
  cudnnDestroyTensorDescriptor(y_desc);
  if (handle != nullptr) cudnnDestroy(handle);
  cudaStreamDestroy(stream);
  cudaFree(workspace);
  cudaFree(x);
  cudaFree(y);
  cudaFree(filter);
}
BENCHMARK(BM_CudnnConvolutionForward)->UseRealTime()->Unit(benchmark::kMicrosecond);

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
