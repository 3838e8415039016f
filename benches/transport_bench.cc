// Tensor transfer and small-RPC latency through rill's transport, each
// beside raw cppzmq doing the same exchange. The process forks a child that
// serves both: an RpcServer ("push" replies empty, "echo" returns the body)
// and a raw ROUTER that answers every message with one frame (empty for a
// payload over 64 bytes, else the payload). Both sides keep one message in
// flight: send, wait for the reply, repeat; both send without copying.
// A second RpcServer and a second raw ROUTER speak CURVE (authenticated
// and encrypted), to put its cost beside plain tcp, and rill's CURVE
// beside ZeroMQ's own.
#include <poll.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zmq.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/clock.h"
#include "benchmark/benchmark.h"
#include "transport/rpc.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace rill {
namespace {

constexpr size_t kEchoLimit = 64;

// What the child tells the parent: where to find its two servers.
struct Endpoints {
  int rpc_port = 0;
  int curve_port = 0;
  std::string raw_tcp;
  std::string raw_ipc;
  std::string raw_curve;
};

void AnswerRaw(zmq::socket_t& router) {
  std::vector<zmq::message_t> frames;
  if (!zmq::recv_multipart(router, std::back_inserter(frames), zmq::recv_flags::dontwait)) return;
  zmq::message_t reply = frames.size() == 2 && frames[1].size() <= kEchoLimit ? std::move(frames[1])
                                                                              : zmq::message_t();
  router.send(frames[0], zmq::send_flags::sndmore);
  router.send(reply, zmq::send_flags::none);
}

void RunRawRouters(zmq::socket_t& plain, zmq::socket_t& curve, int parent_fd) {
  zmq_pollitem_t items[3] = {{plain.handle(), 0, ZMQ_POLLIN, 0},
                             {curve.handle(), 0, ZMQ_POLLIN, 0},
                             {nullptr, parent_fd, ZMQ_POLLIN, 0}};
  for (;;) {
    zmq_poll(items, 3, -1);
    if (items[2].revents != 0) return;  // The parent closed its end.
    if (items[0].revents & ZMQ_POLLIN) AnswerRaw(plain);
    if (items[1].revents & ZMQ_POLLIN) AnswerRaw(curve);
  }
}

// One key pair that both processes hold (made before the fork), as the
// tasks of a cluster share theirs.
std::shared_ptr<const CurveKeys> BenchKeys() {
  static const std::shared_ptr<const CurveKeys> keys = [] {
    char public_key[41] = {}, secret_key[41] = {};
    if (zmq_curve_keypair(public_key, secret_key) != 0) return std::shared_ptr<const CurveKeys>();
    auto made = std::make_shared<CurveKeys>();
    made->public_key = made->server_public_key = public_key;
    made->secret_key = secret_key;
    made->authorized.insert(public_key);
    return std::shared_ptr<const CurveKeys>(std::move(made));
  }();
  return keys;
}

std::unique_ptr<RpcServer> StartBenchServer(std::shared_ptr<const CurveKeys> curve) {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.curve = std::move(curve);
  // Both handlers answer at once (inline), as the worker's RunGraph and
  // PushTensor.
  auto server = RpcServer::Start(
      options, {{"push", [](RpcMessage, RpcDone done) { done(absl::OkStatus(), {}); }, true},
                {"echo",
                 [](RpcMessage request, RpcDone done) {
                   done(absl::OkStatus(), {std::move(request.body), {}});
                 },
                 true}});
  if (!server.ok()) {
    std::fprintf(stderr, "transport_bench child: %s\n", server.status().ToString().c_str());
    std::_Exit(1);
  }
  return *std::move(server);
}

[[noreturn]] void RunChild(int to_parent, int from_parent) {
  std::unique_ptr<RpcServer> server = StartBenchServer(nullptr);
  std::unique_ptr<RpcServer> curve_server =
      BenchKeys() != nullptr ? StartBenchServer(BenchKeys()) : nullptr;
  zmq::context_t context;
  zmq::socket_t router(context, zmq::socket_type::router);
  router.set(zmq::sockopt::linger, 0);
  router.bind("tcp://127.0.0.1:0");
  // last_endpoint names the latest bind, so it is read before the ipc one.
  const std::string raw_tcp = router.get(zmq::sockopt::last_endpoint);
  const std::string raw_ipc = "ipc:///tmp/rill-transport-bench-" + std::to_string(getpid());
  router.bind(raw_ipc);
  // No authenticator in this context: ZeroMQ lets every CURVE client in.
  zmq::socket_t curve_router(context, zmq::socket_type::router);
  curve_router.set(zmq::sockopt::linger, 0);
  std::string raw_curve = "none";
  if (BenchKeys() != nullptr) {
    curve_router.set(zmq::sockopt::curve_server, 1);
    curve_router.set(zmq::sockopt::curve_secretkey, BenchKeys()->secret_key);
    curve_router.bind("tcp://127.0.0.1:0");
    raw_curve = curve_router.get(zmq::sockopt::last_endpoint);
  }
  const std::string line = std::to_string(server->port()) + " " +
                           std::to_string(curve_server != nullptr ? curve_server->port() : 0) +
                           " " + raw_tcp + " " + raw_ipc + " " + raw_curve;
  if (write(to_parent, line.data(), line.size()) != static_cast<ssize_t>(line.size())) {
    std::_Exit(1);
  }
  close(to_parent);
  RunRawRouters(router, curve_router, from_parent);
  curve_router.close();
  router.close();
  unlink(raw_ipc.substr(6).c_str());
  curve_server.reset();
  server.reset();
  std::_Exit(0);
}

// Set once in main before the benchmarks run.
Endpoints* endpoints = nullptr;
pid_t child_pid = 0;

// CPU seconds used so far by both processes, all threads: on a shared
// machine this is steadier than wall time.
double CpuSeconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  double seconds = static_cast<double>(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
                   1e-6 * static_cast<double>(usage.ru_utime.tv_usec + usage.ru_stime.tv_usec);
  std::ifstream stat("/proc/" + std::to_string(child_pid) + "/stat");
  std::string field;
  // utime and stime are fields 14 and 15, in clock ticks; the command name
  // (field 2) has no spaces here.
  for (int i = 1; i <= 15 && stat >> field; ++i) {
    if (i >= 14) seconds += std::stod(field) / static_cast<double>(sysconf(_SC_CLK_TCK));
  }
  return seconds;
}

// Reports CPU microseconds per iteration across both processes.
class CpuMeter {
 public:
  explicit CpuMeter(benchmark::State& state) : state_(state), start_(CpuSeconds()) {}
  ~CpuMeter() {
    if (state_.iterations() == 0) return;
    state_.counters["cpu_us"] =
        1e6 * (CpuSeconds() - start_) / static_cast<double>(state_.iterations());
  }

