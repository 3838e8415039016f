// Using two devices from one client graph, as in TensorFlow 1.x: first
// A^n + B^n with A^n on /cpu:0 and B^n on /cpu:1 (or /gpu:0 and /gpu:1),
// against the same sum on one device; then a linear model replicated over
// two towers with the batch split between them and the tower gradients
// averaged on the client. A machine with one GPU splits it in two virtual
// GPUs.
//   in_graph_replication [--size N] [--power n] [--device cpu|gpu]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "placement/replication.h"
#include "runtime/device/device_query.h"
#include "runtime/session.h"

namespace rill::examples {
namespace {

constexpr char kClient[] = "/cpu:0";
constexpr int kBatch = 64;
constexpr int kFeatures = 32;
constexpr int kOutputs = 8;
// Both computations do the same float arithmetic in a different order at
// most, so they agree to rounding.
constexpr double kTolerance = 1e-5;

// Entries uniform in [0, 2 * scale).
Tensor RandomMatrix(std::mt19937& rng, int rows, int cols, float scale) {
  Tensor t(DT_FLOAT, TensorShape({rows, cols}));
  std::uniform_real_distribution<float> uniform(0.f, 2.f * scale);
  float* values = t.data<float>();
  for (int64_t i = 0; i < t.NumElements(); ++i) values[i] = uniform(rng);
  return t;
}

// max |a - b| / max |a|: the difference relative to the result's size.
double RelativeDifference(const Tensor& a, const Tensor& b) {
  double diff = 0, size = 0;
  const float* pa = a.data<float>();
  const float* pb = b.data<float>();
  for (int64_t i = 0; i < a.NumElements(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(pa[i]) - pb[i]));
    size = std::max(size, std::abs(static_cast<double>(pa[i])));
  }
  return size > 0 ? diff / size : diff;
}

// m^power by repeated MatMul.
Output MatPow(const Scope& scope, const Output& m, int power) {
  Output product = m;
  for (int i = 1; i < power; ++i) product = ops::MatMul(scope, product, m);
  return product;
}

// Runs `fetch` twice and returns its value and the seconds the second step
// took: the first builds the step's executors and warms the thread pools.
absl::StatusOr<std::pair<Tensor, double>> TimedRun(
    Session& session, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::string& fetch) {
  RETURN_IF_ERROR(session.Run(feeds, {fetch}).status());
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto values, session.Run(feeds, {fetch}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return std::make_pair(values[0], seconds);
}

struct MatPowResult {
  double rel_diff = 0;
  double single_s = 0;
  double two_device_s = 0;
};

// "/cpu:1", "/gpu:0": device `index` of the kind the run uses.
std::string DeviceOf(const std::string& kind, int index) {
  return fmt::format("/{}:{}", kind, index);
}

absl::StatusOr<MatPowResult> RunMatPow(const SessionOptions& options, const std::string& kind,
                                       int n, int power) {
  const Scope root = ops::NewRootScope();
  const PartialTensorShape shape({n, n});
  const Scope client = root.WithDevice(kClient);
  const Output a =
      ops::Placeholder(client.WithOpName("a"), DT_FLOAT, ops::Placeholder::Shape(shape));
  const Output b =
      ops::Placeholder(client.WithOpName("b"), DT_FLOAT, ops::Placeholder::Shape(shape));

  const Scope single = root.NewSubScope("single").WithDevice(DeviceOf(kind, 0));
  const Output single_sum =
      ops::Add(single.WithOpName("sum"), MatPow(single, a, power), MatPow(single, b, power));

  const Scope split = root.NewSubScope("two_device");
  const Output a_pow = MatPow(split.WithDevice(DeviceOf(kind, 0)), a, power);
  const Output b_pow = MatPow(split.WithDevice(DeviceOf(kind, 1)), b, power);
  const Output split_sum = ops::Add(split.WithDevice(kClient).WithOpName("sum"), a_pow, b_pow);
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());

  // Entries of mean 1/n: rows sum to about 1, so powers neither blow up
  // nor vanish.
  std::mt19937 rng(1);
  const float scale = 1.f / static_cast<float>(n);
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"a", RandomMatrix(rng, n, n, scale)},
                                                             {"b", RandomMatrix(rng, n, n, scale)}};

  ASSIGN_OR_RETURN(auto session, NewSession(options, graph));
  ASSIGN_OR_RETURN(const auto single_run, TimedRun(*session, feeds, single_sum.name()));
  ASSIGN_OR_RETURN(const auto split_run, TimedRun(*session, feeds, split_sum.name()));
  return MatPowResult{RelativeDifference(single_run.first, split_run.first), single_run.second,
                      split_run.second};
}

