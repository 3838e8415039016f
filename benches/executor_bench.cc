// The executor's overhead per node: a chain of cheap Identity nodes run by
// the Executor and by a Session, beside the same kernels' Compute called in
// a plain loop (no scheduling), so that ns_per_node can be compared.
#include <time.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "graph/tensor.h"
#include "kernels/registry.h"
#include "ops/ops.h"
#include "runtime/device/device.h"
#include "runtime/exec/executor.h"
#include "runtime/session.h"

namespace rill {
namespace {

struct Chain {
  Scope root = ops::NewRootScope();
  const Node* input = nullptr;
  const Node* output = nullptr;
};

// x -> Identity -> Identity -> ... (`length` Identity nodes).
std::unique_ptr<Chain> MakeChain(int length) {
  auto chain = std::make_unique<Chain>();
  const ops::Placeholder x(chain->root.WithOpName("x"), DT_FLOAT);
  Output last = x;
  for (int i = 0; i < length; ++i) last = ops::Identity(chain->root, last);
  chain->input = x.node();
  chain->output = last.node();
  return chain;
}

Tensor Feed() { return Tensor::FromVector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {8}); }

double ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

// Runs `step` until the benchmark stops and reports the mean time per node:
// ns_per_node in wall time, cpu_ns_per_node in the calling thread's CPU
// time (which runs every cheap node, and does not count time lost to other
// processes on a busy machine).
template <typename Step>
void TimePerNode(benchmark::State& state, int nodes, Step step) {
  int64_t runs = 0;
  const auto start = std::chrono::steady_clock::now();
  const double start_cpu = ThreadCpuNanos();
  for (auto _ : state) {
    if (!step()) return;
    ++runs;
  }
  const double cpu_ns = ThreadCpuNanos() - start_cpu;
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  const double per = runs > 0 ? 1.0 / static_cast<double>(runs * nodes) : 0;
  state.counters["ns_per_node"] = ns * per;
  state.counters["cpu_ns_per_node"] = cpu_ns * per;
}

void BM_ExecutorChain(benchmark::State& state) {
  const int length = static_cast<int>(state.range(0));
  const std::unique_ptr<Chain> chain = MakeChain(length);
  CpuDevice device(1);
  Eigen::ThreadPool pool(2, /*allow_spinning=*/false);
  Executor::Params params;
  params.graph = chain->root.graph();
  params.feeds = {{chain->input, 0}};
  params.fetches = {{chain->output, 0}};
  params.device = &device;
  params.inter_op_pool = &pool;
  absl::StatusOr<std::unique_ptr<Executor>> executor = Executor::Create(params);
  if (!executor.ok()) {
    state.SkipWithError(std::string(executor.status().message()).c_str());
    return;
  }
  const Tensor feed = Feed();
  Executor::Args args;
  args.feeds = absl::MakeConstSpan(&feed, 1);
  std::vector<Tensor> fetched;
  TimePerNode(state, length, [&] {
    if (absl::Status s = (*executor)->Run(args, &fetched); !s.ok()) {
      state.SkipWithError(std::string(s.message()).c_str());
      return false;
    }
    return true;
  });
}
BENCHMARK(BM_ExecutorChain)->Arg(10000)->Arg(1000)->Unit(benchmark::kMicrosecond);

// The same Identity kernels, each computed in turn with the previous output
// as its input: the cost of the kernels alone.
void BM_KernelChainBaseline(benchmark::State& state) {
  const int length = static_cast<int>(state.range(0));
  const std::unique_ptr<Chain> chain = MakeChain(length);
  CpuDevice device(1);
  std::vector<std::unique_ptr<OpKernel>> kernels;
  std::vector<const Node*> nodes;
  for (const Node* node : chain->root.graph()->nodes()) {
    if (node == chain->input) continue;
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel =
        StandardKernels().CreateKernel(node->def(), node->op_def(), node->signature(), kDeviceCpu);
    if (!kernel.ok()) {
      state.SkipWithError(std::string(kernel.status().message()).c_str());
      return;
    }
    kernels.push_back(*std::move(kernel));
    nodes.push_back(node);
  }
  const DataType output_type = DT_FLOAT;
  TensorValue value;
  TensorValue output;
  TimePerNode(state, length, [&] {
    value.tensor = Feed();
    for (size_t i = 0; i < kernels.size(); ++i) {
      KernelContext::Frame frame;
      frame.node = &nodes[i]->def();
      frame.inputs = absl::MakeConstSpan(&value, 1);
      frame.outputs = absl::MakeSpan(&output, 1);
      frame.output_types = absl::MakeConstSpan(&output_type, 1);
      frame.eigen_cpu = device.eigen_cpu();
      frame.allocator = device.allocator();
      KernelContext ctx(frame);
      if (absl::Status s = kernels[i]->Compute(ctx); !s.ok()) {
        state.SkipWithError(std::string(s.message()).c_str());
        return false;
      }
      value.tensor = std::move(output.tensor);
    }
    benchmark::DoNotOptimize(value.tensor.raw_data());
    return true;
  });
}
BENCHMARK(BM_KernelChainBaseline)->Arg(10000)->Arg(1000)->Unit(benchmark::kMicrosecond);

// The chain through Session::Run: name checks, the executor cache lookup
// and feed/fetch handling on top of the executor.
void BM_SessionChain(benchmark::State& state) {
  const int length = static_cast<int>(state.range(0));
  const std::unique_ptr<Chain> chain = MakeChain(length);
  absl::StatusOr<GraphDef> def = chain->root.ToGraphDef();
  SessionOptions options;
  options.inter_op_threads = 2;
  options.intra_op_threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> session =
      def.ok() ? NewSession(options, *def) : def.status();
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Feed()}};
  const std::vector<std::string> fetches = {chain->output->name()};
  // The first Run partitions the graph and builds its executor: a cost of
  // the session's first step, timed apart from the steps that follow (as
  // BM_ExecutorChain creates its executor before timing).
  if (absl::StatusOr<std::vector<Tensor>> first = (*session)->Run(feeds, fetches); !first.ok()) {
    state.SkipWithError(std::string(first.status().message()).c_str());
    return;
  }
  TimePerNode(state, length, [&] {
    absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(feeds, fetches);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return false;
    }
    return true;
  });
}
BENCHMARK(BM_SessionChain)->Arg(10000)->Arg(10)->Unit(benchmark::kMicrosecond);

// The same with abseil's Mutex deadlock detection off, as the `rill`
// binary runs: Debian's abseil is built with it on, and it updates a lock
// graph on every Mutex::Lock. Afterwards it is set back to kAbort, that
// build's default.
void BM_SessionChainNoDeadlockDetection(benchmark::State& state) {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  BM_SessionChain(state);
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
}
BENCHMARK(BM_SessionChainNoDeadlockDetection)->Arg(10)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
