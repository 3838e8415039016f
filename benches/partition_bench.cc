// What splitting a step over two local devices costs: the same graphs
// through Session::Run placed on /cpu:0 alone and spread over /cpu:0 and
// /cpu:1 (with _Send/_Recv between them), beside memcpy of the tensor.
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "benchmark/benchmark.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"

namespace rill {
namespace {

std::unique_ptr<Session> TwoCpuSession(const Scope& root, benchmark::State& state) {
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  SessionOptions options;
  options.device_count["CPU"] = 2;
  options.inter_op_threads = 2;
  options.intra_op_threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> session =
      graph.ok() ? NewSession(options, *graph) : graph.status();
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return nullptr;
  }
  return *std::move(session);
}

void RunSteps(benchmark::State& state, Session& session,
              const std::vector<std::pair<std::string, Tensor>>& feeds,
              const std::vector<std::string>& fetches) {
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = session.Run(feeds, fetches);
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data());
  }
}

// x (fed on /cpu:0) -> Identity on `device` -> fetched. Arg 0: bytes.
void TransferStep(benchmark::State& state, const char* device) {
  const int64_t floats = state.range(0) / 4;
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x").WithDevice("/cpu:0"), DT_FLOAT);
  ops::Identity(root.WithOpName("y").WithDevice(device), x);
  std::unique_ptr<Session> session = TwoCpuSession(root, state);
  if (session == nullptr) return;
  Tensor value(DT_FLOAT, TensorShape({floats}));
  std::memset(value.data<float>(), 0, static_cast<size_t>(floats) * 4);
  RunSteps(state, *session, {{"x", value}}, {"y"});
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

void BM_TransferSameDevice(benchmark::State& state) { TransferStep(state, "/cpu:0"); }
void BM_TransferAcrossDevices(benchmark::State& state) { TransferStep(state, "/cpu:1"); }

// What a copy of the tensor would cost: the rendezvous hands the buffer
// over by reference instead.
void BM_MemcpyBaseline(benchmark::State& state) {
  std::vector<char> from(static_cast<size_t>(state.range(0)), 1);
  std::vector<char> to(from.size());
  for (auto _ : state) {
    std::memcpy(to.data(), from.data(), from.size());
    benchmark::DoNotOptimize(to.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(state.iterations() * state.range(0));
}

// A chain of Neg nodes; `alternate` puts every other one on /cpu:1, so
// that each link crosses devices. Arg 0: chain length.
void ChainStep(benchmark::State& state, bool alternate) {
  const Scope root = ops::NewRootScope();
  Output value = ops::Placeholder(root.WithOpName("x").WithDevice("/cpu:0"), DT_FLOAT);
  for (int64_t i = 0; i < state.range(0); ++i) {
    const char* device = alternate && i % 2 == 0 ? "/cpu:1" : "/cpu:0";
    value = ops::Neg(root.WithOpName(absl::StrFormat("n%d", i)).WithDevice(device), value);
  }
  std::unique_ptr<Session> session = TwoCpuSession(root, state);
  if (session == nullptr) return;
  RunSteps(state, *session, {{"x", Tensor::Scalar<float>(1)}}, {value.name()});
}

void BM_ChainOneDevice(benchmark::State& state) { ChainStep(state, false); }
void BM_ChainAlternatingDevices(benchmark::State& state) { ChainStep(state, true); }

// A linear-regression training step (y = w x + b, 256 points, gradient
// descent) with the variables on /cpu:1 and the rest on /cpu:0, as the
// replica device setter splits a graph between a ps and a worker, or all
// on /cpu:0.
void RegressionStep(benchmark::State& state, const char* variables_device) {
  const Scope root = ops::NewRootScope();
  const Scope worker = root.WithDevice("/cpu:0");
  const Scope ps = root.WithDevice(variables_device);
  const Output x = ops::Placeholder(worker.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(worker.WithOpName("y"), DT_FLOAT);
  const Variable w(ps, "w", Tensor::FromVector<float>({0.5f}, TensorShape({1})));
  const Variable b(ps, "b", Tensor::FromVector<float>({0.0f}, TensorShape({1})));
  const Output error = ops::Sub(worker, ops::Add(worker, ops::Mul(worker, x, w), b), y);
  const Output loss = ops::Mean(worker, ops::Square(worker, error), 0);
  GradientDescentOptimizer optimizer(0.01);
  if (!optimizer.Minimize(worker, loss, {w, b}, nullptr, "train").ok()) {
    state.SkipWithError("building the model failed");
    return;
  }
  GlobalVariablesInitializer(root);
  std::unique_ptr<Session> session = TwoCpuSession(root, state);
  if (session == nullptr || !session->Run({}, {}, {"init"}).ok()) return;
  Tensor xs(DT_FLOAT, TensorShape({256}));
  Tensor ys(DT_FLOAT, TensorShape({256}));
  for (int i = 0; i < 256; ++i) {
    xs.data<float>()[i] = static_cast<float>(i) / 128 - 1;
    ys.data<float>()[i] = 2 * xs.data<float>()[i] + 10;
  }
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = session->Run({{"x", xs}, {"y", ys}}, {}, {"train"});
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
  }
}

void BM_RegressionStepOneDevice(benchmark::State& state) { RegressionStep(state, "/cpu:0"); }
void BM_RegressionStepVariablesApart(benchmark::State& state) { RegressionStep(state, "/cpu:1"); }

BENCHMARK(BM_TransferSameDevice)->Arg(4)->Arg(64 << 10)->Arg(4 << 20)->UseRealTime();
BENCHMARK(BM_TransferAcrossDevices)->Arg(4)->Arg(64 << 10)->Arg(4 << 20)->UseRealTime();
BENCHMARK(BM_MemcpyBaseline)->Arg(4)->Arg(64 << 10)->Arg(4 << 20)->UseRealTime();
BENCHMARK(BM_ChainOneDevice)->Arg(16)->UseRealTime();
BENCHMARK(BM_ChainAlternatingDevices)->Arg(16)->UseRealTime();
BENCHMARK(BM_RegressionStepOneDevice)->UseRealTime();
BENCHMARK(BM_RegressionStepVariablesApart)->UseRealTime();

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