 private:
  benchmark::State& state_;
  const double start_;
};

std::unique_ptr<RpcClient> ConnectClient(bool prefer_ipc, bool curve = false, bool shm = false) {
  RpcClientOptions options;
  options.address =
      "127.0.0.1:" + std::to_string(curve ? endpoints->curve_port : endpoints->rpc_port);
  options.prefer_ipc = prefer_ipc;
  if (!shm) options.shm_min_bytes = 0;
  if (curve) options.curve = BenchKeys();
  auto client = RpcClient::Connect(options);
  if (!client.ok()) return nullptr;
  // Settles the path (the hello's reply comes first).
  if (!(*client)->CallSync("push", {}, absl::Now() + absl::Seconds(10)).ok()) return nullptr;
  if ((*client)->transport() != (prefer_ipc ? "ipc" : "tcp")) return nullptr;
  // The server maps the arena shortly after the path settles.
  for (int i = 0; shm && !(*client)->shared_memory() && i < 1000; ++i) {
    absl::SleepFor(absl::Milliseconds(10));
  }
  if (shm && !(*client)->shared_memory()) return nullptr;
  return *std::move(client);
}

void TensorTransfer(benchmark::State& state, bool prefer_ipc, bool curve = false,
                    bool shm = false) {
  if (curve && endpoints->curve_port == 0) return state.SkipWithError("no CURVE in this libzmq");
  std::unique_ptr<RpcClient> client = ConnectClient(prefer_ipc, curve, shm);
  if (client == nullptr) return state.SkipWithError("cannot reach the child's RpcServer");
  const int64_t bytes = state.range(0);
  Tensor tensor(DT_UINT8, TensorShape({bytes}));
  CpuMeter meter(state);
  for (auto _ : state) {
    absl::StatusOr<RpcMessage> reply =
        client->CallSync("push", {"", {tensor}}, absl::Now() + absl::Seconds(30));
    if (!reply.ok()) return state.SkipWithError(reply.status().ToString().c_str());
  }
  state.SetBytesProcessed(state.iterations() * bytes);
}

void RawTransfer(benchmark::State& state, const std::string& endpoint, bool curve = false) {
  if (curve && BenchKeys() == nullptr) return state.SkipWithError("no CURVE in this libzmq");
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  if (curve) {
    dealer.set(zmq::sockopt::curve_serverkey, BenchKeys()->public_key);
    dealer.set(zmq::sockopt::curve_publickey, BenchKeys()->public_key);
    dealer.set(zmq::sockopt::curve_secretkey, BenchKeys()->secret_key);
  }
  dealer.connect(endpoint);
  const size_t bytes = static_cast<size_t>(state.range(0));
  std::vector<char> payload(bytes, 1);
  zmq::message_t reply;
  CpuMeter meter(state);
  for (auto _ : state) {
    zmq::message_t message(
        payload.data(), bytes, [](void*, void*) {}, nullptr);
    dealer.send(message, zmq::send_flags::none);
    if (!dealer.recv(reply)) return state.SkipWithError("raw receive failed");
  }
  state.SetBytesProcessed(state.iterations() * static_cast<int64_t>(bytes));
}

void BM_TensorTransfer(benchmark::State& state) { TensorTransfer(state, false); }
void BM_RawZmqTransfer(benchmark::State& state) { RawTransfer(state, endpoints->raw_tcp); }
void BM_TensorTransferIpc(benchmark::State& state) { TensorTransfer(state, true); }
void BM_TensorTransferCurve(benchmark::State& state) { TensorTransfer(state, false, true); }
void BM_TensorTransferShm(benchmark::State& state) { TensorTransfer(state, true, false, true); }
void BM_RawZmqTransferIpc(benchmark::State& state) { RawTransfer(state, endpoints->raw_ipc); }
void BM_RawZmqTransferCurve(benchmark::State& state) {
  RawTransfer(state, endpoints->raw_curve, true);
}

void SmallRpcRoundTrip(benchmark::State& state, bool curve) {
  if (curve && endpoints->curve_port == 0) return state.SkipWithError("no CURVE in this libzmq");
  std::unique_ptr<RpcClient> client = ConnectClient(false, curve);
  if (client == nullptr) return state.SkipWithError("cannot reach the child's RpcServer");
  const std::string body(kEchoLimit, 'b');
  CpuMeter meter(state);
  for (auto _ : state) {
    absl::StatusOr<RpcMessage> reply =
        client->CallSync("echo", {body, {}}, absl::Now() + absl::Seconds(10));
    if (!reply.ok() || reply->body.size() != body.size()) {
      return state.SkipWithError("echo failed");
    }
  }
}

void BM_SmallRpcRoundTrip(benchmark::State& state) { SmallRpcRoundTrip(state, false); }
void BM_SmallRpcRoundTripCurve(benchmark::State& state) { SmallRpcRoundTrip(state, true); }

void BM_RawZmqRoundTrip(benchmark::State& state) {
  zmq::context_t context;
  zmq::socket_t dealer(context, zmq::socket_type::dealer);
  dealer.set(zmq::sockopt::linger, 0);
  dealer.connect(endpoints->raw_tcp);
  const std::string body(kEchoLimit, 'b');
  zmq::message_t reply;
  CpuMeter meter(state);
  for (auto _ : state) {
    dealer.send(zmq::buffer(body), zmq::send_flags::none);
    if (!dealer.recv(reply) || reply.size() != body.size()) {
      return state.SkipWithError("raw echo failed");
    }
  }
}

BENCHMARK(BM_TensorTransfer)
    ->Arg(4 << 10)
    ->Arg(64 << 10)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->UseRealTime();
BENCHMARK(BM_RawZmqTransfer)
    ->Arg(4 << 10)
    ->Arg(64 << 10)
    ->Arg(1 << 20)
    ->Arg(16 << 20)
    ->UseRealTime();
BENCHMARK(BM_TensorTransferIpc)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();
BENCHMARK(BM_TensorTransferShm)->Arg(64 << 10)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();
BENCHMARK(BM_RawZmqTransferIpc)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();
BENCHMARK(BM_TensorTransferCurve)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();
BENCHMARK(BM_RawZmqTransferCurve)->Arg(1 << 20)->Arg(16 << 20)->UseRealTime();
BENCHMARK(BM_SmallRpcRoundTrip)->UseRealTime();
BENCHMARK(BM_SmallRpcRoundTripCurve)->UseRealTime();
BENCHMARK(BM_RawZmqRoundTrip)->UseRealTime();

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  rill::BenchKeys();  // Both processes hold the same pair.
  // The child is forked before any thread exists.
  int up[2];
  int down[2];
  if (pipe(up) != 0 || pipe(down) != 0) return 1;
  const pid_t child = fork();
  if (child < 0) return 1;
  if (child == 0) {
    close(up[0]);
    close(down[1]);
    rill::RunChild(up[1], down[0]);
  }
  close(up[1]);
  close(down[0]);
  std::string line;
  char buffer[512];
  for (ssize_t n; (n = read(up[0], buffer, sizeof(buffer))) > 0;) line.append(buffer, n);
  close(up[0]);
  rill::Endpoints endpoints;
  char raw_tcp[256] = {};
  char raw_ipc[256] = {};
  char raw_curve[256] = {};
  if (std::sscanf(line.c_str(), "%d %d %255s %255s %255s", &endpoints.rpc_port,
                  &endpoints.curve_port, raw_tcp, raw_ipc, raw_curve) != 5) {
    std::fprintf(stderr, "transport_bench: the child did not start\n");
    return 1;
  }
  endpoints.raw_tcp = raw_tcp;
  endpoints.raw_ipc = raw_ipc;
  endpoints.raw_curve = raw_curve;
  rill::endpoints = &endpoints;
  rill::child_pid = child;

  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  close(down[1]);
  int status = 0;
  waitpid(child, &status, 0);
  return 0;
}