// Mean squared error of x·w against y, and its gradient for w, built in
// `scope`.
absl::StatusOr<Output> LossGradient(const Scope& scope, const Output& x, const Output& y,
                                    const Output& w, Output* prediction) {
  *prediction = ops::MatMul(scope.WithOpName("prediction"), x, w);
  const Output loss = ops::Mean(scope.WithOpName("loss"),
                                ops::Square(scope, ops::Sub(scope, *prediction, y)), {0, 1});
  ASSIGN_OR_RETURN(const std::vector<Output> grads, AddGradients(scope, {loss}, {w}));
  return grads[0];
}

struct TowerResult {
  double grads_rel_diff = 0;
  double predictions_rel_diff = 0;
};

absl::StatusOr<TowerResult> RunTowers(const SessionOptions& options, const std::string& kind) {
  std::mt19937 rng(2);
  const Scope root = ops::NewRootScope();
  const Scope client = root.WithDevice(kClient);
  const Output x = ops::Placeholder(client.WithOpName("x"), DT_FLOAT,
                                    ops::Placeholder::Shape({kBatch, kFeatures}));
  const Output y = ops::Placeholder(client.WithOpName("y"), DT_FLOAT,
                                    ops::Placeholder::Shape({kBatch, kOutputs}));
  const Variable w(client, "w", RandomMatrix(rng, kFeatures, kOutputs, 1.f / kFeatures));

  std::vector<std::vector<Output>> tower_grads;
  const TowerFn tower = [&](const Scope& scope, const std::vector<Output>& inputs,
                            int) -> absl::StatusOr<std::vector<Output>> {
    Output prediction;
    ASSIGN_OR_RETURN(const Output grad, LossGradient(scope, inputs[0], inputs[1], w, &prediction));
    tower_grads.push_back({grad});
    return std::vector<Output>{prediction};
  };
  ASSIGN_OR_RETURN(
      const std::vector<Output> predictions,
      ReplicateTowers(root, {x, y}, {DeviceOf(kind, 0), DeviceOf(kind, 1)}, kClient, tower));
  ASSIGN_OR_RETURN(const std::vector<Output> averaged,
                   AverageGradients(root, tower_grads, kClient));

  Output single_prediction;
  ASSIGN_OR_RETURN(const Output single_grad,
                   LossGradient(client.NewSubScope("single"), x, y, w, &single_prediction));
  const Operation init = GlobalVariablesInitializer(root);
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());

  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", RandomMatrix(rng, kBatch, kFeatures, 1.f)},
      {"y", RandomMatrix(rng, kBatch, kOutputs, 1.f)}};
  ASSIGN_OR_RETURN(auto session, NewSession(options, graph));
  RETURN_IF_ERROR(session->Run({}, {}, {init.name()}).status());
  ASSIGN_OR_RETURN(auto values,
                   session->Run(feeds, {averaged[0].name(), single_grad.name(),
                                        predictions[0].name(), single_prediction.name()}));
  return TowerResult{RelativeDifference(values[1], values[0]),
                     RelativeDifference(values[3], values[2])};
}

