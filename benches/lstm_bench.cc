// One training step (forward, backward, Adam) of the Fashion-MNIST LSTM of
// examples/lstm_model: batch 64, 28 steps of 28 features, hidden 128; the
// cell in a while loop or unrolled 28 times. Prints one line
// `result: {json}` with the median milliseconds of the timed steps, the
// form benches/lstm_compare.py reads beside PyTorch's.
//   lstm_bench [--loop while|unrolled] [--threads N] [--steps N] [--warmup N] [--batch N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/flags.h"
#include "examples/lstm_model.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace rill {
namespace {

struct Options {
  std::string loop = "while";
  int threads = 1;
  int steps = 50;
  int warmup = 5;
  int batch = 64;
};

absl::Status Run(const Options& options) {
  const Scope root = ops::NewRootScope();
  ASSIGN_OR_RETURN(const examples::LstmModel model,
                   examples::BuildLstmClassifier(root, {.unrolled = options.loop == "unrolled"}));
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());
  SessionOptions session_options;
  session_options.inter_op_threads = options.threads;
  session_options.intra_op_threads = options.threads;
  ASSIGN_OR_RETURN(auto session, NewSession(session_options, graph));
  RETURN_IF_ERROR(session->Run({}, {}, {model.init.name()}).status());

  // Fixed random pixels and labels: the step's cost does not depend on them.
  std::mt19937 random(0);
  std::vector<float> pixels(static_cast<size_t>(options.batch) * 784);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  for (float& p : pixels) p = unit(random);
  std::vector<int32_t> labels(static_cast<size_t>(options.batch));
  for (int32_t& l : labels) l = static_cast<int32_t>(random() % 10);
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>(pixels, TensorShape({options.batch, 784}))},
      {"labels", Tensor::FromVector<int32_t>(labels, TensorShape({options.batch}))}};

  std::vector<double> times;
  float loss = 0;
  for (int i = 0; i < options.warmup + options.steps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    ASSIGN_OR_RETURN(auto out, session->Run(feeds, {model.loss.name()}, {model.train.name()}));
    const double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    if (i >= options.warmup) times.push_back(ms);
    loss = out[0].scalar<float>();
  }
  std::sort(times.begin(), times.end());
  const size_t n = times.size();
  const double median = n % 2 == 1 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
  fmt::print(
      "result: {{\"impl\": \"rill {}\", \"threads\": {}, \"batch\": {}, \"hidden\": 128, "
      "\"steps\": {}, \"median_ms\": {:.3f}, \"last_loss\": {:.4f}}}\n",
      options.loop, options.threads, options.batch, options.steps, median, loss);
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "usage: lstm_bench [--loop while|unrolled] [--threads N>=0] [--steps N>=1] [--warmup N>=0] "
    "[--batch N>=1]\n";

absl::StatusOr<Options> ParseOptions(const cli::ParsedArgs& parsed) {
  Options options;
  const auto whole_number = [&parsed](const char* flag, int min, int* out) -> absl::Status {
    const std::optional<std::string> value = parsed.Value(flag);
    if (value && (!absl::SimpleAtoi(*value, out) || *out < min)) {
      return absl::InvalidArgumentError(
          fmt::format("--{} '{}': expected a whole number >= {}", flag, *value, min));
    }
    return absl::OkStatus();
  };
  options.loop = parsed.Value("loop").value_or(options.loop);
  if (options.loop != "while" && options.loop != "unrolled") {
    return absl::InvalidArgumentError(
        fmt::format("--loop '{}': expected while or unrolled", options.loop));
  }
  RETURN_IF_ERROR(whole_number("threads", 0, &options.threads));
  RETURN_IF_ERROR(whole_number("steps", 1, &options.steps));
  RETURN_IF_ERROR(whole_number("warmup", 0, &options.warmup));
  RETURN_IF_ERROR(whole_number("batch", 1, &options.batch));
  return options;
}

}  // namespace
}  // namespace rill

int main(int argc, char** argv) {
  const absl::StatusOr<rill::cli::ParsedArgs> parsed = rill::cli::ParseOptionsOnly(
      {argv + 1, argv + argc}, {"loop", "threads", "steps", "warmup", "batch"}, {});
  if (!parsed.ok()) return rill::cli::PrintUsageError("lstm_bench", parsed.status(), rill::kUsage);
  if (parsed->help) return rill::cli::PrintHelp(rill::kUsage);
  const absl::StatusOr<rill::Options> options = rill::ParseOptions(*parsed);
  if (!options.ok())
    return rill::cli::PrintUsageError("lstm_bench", options.status(), rill::kUsage);
  const absl::Status status = rill::Run(*options);
  if (!status.ok()) {
    std::fprintf(stderr, "lstm_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
