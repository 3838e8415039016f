// What a while loop's machinery costs: a WhileLoop counting to N (its body
// one Add) run by the Executor, fused or frame by frame, timed in the same
// benchmark iteration as straight chains of Identity nodes (executor_bench's
// baseline), of Adds and of Lesses, so that the cost of one loop iteration
// beyond its two kernels reads as a number of plain nodes (the loop on a
// cluster is control_flow_cluster_bench's).

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "benchmark/benchmark.h"
#include "benches/bench_clock.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "runtime/device/device.h"
#include "runtime/exec/executor.h"
#include "runtime/session.h"

namespace rill {
namespace {

// i = 0; while (i < n) i = i + one; with n fed and `one` a constant
// outside the loop, so that both enter it once as loop invariants and the
// only nodes that run per iteration are the loop's own and the Add.
struct Loop {
  Scope root = ops::NewRootScope();
  const Node* limit = nullptr;
  Output exit;
};

absl::StatusOr<std::unique_ptr<Loop>> MakeLoop(int parallel_iterations) {
  auto loop = std::make_unique<Loop>();
  const Scope& root = loop->root;
  const Output start = ops::Const(root.WithOpName("start"), Tensor::Scalar<int32_t>(0), DT_INT32);
  const Output one = ops::Const(root.WithOpName("one"), Tensor::Scalar<int32_t>(1), DT_INT32);
  const Output limit = ops::Placeholder(root.WithOpName("n"), DT_INT32);
  std::vector<Output> outputs;
  absl::Status status = ops::WhileLoop(
      root, {start},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], limit);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s, in[0], one));
        return s.status();
      },
      &outputs, {.frame_name = "count", .parallel_iterations = parallel_iterations});
  if (!status.ok()) return status;
  loop->limit = limit.node();
  loop->exit = outputs[0];
  return loop;
}

// x -> Identity -> ... (`length` Identity nodes) on an int32 scalar, or
// x -> Add(., one) -> ... for kAdd, or `length` Less(one, limit) nodes each
// after the one before (a control edge) for kLess: the loop's condition.
enum class ChainOp { kIdentity, kAdd, kLess };
struct Chain {
  Scope root = ops::NewRootScope();
  const Node* input = nullptr;
  const Node* output = nullptr;
};

std::unique_ptr<Chain> MakeChain(int length, ChainOp op) {
  auto chain = std::make_unique<Chain>();
  const ops::Placeholder x(chain->root.WithOpName("x"), DT_INT32);
  const Output one = ops::Const(chain->root, Tensor::Scalar<int32_t>(1), DT_INT32);
  const Output limit = ops::Const(chain->root, Tensor::Scalar<int32_t>(1 << 30), DT_INT32);
  Output last = x;
  for (int i = 0; i < length; ++i) {
    switch (op) {
      case ChainOp::kIdentity:
        last = ops::Identity(chain->root, last);
        break;
      case ChainOp::kAdd:
        last = ops::Add(chain->root, last, one);
        break;
      case ChainOp::kLess:
        last = ops::Less(chain->root.WithControlDependencies(last), one, limit);
        break;
    }
  }
  chain->input = x.node();
  chain->output = last.node();
  return chain;
}

// One loop iteration's kernels unrolled into a straight line, `units`
// times over: the loop's Merge, LoopCond, Switch, Identity and
// NextIteration become Identity nodes, its Less and Add stay, and the
// Switch waits on the condition by a control edge, as in the loop. This
// runs on the executor's fast path (no frames), so the loop's time beyond
// it is what frames and iterations cost.
constexpr int kUnrolledNodesPerUnit = 7;

std::unique_ptr<Chain> MakeUnrolled(int units) {
  auto chain = std::make_unique<Chain>();
  const Scope& root = chain->root;
  const ops::Placeholder x(root.WithOpName("x"), DT_INT32);
  const Output one = ops::Const(root, Tensor::Scalar<int32_t>(1), DT_INT32);
  const Output limit = ops::Const(root, Tensor::Scalar<int32_t>(1 << 30), DT_INT32);
  Output last = x;
  for (int i = 0; i < units; ++i) {
    const Output merge = ops::Identity(root, last);
    const Output loop_cond = ops::Identity(root, ops::Less(root, merge, limit));
    const Output switched = ops::Identity(root.WithControlDependencies(loop_cond), merge);
    const Output body = ops::Identity(root, switched);
    last = ops::Identity(root, ops::Add(root, body, one));
  }
  chain->input = x.node();
  chain->output = last.node();
  return chain;
}

