// CPU kernels run directly (no executor) beside the raw library call they
// are built on, on the same 2-thread intra-op pool, so that the cost of the
// kernel layer (allocation, dispatch, checks) and the choice of library can
// be read off one run. How to run it and the latest figures:
// benches/README.md.
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "graph/allocator.h"
#include "graph/node_def_util.h"
#include "graph/tensor.h"
#include "kernels/framework/cpu_threads.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/registry.h"
#include "ops/registry.h"

#ifdef RILL_HAVE_DNNL
#include <omp.h>

#include "oneapi/dnnl/dnnl.h"
#include "oneapi/dnnl/dnnl.hpp"
#endif

namespace rill {
namespace {

using Index = Eigen::DenseIndex;
using Attrs = std::vector<std::pair<std::string, AttrValue>>;

constexpr int kThreads = 2;

const CpuThreads& Threads() {
  static const CpuThreads* const threads = new CpuThreads(kThreads);
  return *threads;
}

// Reuses freed buffers of the same size, as the session's caching
// allocator does, so that kernels are timed in the steady state of a
// training loop: fresh pages from the system cost far more than the
// arithmetic on them (benches/README.md).
class RecyclingAllocator final : public Allocator {
 public:
  std::string Name() const override { return "recycling"; }

  void* AllocateRaw(size_t alignment, size_t bytes) override {
    {
      absl::MutexLock lock(&mu_);
      if (auto it = free_.find(bytes); it != free_.end()) {
        void* ptr = it->second;
        free_.erase(it);
        return ptr;
      }
    }
    return CpuAllocator()->AllocateRaw(alignment, bytes);
  }

  void DeallocateRaw(void* ptr, size_t bytes) override {
    if (ptr == nullptr) return;
    absl::MutexLock lock(&mu_);
    free_.emplace(bytes, ptr);
  }

 private:
  absl::Mutex mu_;
  std::multimap<size_t, void*> free_ ABSL_GUARDED_BY(mu_);
};

Allocator* KernelAllocator() {
  static Allocator* const allocator = new RecyclingAllocator();
  return allocator;
}

Tensor Filled(const TensorShape& shape, float value) {
  Tensor t(DT_FLOAT, shape);
  t.flat<float>().setConstant(value);
  return t;
}

void SetGflops(benchmark::State& state, double flops_per_run) {
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops_per_run * state.iterations() / 1e9, benchmark::Counter::kIsRate);
}

// A kernel for `op` with float attr T and `attrs`, built as graph import
// would.
std::unique_ptr<OpKernel> MakeFloatKernel(const std::string& op, const Attrs& attrs, NodeDef* node,
                                          NodeSignature* signature) {
  node->set_name(op);
  node->set_op(op);
  (*node->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  for (const auto& [name, value] : attrs) (*node->mutable_attr())[name] = value;
  const OpDef& op_def = StandardOps().Find(op)->op_def;
  AddDefaultsToNodeDef(op_def, node);
  *signature = *ComputeNodeSignature(*node, op_def);
  return *StandardKernels().CreateKernel(*node, op_def, *signature, kDeviceCpu);
}

// Runs the kernel as the executor would: a fresh context and output per
// run, on the intra-op pool.
void RunKernel(benchmark::State& state, const std::string& op, const Attrs& attrs,
               const std::vector<Tensor>& inputs) {
  NodeDef node;
  NodeSignature signature;
  const std::unique_ptr<OpKernel> kernel = MakeFloatKernel(op, attrs, &node, &signature);
  for (auto _ : state) {
    KernelContext::Params params;
    params.node = &node;
    for (const Tensor& t : inputs) params.inputs.push_back(TensorValue{t});
    params.output_types = signature.output_types;
    params.eigen_cpu = &Threads().device();
    params.allocator = KernelAllocator();
    KernelContext ctx(std::move(params));
    if (absl::Status s = kernel->Compute(ctx); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      break;
    }
    benchmark::DoNotOptimize(ctx.output(0).tensor.raw_data());
  }
}

// op(a) [m, k] times op(b) [k, n], where op transposes a stored [k, m] a
// when ta, and a stored [n, k] b when tb.
struct Gemm {
  int64_t m, k, n;
  bool ta, tb;
  double flops() const { return 2.0 * m * n * k; }
  Tensor a() const { return Filled(ta ? TensorShape{k, m} : TensorShape{m, k}, 1.f); }
  Tensor b() const { return Filled(tb ? TensorShape{n, k} : TensorShape{k, n}, 0.5f); }
};

Gemm SquareGemm(const benchmark::State& state) {
  const int64_t n = state.range(0);
  return {n, n, n, false, false};
}

Gemm MlpGemm(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), state.range(3) != 0, state.range(4) != 0};
}

