// A while loop split over a ps and a worker task, 10,000 iterations in one
// Session::Run, beside the client driving each iteration with its own Run
// and beside the floor of an iteration, a raw libzmq round trip.
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "benches/bench_clock.h"
#include "benchmark/benchmark.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "zmq.hpp"

namespace rill {
namespace {

// A loop on a two-task cluster, beside the client driving each iteration.
// Both count to n with the count on /job:ps and the Add on /job:worker,
// whose master the client calls, so that each iteration sends the count to
// the worker and the sum back:
//   in one Session::Run: the loop's state (Enter, Merge, Less, Switch,
//     NextIteration) on the ps, the body's Add on the worker;
//   one Session::Run per iteration: a variable v on the ps, v + 1 computed
//     on the worker and assigned to v on the ps.
constexpr char kPs[] = "/job:ps/task:0";
constexpr char kWorker[] = "/job:worker/task:0";

absl::StatusOr<GraphDef> ClusterLoopGraph(int iterations) {
  const Scope root = ops::NewRootScope();
  const Scope ps = root.WithDevice(kPs);
  const Output start = ops::Const(ps.WithOpName("start"), Tensor::Scalar<int32_t>(0), DT_INT32);
  const Output limit =
      ops::Const(ps.WithOpName("n"), Tensor::Scalar<int32_t>(iterations), DT_INT32);
  const Output one =
      ops::Const(root.WithDevice(kWorker).WithOpName("one"), Tensor::Scalar<int32_t>(1), DT_INT32);
  std::vector<Output> outputs;
  RETURN_IF_ERROR(ops::WhileLoop(
      ps, {start},
      [&](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(s, in[0], limit);
        return s.status();
      },
      [&](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(s.WithDevice(kWorker), in[0], one));
        return s.status();
      },
      &outputs, {.frame_name = "count"}));
  ops::Identity(ps.WithOpName("counted"), outputs[0]);
  ASSIGN_OR_RETURN(GraphDef def, root.ToGraphDef());
  // The invariant `one` enters the loop where it is read, on the worker,
  // rather than with the loop's state: it crosses no wire.
  for (NodeDef& node : *def.mutable_node()) {
    if (node.op() == "Enter" && node.input_size() > 0 && node.input(0) == "one") {
      node.set_device(kWorker);
    }
  }
  return def;
}

absl::StatusOr<GraphDef> ClusterStepGraph() {
  const Scope root = ops::NewRootScope();
  const Scope ps = root.WithDevice(kPs);
  const Variable v(ps, "v", Tensor::Scalar<int32_t>(0));
  const Output next =
      ops::Add(root.WithDevice(kWorker), v,
               ops::Const(root.WithDevice(kWorker), Tensor::Scalar<int32_t>(1), DT_INT32));
  ops::Assign(ps.WithOpName("step"), v.ref(), next);
  GlobalVariablesInitializer(root);
  return root.ToGraphDef();
}

// A client session on a fresh worker + ps cluster in this process.
struct Cluster {
  std::vector<std::unique_ptr<Server>> servers;
  std::unique_ptr<Session> session;
};

absl::StatusOr<Cluster> StartCluster(const GraphDef& graph) {
  Cluster cluster;
  ASSIGN_OR_RETURN(cluster.servers,
                   Server::CreateLocalCluster({{"worker", 1}, {"ps", 1}}, LogSink::Discard()));
  SessionOptions options;
  options.target = cluster.servers[0]->target();
  ASSIGN_OR_RETURN(cluster.session, NewSession(options, graph));
  return cluster;
}

// Counters: us_per_iter, wall time per iteration; cpu_us_per_iter, the
// CPU time of the whole process (client, both servers) per iteration,
// which shows how much of an iteration is waiting.
void ReportCluster(benchmark::State& state, const Clock& clock, int64_t runs, int iterations) {
  if (runs == 0) return;
  const double per = 1e-3 / (static_cast<double>(runs) * iterations);
  state.counters["us_per_iter"] = clock.ns * per;
  state.counters["cpu_us_per_iter"] = clock.cpu_ns * per;
}

void BM_ClusterLoopOneRun(benchmark::State& state) {
  const int iterations = static_cast<int>(state.range(0));
  absl::StatusOr<GraphDef> graph = ClusterLoopGraph(iterations);
  absl::StatusOr<Cluster> cluster = graph.ok() ? StartCluster(*graph) : graph.status();
  // The first Run partitions the graph and registers it: timed apart.
  absl::StatusOr<std::vector<Tensor>> first =
      cluster.ok() ? cluster->session->Run({}, {"counted"}) : cluster.status();
  if (!first.ok() || (*first)[0].scalar<int32_t>() != iterations) {
    state.SkipWithError(first.ok() ? "wrong count" : std::string(first.status().message()).c_str());
    return;
  }
  Clock clock;
  int64_t runs = 0;
  for (auto _ : state) {
    if (!clock.Time([&] { return cluster->session->Run({}, {"counted"}).ok(); })) {
      state.SkipWithError("a step failed");
      return;
    }
    ++runs;
  }
  ReportCluster(state, clock, runs, iterations);
}
BENCHMARK(BM_ClusterLoopOneRun)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_ClusterRunPerIteration(benchmark::State& state) {
  const int iterations = static_cast<int>(state.range(0));
  absl::StatusOr<GraphDef> graph = ClusterStepGraph();
  absl::StatusOr<Cluster> cluster = graph.ok() ? StartCluster(*graph) : graph.status();
  absl::Status status =
      cluster.ok() ? cluster->session->Run({}, {}, {"init"}).status() : cluster.status();
  if (status.ok()) status = cluster->session->Run({}, {}, {"step"}).status();
  if (!status.ok()) {
    state.SkipWithError(std::string(status.message()).c_str());
    return;
  }
  Clock clock;
  int64_t runs = 0;
  for (auto _ : state) {
    const bool ok = clock.Time([&] {
      for (int i = 0; i < iterations; ++i) {
        if (!cluster->session->Run({}, {}, {"step"}).ok()) return false;
      }
      return true;
    });
    if (!ok) {
      state.SkipWithError("a step failed");
      return;
    }
    ++runs;
  }
  ReportCluster(state, clock, runs, iterations);
}
BENCHMARK(BM_ClusterRunPerIteration)->Arg(10000)->Unit(benchmark::kMillisecond)->UseRealTime();

// The floor of a loop iteration split over two tasks: its value goes to
// the worker and back. Here a 4-byte message goes to an echo thread and
// back over tcp loopback with libzmq alone, in one process as the cluster's
// servers are.
void BM_RawZmqRoundTrip(benchmark::State& state) {
  zmq::context_t context;
  zmq::socket_t echo(context, zmq::socket_type::router);
  echo.set(zmq::sockopt::linger, 0);
  echo.bind("tcp://127.0.0.1:*");
  const std::string endpoint = echo.get(zmq::sockopt::last_endpoint);
  std::thread server([&echo] {
    for (;;) {
      zmq::message_t peer, body;
      if (!echo.recv(peer) || !echo.recv(body) || body.size() == 0) return;
      echo.send(peer, zmq::send_flags::sndmore);
      echo.send(body, zmq::send_flags::none);
    }
  });
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoint);
  const int32_t value = 7;
  Clock clock;
  int64_t trips = 0;
  for (auto _ : state) {
    const bool ok = clock.Time([&] {
      zmq::message_t reply;
      dealer.send(zmq::buffer(&value, sizeof(value)), zmq::send_flags::none);
      return dealer.recv(reply).has_value() && reply.size() == sizeof(value);
    });
    if (!ok) {
      state.SkipWithError("the echo failed");
      break;
    }
    ++trips;
  }
  dealer.send(zmq::message_t(), zmq::send_flags::none);  // Stops the echo.
  server.join();
  if (trips > 0) {
    state.counters["us_per_round_trip"] = clock.ns * 1e-3 / static_cast<double>(trips);
    state.counters["cpu_us_per_round_trip"] = clock.cpu_ns * 1e-3 / static_cast<double>(trips);
  }
}
BENCHMARK(BM_RawZmqRoundTrip)->UseRealTime();

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