// An executor for `graph` with one int32 feed and one fetch, run on the
// calling thread with a 2-thread pool for the nodes it hands off (as
// executor_bench's).
class StepRunner {
 public:
  absl::Status Init(const Graph* graph, const Node* feed, const Node* fetch, int fetch_index = 0,
                    bool fuse_loops = true) {
    Executor::Params params;
    params.fuse_loops = fuse_loops;
    params.graph = graph;
    params.feeds = {{feed, 0}};
    params.fetches = {{fetch, fetch_index}};
    params.device = &device_;
    params.inter_op_pool = &pool_;
    absl::StatusOr<std::unique_ptr<Executor>> executor = Executor::Create(params);
    if (!executor.ok()) return executor.status();
    executor_ = *std::move(executor);
    return absl::OkStatus();
  }

  // Runs one step with `fed` fed; returns the fetched int32.
  absl::StatusOr<int32_t> Run(int32_t fed, std::vector<NodeExecStats>* stats = nullptr) {
    const Tensor feed = Tensor::Scalar<int32_t>(fed);
    Executor::Args args;
    args.feeds = absl::MakeConstSpan(&feed, 1);
    args.stats = stats;
    if (absl::Status s = executor_->Run(args, &fetched_); !s.ok()) return s;
    if (fetched_[0].dtype() == DT_BOOL) return fetched_[0].scalar<bool>() ? 1 : 0;
    return fetched_[0].scalar<int32_t>();
  }

 private:
  CpuDevice device_{1};
  Eigen::ThreadPool pool_{2, /*allow_spinning=*/false};
  std::unique_ptr<Executor> executor_;
  std::vector<Tensor> fetched_;
};

constexpr int kChainLength = 1000;  // Fits in cache, as one loop iteration's state does.