void RunMatMul(benchmark::State& state, const Gemm& g) {
  RunKernel(state, "MatMul", {{"transpose_a", MakeAttr(g.ta)}, {"transpose_b", MakeAttr(g.tb)}},
            {g.a(), g.b()});
  SetGflops(state, g.flops());
}

void RunEigenGemm(benchmark::State& state, const Gemm& g) {
  const Tensor a = g.a(), b = g.b();
  Tensor out(DT_FLOAT, {g.m, g.n});
  const Eigen::array<Eigen::IndexPair<Index>, 1> dims = {
      Eigen::IndexPair<Index>(g.ta ? 0 : 1, g.tb ? 1 : 0)};
  for (auto _ : state) {
    out.matrix<float>().device(Threads().device()) =
        a.matrix<float>().contract(b.matrix<float>(), dims);
    benchmark::DoNotOptimize(out.raw_data());
  }
  SetGflops(state, g.flops());
}

void BM_MatMul(benchmark::State& state) { RunMatMul(state, SquareGemm(state)); }
void BM_EigenGemmBaseline(benchmark::State& state) { RunEigenGemm(state, SquareGemm(state)); }
void BM_MatMulMlp(benchmark::State& state) { RunMatMul(state, MlpGemm(state)); }
void BM_EigenGemmMlpBaseline(benchmark::State& state) { RunEigenGemm(state, MlpGemm(state)); }

using Benchmark = benchmark::internal::Benchmark;

// The products of one training step of a 784-128-10 MLP at batch 64:
// forward, weight gradients (transpose_a) and input gradients (transpose_b).
const std::vector<std::vector<int64_t>>& MlpShapes() {
  static const auto* const shapes = new std::vector<std::vector<int64_t>>{
      {64, 784, 128, 0, 0}, {64, 128, 10, 0, 0},  {784, 64, 128, 1, 0},
      {128, 64, 10, 1, 0},  {64, 128, 784, 0, 1}, {64, 10, 128, 0, 1}};
  return *shapes;
}

// Square products of 256 to 2048, or (MlpSizes) the MLP products; each
// once per value of `extra` appended as an argument named `name` (say, the
// thread counts to try).
void GemmSizes(Benchmark* b, const std::vector<int64_t>& extra = {}, const char* name = "") {
  for (int64_t n : {256, 512, 1024, 2048}) {
    if (extra.empty()) b->Arg(n);
    for (int64_t e : extra) b->Args({n, e});
  }
  if (!extra.empty()) b->ArgNames({"", name});
  b->UseRealTime();
}

void MlpSizes(Benchmark* b, const std::vector<int64_t>& extra = {}, const char* name = "") {
  std::vector<std::string> names = {"m", "k", "n", "ta", "tb"};
  if (!extra.empty()) names.push_back(name);
  b->ArgNames(names);
  for (const std::vector<int64_t>& shape : MlpShapes()) {
    if (extra.empty()) b->Args(shape);
    for (int64_t e : extra) {
      std::vector<int64_t> args = shape;
      args.push_back(e);
      b->Args(args);
    }
  }
  b->UseRealTime();
}

BENCHMARK(BM_MatMul)->Apply([](Benchmark* b) { GemmSizes(b); });
BENCHMARK(BM_EigenGemmBaseline)->Apply([](Benchmark* b) { GemmSizes(b); });
BENCHMARK(BM_MatMulMlp)->Apply([](Benchmark* b) { MlpSizes(b); });
BENCHMARK(BM_EigenGemmMlpBaseline)->Apply([](Benchmark* b) { MlpSizes(b); });

