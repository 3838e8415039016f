// What a step costs on a cluster: the same small graph through a local
// session and through a session on a one-task cluster (client and server
// in this process, over ZeroMQ), beside one bare RPC round trip to the
// same server and one that carries the step's feed and fetch. A step that
// needs no network should cost a local step plus one round trip.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "benchmark/benchmark.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "transport/rpc.h"

namespace rill {
namespace {

// y = x * w + 1 with w on `ps` and the rest on `worker`.
GraphDef SmallGraph(const std::string& ps, const std::string& worker) {
  const Scope root = ops::NewRootScope();
  const Scope on_worker = root.WithDevice(worker);
  const Output x = ops::Placeholder(on_worker.WithOpName("x"), DT_FLOAT);
  const Variable w(root.WithDevice(ps), "w", Tensor::FromVector<float>({2}, TensorShape({1})));
  ops::Add(on_worker.WithOpName("y"), ops::Mul(on_worker, x, w),
           ops::Const(on_worker, Tensor::Scalar<float>(1), DT_FLOAT));
  GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  return graph.ok() ? *graph : GraphDef();
}

// y = sum(a x a) for a 192 x 192 variable `a`: the product (about 70 us here)
// is measured long, so the worker runs it on its pool and the step's
// reply leaves from a pool thread rather than the socket thread.
GraphDef MatMulGraph() {
  const Scope root = ops::NewRootScope();
  Tensor a(DT_FLOAT, TensorShape({192, 192}));
  for (int64_t i = 0; i < a.NumElements(); ++i) a.data<float>()[i] = 1.0f / (1 + i % 7);
  const Variable var(root, "a", a);
  ops::Sum(root.WithOpName("y"), ops::MatMul(root, var, var),
           ops::Const(root, Tensor::FromVector<int32_t>({0, 1}, TensorShape({2})), DT_INT32));
  GlobalVariablesInitializer(root);
  absl::StatusOr<GraphDef> graph = root.ToGraphDef();
  return graph.ok() ? *graph : GraphDef();
}

// Runs "init" once, then "y" each iteration; SmallGraph's x is fed (4
// floats) when the graph has it.
void RunSteps(benchmark::State& state, Session* session, bool feed_x = true) {
  if (session == nullptr || !session->Run({}, {}, {"init"}).ok()) {
    state.SkipWithError("setting up the session failed");
    return;
  }
  std::vector<std::pair<std::string, Tensor>> feeds;
  if (feed_x) feeds.emplace_back("x", Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4})));
  for (auto _ : state) {
    absl::StatusOr<std::vector<Tensor>> out = session->Run(feeds, {"y"});
    if (!out.ok()) {
      state.SkipWithError(std::string(out.status().message()).c_str());
      return;
    }
    benchmark::DoNotOptimize(out->data());
  }
}

std::unique_ptr<Session> Connect(const std::string& target, const GraphDef& graph) {
  SessionOptions options;
  options.target = target;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, graph);
  return session.ok() ? *std::move(session) : nullptr;
}

void BM_LocalSessionStep(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      NewSession(SessionOptions(), SmallGraph("", ""));
  RunSteps(state, session.ok() ? session->get() : nullptr);
}

void BM_LocalSessionMatMulStep(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), MatMulGraph());
  RunSteps(state, session.ok() ? session->get() : nullptr, /*feed_x=*/false);
}

void BM_ClusterMatMulStepOneTask(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::CreateLocal(LogSink::Discard());
  if (!server.ok()) return state.SkipWithError("no server");
  std::unique_ptr<Session> session = Connect((*server)->target(), MatMulGraph());
  RunSteps(state, session.get(), /*feed_x=*/false);
}

void BM_ClusterStepOneTask(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::CreateLocal(LogSink::Discard());
  if (!server.ok()) return state.SkipWithError("no server");
  std::unique_ptr<Session> session = Connect((*server)->target(), SmallGraph("", ""));
  RunSteps(state, session.get());
}

// w on /job:ps/task:0, the rest on /job:worker/task:0, whose master the
// client calls: each step the master starts the ps's part over RPC and the
// ps pushes w to the worker.
void BM_ClusterStepTwoTasks(benchmark::State& state) {
  absl::StatusOr<std::vector<std::unique_ptr<Server>>> servers =
      Server::CreateLocalCluster({{"worker", 1}, {"ps", 1}}, LogSink::Discard());
  if (!servers.ok()) return state.SkipWithError("no cluster");
  std::unique_ptr<Session> session =
      Connect((*servers)[0]->target(), SmallGraph("/job:ps/task:0", "/job:worker/task:0"));
  RunSteps(state, session.get());
}

void BM_RpcRoundTrip(benchmark::State& state) {
  absl::StatusOr<std::unique_ptr<Server>> server = Server::CreateLocal(LogSink::Discard());
  if (!server.ok()) return state.SkipWithError("no server");
  RpcClientOptions options;
  options.address = (*server)->target().substr(6);
  absl::StatusOr<std::unique_ptr<RpcClient>> client = RpcClient::Connect(options);
  if (!client.ok()) return state.SkipWithError("no client");
  for (auto _ : state) {
    if (!(*client)->CallSync("_ping", RpcMessage(), absl::Now() + absl::Seconds(10)).ok()) {
      return state.SkipWithError("ping failed");
    }
  }
}

// The round trip a step's messages make: the feed x goes out and a tensor
// of its size comes back, through a server whose handler answers at once.
void BM_RpcEchoRoundTrip(benchmark::State& state) {
  RpcServerOptions server_options;
  server_options.bind_address = "tcp://127.0.0.1:0";
  absl::StatusOr<std::unique_ptr<RpcServer>> server =
      RpcServer::Start(server_options, {{"echo",
                                         [](RpcMessage request, RpcDone done) {
                                           done(absl::OkStatus(), {"", std::move(request.tensors)});
                                         },
                                         /*runs_inline=*/true}});
  if (!server.ok()) return state.SkipWithError("no server");
  RpcClientOptions options;
  options.address = "127.0.0.1:" + std::to_string((*server)->port());
  absl::StatusOr<std::unique_ptr<RpcClient>> client = RpcClient::Connect(options);
  if (!client.ok()) return state.SkipWithError("no client");
  const Tensor x = Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4}));
  for (auto _ : state) {
    if (!(*client)->CallSync("echo", {"", {x}}, absl::Now() + absl::Seconds(10)).ok()) {
      return state.SkipWithError("echo failed");
    }
  }
}

BENCHMARK(BM_LocalSessionStep)->UseRealTime();
BENCHMARK(BM_ClusterStepOneTask)->UseRealTime();
BENCHMARK(BM_ClusterStepTwoTasks)->UseRealTime();
BENCHMARK(BM_LocalSessionMatMulStep)->UseRealTime();
BENCHMARK(BM_ClusterMatMulStepOneTask)->UseRealTime();
BENCHMARK(BM_RpcRoundTrip)->UseRealTime();
BENCHMARK(BM_RpcEchoRoundTrip)->UseRealTime();

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