absl::Status Run(int n, int power, const std::string& kind) {
  SessionOptions options;
  options.device_count = {{"CPU", 2}};
  options.log_device_placement = false;
  if (kind == "gpu") {
    const GpuQuery gpus = QueryGpuDevices();
    if (gpus.devices.empty()) return absl::FailedPreconditionError("no GPU: " + gpus.reason);
    if (gpus.devices.size() == 1) options.gpu.virtual_devices_per_gpu = 2;
  }

  ASSIGN_OR_RETURN(const MatPowResult matpow, RunMatPow(options, kind, n, power));
  const bool matpow_agree = matpow.rel_diff <= kTolerance;
  fmt::print("A^{0} + B^{0}, [{1}, {1}] float\n", power, n);
  fmt::print("  {:<30} {:.6f} s\n", fmt::format("one device ({}):", DeviceOf(kind, 0)),
             matpow.single_s);
  fmt::print("  {:<30} {:.6f} s\n",
             fmt::format("two devices ({}, {}):", DeviceOf(kind, 0), DeviceOf(kind, 1)),
             matpow.two_device_s);
  fmt::print("  results agree: {} (max abs diff relative {:.3g})\n", matpow_agree, matpow.rel_diff);

  ASSIGN_OR_RETURN(const TowerResult towers, RunTowers(options, kind));
  const bool grads_agree = towers.grads_rel_diff <= kTolerance;
  const bool predictions_agree = towers.predictions_rel_diff <= kTolerance;
  fmt::print("x·w over 2 towers, batch {} split in {} rows each\n", kBatch, kBatch / 2);
  fmt::print("  gathered predictions agree with one tower: {} ({:.3g})\n", predictions_agree,
             towers.predictions_rel_diff);
  fmt::print("  averaged gradients agree with one tower:   {} ({:.3g})\n", grads_agree,
             towers.grads_rel_diff);

  fmt::print(
      "result: {{\"devices\": 2, \"kind\": \"{}\", \"size\": {}, \"power\": {}, \"matpow_agree\": "
      "{}, "
      "\"matpow_rel_diff\": {:.3g}, \"single_s\": {:.6f}, \"two_device_s\": {:.6f}, "
      "\"predictions_agree\": {}, \"predictions_rel_diff\": {:.3g}, \"grads_agree\": {}, "
      "\"grads_rel_diff\": {:.3g}}}\n",
      kind, n, power, matpow_agree, matpow.rel_diff, matpow.single_s, matpow.two_device_s,
      predictions_agree, towers.predictions_rel_diff, grads_agree, towers.grads_rel_diff);
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "usage: in_graph_replication [--size N] [--power n] [--device cpu|gpu]   "
      "(N in 1..65536, default 1000; n in 1..1000, default 10)\n";
  const absl::StatusOr<rill::cli::ParsedArgs> parsed =
      rill::cli::ParseOptionsOnly({argv + 1, argv + argc}, {"size", "power", "device"}, {});
  if (!parsed.ok()) {
    return rill::cli::PrintUsageError("in_graph_replication", parsed.status(), kUsage);
  }
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  int n = 1000;
  int power = 10;
  const std::string kind = parsed->Value("device").value_or("cpu");
  const auto bad = [](const char* flag, const std::string& value, const char* expected) {
    return absl::InvalidArgumentError(fmt::format("--{} '{}': expected {}", flag, value, expected));
  };
  absl::Status error;
  if (kind != "cpu" && kind != "gpu") {
    error = bad("device", kind, "cpu or gpu");
  } else if (const auto size = parsed->Value("size");
             size && (!absl::SimpleAtoi(*size, &n) || n <= 0 || n > 65536)) {
    error = bad("size", *size, "1..65536");
  } else if (const auto p = parsed->Value("power");
             p && (!absl::SimpleAtoi(*p, &power) || power <= 0 || power > 1000)) {
    error = bad("power", *p, "1..1000");
  }
  if (!error.ok()) return rill::cli::PrintUsageError("in_graph_replication", error, kUsage);
  const absl::Status status = rill::examples::Run(n, power, kind);
  if (!status.ok()) {
    std::fprintf(stderr, "in_graph_replication: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