void BM_AddKernel(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunKernel(state, "AddV2", {}, {Filled({n}, 1.f), Filled({n}, 2.f)});
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_AddEigenBaseline(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = Filled({n}, 1.f), b = Filled({n}, 2.f);
  Tensor out(DT_FLOAT, {n});
  for (auto _ : state) {
    out.flat<float>().device(Threads().device()) = a.flat<float>() + b.flat<float>();
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_AddScalarKernel(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunKernel(state, "AddV2", {}, {Filled({n}, 1.f), Filled({}, 2.f)});
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_AddScalarEigenBaseline(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor a = Filled({n}, 1.f);
  Tensor out(DT_FLOAT, {n});
  for (auto _ : state) {
    out.flat<float>().device(Threads().device()) = a.flat<float>() + 2.f;
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

// [rows, cols] + [cols]: a bias row added to every row.
void BM_AddBroadcastKernel(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  RunKernel(state, "AddV2", {}, {Filled({rows, cols}, 1.f), Filled({cols}, 2.f)});
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

void BM_AddBroadcastEigenBaseline(benchmark::State& state) {
  const int64_t rows = state.range(0), cols = state.range(1);
  const Tensor a = Filled({rows, cols}, 1.f), b = Filled({cols}, 2.f);
  Tensor out(DT_FLOAT, {rows, cols});
  const Eigen::array<Index, 2> row = {1, cols};
  const Eigen::array<Index, 2> down = {rows, 1};
  for (auto _ : state) {
    out.matrix<float>().device(Threads().device()) =
        a.matrix<float>() + b.vec<float>().reshape(row).broadcast(down);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * rows * cols);
}

void BM_ReluKernel(benchmark::State& state) {
  const int64_t n = state.range(0);
  RunKernel(state, "Relu", {}, {Filled({n}, -0.5f)});
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_ReluEigenBaseline(benchmark::State& state) {
  const int64_t n = state.range(0);
  const Tensor in = Filled({n}, -0.5f);
  Tensor out(DT_FLOAT, {n});
  for (auto _ : state) {
    out.flat<float>().device(Threads().device()) = in.flat<float>().cwiseMax(0.f);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * n);
}

void BM_SoftmaxKernel(benchmark::State& state) {
  const int64_t rows = state.range(0), classes = state.range(1);
  RunKernel(state, "Softmax", {}, {Filled({rows, classes}, 0.25f)});
  state.SetItemsProcessed(state.iterations() * rows * classes);
}

// exp(x - max) / sum(exp(x - max)) by rows, as TensorFlow writes it: the
// row reductions are evaluated once (.eval()), not once per element.
void BM_SoftmaxEigenBaseline(benchmark::State& state) {
  const int64_t rows = state.range(0), classes = state.range(1);
  const Tensor in = Filled({rows, classes}, 0.25f);
  Tensor out(DT_FLOAT, {rows, classes});
  const Eigen::array<Index, 1> along_class = {1};
  const Eigen::array<Index, 2> column = {rows, 1};
  const Eigen::array<Index, 2> across = {1, classes};
  const auto& d = Threads().device();
  for (auto _ : state) {
    auto x = in.matrix<float>();
    auto o = out.matrix<float>();
    o.device(d) = (x - x.maximum(along_class).eval().reshape(column).broadcast(across)).exp();
    o.device(d) = o * o.sum(along_class).inverse().eval().reshape(column).broadcast(across);
    benchmark::DoNotOptimize(out.raw_data());
  }
  state.SetItemsProcessed(state.iterations() * rows * classes);
}

BENCHMARK(BM_AddKernel)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_AddEigenBaseline)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_AddScalarKernel)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_AddScalarEigenBaseline)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_AddBroadcastKernel)->Args({1024, 1024})->UseRealTime();
BENCHMARK(BM_AddBroadcastEigenBaseline)->Args({1024, 1024})->UseRealTime();
BENCHMARK(BM_ReluKernel)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_ReluEigenBaseline)->Arg(1 << 20)->UseRealTime();
BENCHMARK(BM_SoftmaxKernel)->Args({64, 10})->Args({1024, 1000})->UseRealTime();
BENCHMARK(BM_SoftmaxEigenBaseline)->Args({64, 10})->Args({1024, 1000})->UseRealTime();

// A SAME, stride-1 convolution of [batch, size, size, depth] images with a
// [window, window, depth, out_depth] filter.
struct Conv {
  int64_t batch, size, depth, window, out_depth;
  double flops() const { return 2.0 * batch * size * size * window * window * depth * out_depth; }
};

Conv ConvOf(const benchmark::State& state) {
  return {state.range(0), state.range(1), state.range(2), state.range(3), state.range(4)};
}

void BM_Conv2DKernel(benchmark::State& state) {
  const Conv c = ConvOf(state);
  RunKernel(
      state, "Conv2D",
      {{"strides", MakeAttr(std::vector<int64_t>{1, 1, 1, 1})}, {"padding", MakeAttr("SAME")}},
      {Filled({c.batch, c.size, c.size, c.depth}, 1.f),
       Filled({c.window, c.window, c.depth, c.out_depth}, 0.5f)});
  SetGflops(state, c.flops());
}

// MNIST-style convolutions (5x5 windows at 28x28 and 14x14) and a 3x3
// ResNet block at 56x56.
void ConvSizes(Benchmark* b, const std::vector<int64_t>& extra = {}, const char* name = "") {
  std::vector<std::string> names = {"batch", "size", "depth", "window", "out"};
  if (!extra.empty()) names.push_back(name);
  b->ArgNames(names);
  for (std::vector<int64_t> shape : std::vector<std::vector<int64_t>>{
           {64, 28, 1, 5, 32}, {64, 14, 32, 5, 64}, {8, 56, 64, 3, 64}}) {
    if (extra.empty()) b->Args(shape);
    for (int64_t e : extra) {
      shape.push_back(e);
      b->Args(shape);
      shape.pop_back();
    }
  }
  b->UseRealTime();
}

BENCHMARK(BM_Conv2DKernel)->Apply([](Benchmark* b) { ConvSizes(b); });

#ifdef RILL_HAVE_DNNL

// oneDNN's own GEMM with its own OpenMP threads (omp of them), as a
// program calling it directly would run it.
void RunDnnlSgemm(benchmark::State& state, const Gemm& g, int omp_threads) {
  omp_set_num_threads(omp_threads);
  const Tensor a = g.a(), b = g.b();
  Tensor out(DT_FLOAT, {g.m, g.n});
  for (auto _ : state) {
    const dnnl_status_t s = dnnl_sgemm(g.ta ? 'T' : 'N', g.tb ? 'T' : 'N', g.m, g.n, g.k, 1.f,
                                       a.data<float>(), g.ta ? g.m : g.k, b.data<float>(),
                                       g.tb ? g.k : g.n, 0.f, out.data<float>(), g.n);
    if (s != dnnl_success) {
      state.SkipWithError("dnnl_sgemm failed");
      break;
    }
    benchmark::DoNotOptimize(out.raw_data());
  }
  SetGflops(state, g.flops());
}

void BM_DnnlSgemm(benchmark::State& state) {
  RunDnnlSgemm(state, SquareGemm(state), static_cast<int>(state.range(1)));
}
void BM_DnnlSgemmMlp(benchmark::State& state) {
  RunDnnlSgemm(state, MlpGemm(state), static_cast<int>(state.range(5)));
}

// oneDNN's forward convolution on NHWC data with an HWIO filter. The
// filter is reordered to the layout oneDNN picks on every run, as it would
// be in training, where the filter changes every step.
void BM_DnnlConv2D(benchmark::State& state) {
  const Conv c = ConvOf(state);
  omp_set_num_threads(static_cast<int>(state.range(5)));
  using dnnl::memory;
  using Tag = memory::format_tag;
  const memory::data_type f32 = memory::data_type::f32;
  const Tensor input = Filled({c.batch, c.size, c.size, c.depth}, 1.f);
  const Tensor filter = Filled({c.window, c.window, c.depth, c.out_depth}, 0.5f);
  Tensor output(DT_FLOAT, {c.batch, c.size, c.size, c.out_depth});
  try {
    dnnl::engine engine(dnnl::engine::kind::cpu, 0);
    dnnl::stream stream(engine);
    const memory::desc src({c.batch, c.depth, c.size, c.size}, f32, Tag::nhwc);
    const memory::desc user_weights({c.out_depth, c.depth, c.window, c.window}, f32, Tag::hwio);
    const memory::desc any_weights({c.out_depth, c.depth, c.window, c.window}, f32, Tag::any);
    const memory::desc dst({c.batch, c.out_depth, c.size, c.size}, f32, Tag::nhwc);
    const memory::dim pad_before = (c.window - 1) / 2, pad_after = c.window / 2;
    const dnnl::convolution_forward::primitive_desc pd(
        dnnl::convolution_forward::desc(dnnl::prop_kind::forward_training,
                                        dnnl::algorithm::convolution_direct, src, any_weights, dst,
                                        {1, 1}, {pad_before, pad_before}, {pad_after, pad_after}),
        engine);
    memory src_mem(src, engine, const_cast<float*>(input.data<float>()));
    memory user_weights_mem(user_weights, engine, const_cast<float*>(filter.data<float>()));
    memory weights_mem(pd.weights_desc(), engine);
    memory dst_mem(dst, engine, output.data<float>());
    const dnnl::convolution_forward conv(pd);
    const dnnl::reorder reorder(user_weights_mem, weights_mem);
    for (auto _ : state) {
      reorder.execute(stream, user_weights_mem, weights_mem);
      conv.execute(
          stream,
          {{DNNL_ARG_SRC, src_mem}, {DNNL_ARG_WEIGHTS, weights_mem}, {DNNL_ARG_DST, dst_mem}});
      stream.wait();
      benchmark::DoNotOptimize(output.raw_data());
    }
    state.SetLabel(pd.impl_info_str());
  } catch (const dnnl::error& e) {
    state.SkipWithError(e.what());
  }
  SetGflops(state, c.flops());
}

BENCHMARK(BM_DnnlSgemm)->Apply([](Benchmark* b) { GemmSizes(b, {1, 2}, "omp"); });
BENCHMARK(BM_DnnlSgemmMlp)->Apply([](Benchmark* b) { MlpSizes(b, {1, 2}, "omp"); });
BENCHMARK(BM_DnnlConv2D)->Apply([](Benchmark* b) { ConvSizes(b, {1, 2}, "omp"); });

#endif  // RILL_HAVE_DNNL

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