// Args: iterations, parallel_iterations, abseil's Mutex deadlock detection
// (1: on, the default of Debian's abseil, which the library and the tests
// keep; 0: off, as the `rill` binary runs), fused (1: the loop runs as a
// fused loop, the default; 0: frame by frame, Params::fuse_loops off).
// Each benchmark iteration runs the loop once, then the Identity chain, the
// Add chain, the Less chain and the unrolled iterations iterations / 100
// times each (about 10 chain nodes of each per loop iteration), so that a
// slow spell on a shared machine falls on all.
//
// Counters (per loop iteration, or per chain node; each also as cpu_...,
// from the process's CPU time, steadier on a shared machine):
//   ns_per_iter: the loop;
//   ns_per_node: the Identity chain, the plain node;
//   add_ns_per_node: the Add chain, the body's Add outside a loop;
//   less_ns_per_node: the Less chain, the condition's Less outside a loop;
//   loop_nodes: (ns_per_iter - add_ns_per_node - less_ns_per_node) /
//     ns_per_node: the loop's machinery, beyond the two kernels every
//     iteration must run, in plain nodes (the goal: at most 2);
//   machinery_nodes: (ns_per_iter - ns_per_node) /
//     ns_per_node: what an iteration costs beyond its one body node, in
//     plain nodes;
//   unrolled_ns_per_iter: one iteration's kernels on the fast path
//     (MakeUnrolled);
//   frame_nodes: (ns_per_iter - unrolled_ns_per_iter) / ns_per_node: what
//     running them in a frame adds, in plain nodes;
//   kernels_per_iter: kernels run per iteration (from step stats): fused,
//     Less and Add; frame by frame, Merge, Less, LoopCond, Switch,
//     Identity, Add, NextIteration (the Exit also runs each iteration,
//     dead, and is not in the stats).
void BM_WhileLoop(benchmark::State& state) {
  const int iterations = static_cast<int>(state.range(0));
  const int parallel = static_cast<int>(state.range(1));
  absl::SetMutexDeadlockDetectionMode(state.range(2) != 0 ? absl::OnDeadlockCycle::kAbort
                                                          : absl::OnDeadlockCycle::kIgnore);
  const bool fused = state.range(3) != 0;
  absl::StatusOr<std::unique_ptr<Loop>> loop = MakeLoop(parallel);
  const std::unique_ptr<Chain> identity_chain = MakeChain(kChainLength, ChainOp::kIdentity);
  const std::unique_ptr<Chain> add_chain = MakeChain(kChainLength, ChainOp::kAdd);
  const std::unique_ptr<Chain> less_chain = MakeChain(kChainLength, ChainOp::kLess);
  const int units = kChainLength / kUnrolledNodesPerUnit;
  const std::unique_ptr<Chain> unrolled = MakeUnrolled(units);
  StepRunner loop_runner, identity_runner, add_runner, less_runner, unrolled_runner;
  absl::Status status = loop.status();
  if (status.ok()) {
    status = loop_runner.Init((*loop)->root.graph(), (*loop)->limit, (*loop)->exit.node(),
                              (*loop)->exit.index(), fused);
  }
  if (status.ok()) {
    status = identity_runner.Init(identity_chain->root.graph(), identity_chain->input,
                                  identity_chain->output);
  }
  if (status.ok()) status = add_runner.Init(add_chain->root.graph(), add_chain->input, add_chain->output);
  if (status.ok()) {
    status = less_runner.Init(less_chain->root.graph(), less_chain->input, less_chain->output);
  }
  if (status.ok()) {
    status = unrolled_runner.Init(unrolled->root.graph(), unrolled->input, unrolled->output);
  }
  // Untimed: check the answers, count the kernels an iteration runs, and
  // let the executors measure their kernels (a node measured quick runs
  // inline).
  constexpr int kCounted = 100;  // Iterations whose kernels are counted.
  std::vector<NodeExecStats> stats_none, stats_all;
  if (status.ok()) status = loop_runner.Run(0, &stats_none).status();
  if (status.ok()) status = loop_runner.Run(kCounted, &stats_all).status();
  if (status.ok()) {
    absl::StatusOr<int32_t> counted = loop_runner.Run(iterations);
    status = counted.ok() && *counted != iterations
                 ? absl::InternalError("the loop counted to " + std::to_string(*counted))
                 : counted.status();
  }
  if (status.ok()) status = identity_runner.Run(0).status();
  if (status.ok()) status = add_runner.Run(0).status();
  if (status.ok()) status = less_runner.Run(0).status();
  if (status.ok()) status = unrolled_runner.Run(0).status();
  if (!status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
    return;
  }

  const int chain_runs = std::max(1, iterations / 100);
  const auto run_chain = [&](StepRunner& runner) {
    for (int r = 0; r < chain_runs; ++r) {
      if (!runner.Run(r).ok()) return false;
    }
    return true;
  };
  Clock loop_clock, identity_clock, add_clock, less_clock, unrolled_clock;
  int64_t runs = 0;
  for (auto _ : state) {
    const bool ok = loop_clock.Time([&] { return loop_runner.Run(iterations).ok(); }) &&
                    identity_clock.Time([&] { return run_chain(identity_runner); }) &&
                    add_clock.Time([&] { return run_chain(add_runner); }) &&
                    less_clock.Time([&] { return run_chain(less_runner); }) &&
                    unrolled_clock.Time([&] { return run_chain(unrolled_runner); });
    if (!ok) {
      state.SkipWithError("a step failed");
      break;
    }
    ++runs;
  }
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kAbort);
  if (runs == 0) return;
  const double per_iter = 1.0 / (static_cast<double>(runs) * iterations);
  const double per_node = 1.0 / (static_cast<double>(runs) * chain_runs * kChainLength);
  const double iter_ns = loop_clock.ns * per_iter;
  const double iter_cpu_ns = loop_clock.cpu_ns * per_iter;
  const double node_ns = identity_clock.ns * per_node;
  const double node_cpu_ns = identity_clock.cpu_ns * per_node;
  state.counters["ns_per_iter"] = iter_ns;
  state.counters["cpu_ns_per_iter"] = iter_cpu_ns;
  state.counters["ns_per_node"] = node_ns;
  state.counters["cpu_ns_per_node"] = node_cpu_ns;
  state.counters["add_ns_per_node"] = add_clock.ns * per_node;
  state.counters["cpu_add_ns_per_node"] = add_clock.cpu_ns * per_node;
  state.counters["less_ns_per_node"] = less_clock.ns * per_node;
  state.counters["cpu_less_ns_per_node"] = less_clock.cpu_ns * per_node;
  state.counters["loop_nodes"] =
      (iter_ns - (add_clock.ns + less_clock.ns) * per_node) / node_ns;
  state.counters["cpu_loop_nodes"] =
      (iter_cpu_ns - (add_clock.cpu_ns + less_clock.cpu_ns) * per_node) / node_cpu_ns;
  const double per_unit = 1.0 / (static_cast<double>(runs) * chain_runs * units);
  const double unrolled_ns = unrolled_clock.ns * per_unit;
  const double unrolled_cpu_ns = unrolled_clock.cpu_ns * per_unit;
  state.counters["unrolled_ns_per_iter"] = unrolled_ns;
  state.counters["cpu_unrolled_ns_per_iter"] = unrolled_cpu_ns;
  state.counters["frame_nodes"] = (iter_ns - unrolled_ns) / node_ns;
  state.counters["cpu_frame_nodes"] = (iter_cpu_ns - unrolled_cpu_ns) / node_cpu_ns;
  state.counters["machinery_nodes"] = (iter_ns - node_ns) / node_ns;
  state.counters["cpu_machinery_nodes"] = (iter_cpu_ns - node_cpu_ns) / node_cpu_ns;
  state.counters["kernels_per_iter"] =
      static_cast<double>(stats_all.size() - stats_none.size()) / kCounted;
}
BENCHMARK(BM_WhileLoop)
    ->ArgNames({"iterations", "parallel", "deadlock_detection", "fused"})
    ->Args({100000, 10, 1, 1})
    ->Args({100000, 1, 1, 1})
    ->Args({1000, 10, 1, 1})
    ->Args({100000, 10, 0, 1})
    ->Args({100000, 1, 0, 1})
    ->Args({1000, 10, 0, 1})
    ->Args({100000, 10, 1, 0})
    ->Args({100000, 10, 0, 0})
    ->Unit(benchmark::kMillisecond);

