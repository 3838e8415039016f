// A random matrix times its transpose, summed, on a chosen device, with
// device placement logged: the first thing people run to see where their
// ops go and how long a large matmul takes. On `gpu` the same product is
// timed on the CPU too, beside it.
//   matmul_devices [cpu|gpu] [N]
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "runtime/device/device_query.h"
#include "runtime/session.h"

namespace rill::examples {
namespace {

// The seconds one product took on `device_kind`, the session's setup
// included, as the seed script measures it.
absl::StatusOr<double> Run(const std::string& device_kind, int n) {
  const std::string device = "/" + device_kind + ":0";
  const Scope root = ops::NewRootScope().WithDevice(device);
  const Output matrix = ops::RandomUniform(root.WithOpName("random_matrix"), {n, n}, DT_FLOAT);
  const Output product =
      ops::MatMul(root.WithOpName("dot"), matrix, matrix, ops::MatMul::TransposeB(true));
  const Output sum = ops::Sum(root.WithOpName("sum"), product, {0, 1});
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());

  SessionOptions options;
  options.log_device_placement = true;
  const auto start = std::chrono::steady_clock::now();
  ASSIGN_OR_RETURN(auto session, NewSession(options, graph));
  ASSIGN_OR_RETURN(auto result, session->Run({}, {sum.name()}));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();

  fmt::print("Shape: [{}, {}] Device: {}\n", n, n, device);
  fmt::print("Time taken: {:.6f} s\n", seconds);
  fmt::print(
      "result: {{\"shape\": [{}, {}], \"device\": \"{}\", \"sum\": {}, \"seconds\": {:.6f}}}\n", n,
      n, device, result[0].scalar<float>(), seconds);
  return seconds;
}

absl::Status RunOn(const std::string& device_kind, int n) {
  if (device_kind == "cpu") return Run("cpu", n).status();
  if (const GpuQuery gpus = QueryGpuDevices(); gpus.devices.empty()) {
    return absl::FailedPreconditionError("no GPU to run on: " + gpus.reason);
  }
  ASSIGN_OR_RETURN(const double gpu_seconds, Run("gpu", n));
  ASSIGN_OR_RETURN(const double cpu_seconds, Run("cpu", n));
  fmt::print("GPU {:.6f} s beside CPU {:.6f} s: {:.1f}x\n", gpu_seconds, cpu_seconds,
             cpu_seconds / gpu_seconds);
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  constexpr char kUsage[] = "usage: matmul_devices [cpu|gpu] [N]   (N in 1..65536, default 1500)\n";
  const absl::StatusOr<rill::cli::ParsedArgs> parsed =
      rill::cli::ParseArgs({argv + 1, argv + argc}, {}, {});
  if (!parsed.ok()) return rill::cli::PrintUsageError("matmul_devices", parsed.status(), kUsage);
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  const std::vector<std::string>& args = parsed->positional;
  const std::string device_kind = args.size() > 0 ? args[0] : "cpu";
  int n = 1500;
  absl::Status error;
  if (args.size() > 2) {
    error = absl::InvalidArgumentError(fmt::format("unexpected argument '{}'", args[2]));
  } else if (device_kind != "cpu" && device_kind != "gpu") {
    error = absl::InvalidArgumentError(fmt::format("'{}': expected cpu or gpu", device_kind));
  } else if (args.size() > 1 && (!absl::SimpleAtoi(args[1], &n) || n <= 0 || n > 65536)) {
    error = absl::InvalidArgumentError(fmt::format("N '{}': expected 1..65536", args[1]));
  }
  if (!error.ok()) return rill::cli::PrintUsageError("matmul_devices", error, kUsage);
  const absl::Status status = rill::examples::RunOn(device_kind, n);
  if (!status.ok()) {
    std::fprintf(stderr, "matmul_devices: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