// The same loop through Session::Run (n fed, the Exit fetched): the
// session adds its fixed cost per Run, nothing per iteration.
void BM_SessionWhileLoop(benchmark::State& state) {
  const int iterations = static_cast<int>(state.range(0));
  absl::StatusOr<std::unique_ptr<Loop>> loop = MakeLoop(10);
  absl::StatusOr<GraphDef> def = loop.ok() ? (*loop)->root.ToGraphDef() : loop.status();
  SessionOptions options;
  options.inter_op_threads = 2;
  options.intra_op_threads = 1;
  absl::StatusOr<std::unique_ptr<Session>> session =
      def.ok() ? NewSession(options, *def) : def.status();
  if (!session.ok()) {
    state.SkipWithError(std::string(session.status().message()).c_str());
    return;
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"n", Tensor::Scalar<int32_t>(iterations)}};
  const std::vector<std::string> fetches = {(*loop)->exit.name()};
  // The first Run builds the executor: timed apart, as executor_bench does.
  absl::StatusOr<std::vector<Tensor>> first = (*session)->Run(feeds, fetches);
  if (!first.ok() || (*first)[0].scalar<int32_t>() != iterations) {
    state.SkipWithError(first.ok() ? "wrong count" : std::string(first.status().message()).c_str());
    return;
  }
  Clock clock;
  int64_t runs = 0;
  for (auto _ : state) {
    if (!clock.Time([&] { return (*session)->Run(feeds, fetches).ok(); })) {
      state.SkipWithError("a step failed");
      return;
    }
    ++runs;
  }
  if (runs == 0) return;
  state.counters["ns_per_iter"] = clock.ns / (static_cast<double>(runs) * iterations);
  state.counters["cpu_ns_per_iter"] = clock.cpu_ns / (static_cast<double>(runs) * iterations);
}
BENCHMARK(BM_SessionWhileLoop)->Arg(100000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
