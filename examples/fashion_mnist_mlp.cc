// A 784-128-10 multilayer perceptron (or --model cnn, the convolutional
// model of distributed_mnist) trained on Fashion-MNIST with Adam in one
// process: the data pipeline (IDX files, shuffled batches prefetched on a
// background thread) feeding placeholders, and one Session::Run per
// training step. --steps stops after that many steps instead of epochs;
// --device gpu trains on /gpu:0 (every op of the step, the initializers
// too), cpu on the CPU, auto (the default) on a GPU when there is one.
// The steps are counted on stderr (--quiet: not at all).
//   fashion_mnist_mlp [--data DIR] [--epochs N] [--steps N] [--batch N] [--threads N]
//       [--model mlp|cnn] [--device auto|cpu|gpu] [--quiet]
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/flags.h"
#include "examples/fashion_mlp_model.h"
#include "fmt/core.h"
#include "graph/progress_line.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "runtime/data/dataset.h"
#include "runtime/data/idx_reader.h"
#include "runtime/device/device_query.h"
#include "runtime/session.h"

namespace rill::examples {
namespace {

struct Options {
  std::string data_dir = kFashionMnistDir;
  int epochs = 5;
  int64_t steps = 0;  // 0: --epochs decides.
  int batch_size = 64;
  int threads = 0;  // One per hardware thread.
  std::string model = "mlp";
  std::string device = "auto";
  bool quiet = false;  // No progress line on stderr.
};

absl::Status Run(const Options& options) {
  auto train = LoadMnist(options.data_dir, MnistSplit::kTrain);
  if (!train.ok()) {
    return absl::Status(train.status().code(),
                        fmt::format("{} (install the Debian package dataset-fashion-mnist, or "
                                    "pass --data DIR): {}",
                                    options.data_dir, std::string(train.status().message())));
  }
  ASSIGN_OR_RETURN(const MnistData test, LoadMnist(options.data_dir, MnistSplit::kTest));

  if (options.device == "gpu") {
    if (const GpuQuery gpus = QueryGpuDevices(); gpus.devices.empty()) {
      return absl::FailedPreconditionError("--device gpu: this machine has no GPU: " + gpus.reason);
    }
  }
  const Scope root = ops::NewRootScope().WithDevice(options.device == "gpu"   ? "/device:GPU:0"
                                                    : options.device == "cpu" ? "/device:CPU:0"
                                                                              : "");
  ASSIGN_OR_RETURN(const FashionModel model,
                   options.model == "cnn" ? BuildFashionCnn(root) : BuildFashionMlp(root));
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());
  SessionOptions session_options;
  session_options.inter_op_threads = options.threads;
  session_options.intra_op_threads = options.threads;
  ASSIGN_OR_RETURN(auto session, NewSession(session_options, graph));
  RETURN_IF_ERROR(session->Run({}, {}, {model.init.name()}).status());

  ASSIGN_OR_RETURN(Dataset data, Dataset::FromTensors({train->images, train->labels}));
  data.Shuffle(42)
      .Batch(options.batch_size)
      .Repeat(options.steps > 0 ? -1 : options.epochs)
      .Prefetch(2);
  ASSIGN_OR_RETURN(auto batches, data.MakeIterator());

  const int64_t rows = train->images.dim_size(0);
  const int64_t steps_per_epoch = (rows + options.batch_size - 1) / options.batch_size;
  const std::vector<std::string> fetches = {model.loss.name()};
  const std::vector<std::string> targets = {model.train.name()};
  const auto start = std::chrono::steady_clock::now();
  auto epoch_start = start;
  double epoch_loss = 0;
  int64_t step = 0;
  ProgressLine progress("train",
                        options.steps > 0 ? options.steps : options.epochs * steps_per_epoch,
                        {.enabled = !options.quiet});
  while (options.steps == 0 || step < options.steps) {
    ASSIGN_OR_RETURN(auto batch, batches->Next());
    if (!batch) break;
    ASSIGN_OR_RETURN(auto loss,
                     session->Run({{"x", (*batch)[0]}, {"labels", (*batch)[1]}}, fetches, targets));
    epoch_loss += loss[0].scalar<float>();
    ++step;
    progress.Update(step);
    const int64_t epoch = (step - 1) / steps_per_epoch + 1;
    const int64_t epoch_step = (step - 1) % steps_per_epoch + 1;
    if (epoch_step == steps_per_epoch) {
      const double epoch_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
      ASSIGN_OR_RETURN(auto accuracy, session->Run({{"x", test.images}, {"labels", test.labels}},
                                                   {model.accuracy.name()}));
      progress.Clear();
      fmt::print("epoch {}  loss {:.4f}  {:.3f} s  examples/s {:.0f}  test accuracy {:.4f}\n",
                 epoch, epoch_loss / static_cast<double>(steps_per_epoch), epoch_seconds,
                 static_cast<double>(rows) / epoch_seconds, accuracy[0].scalar<float>());
      epoch_loss = 0;
      epoch_start = std::chrono::steady_clock::now();
    }
  }
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.Finish();
  ASSIGN_OR_RETURN(auto accuracy, session->Run({{"x", test.images}, {"labels", test.labels}},
                                               {model.accuracy.name()}));
  fmt::print(
      "result: {{\"model\": \"{}\", \"device\": \"{}\", \"test_accuracy\": {:.4f}, \"epochs\": "
      "{:.2f}, "
      "\"batch_size\": {}, \"steps\": {}, \"train_seconds\": {:.3f}}}\n",
      options.model, options.device, accuracy[0].scalar<float>(),
      static_cast<double>(step) / static_cast<double>(steps_per_epoch), options.batch_size, step,
      train_seconds);
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "usage: fashion_mnist_mlp [--data DIR] [--epochs N>=1] [--steps N>=1] "
    "[--batch N>=1] [--threads N>=0] [--model mlp|cnn] [--device auto|cpu|gpu] [--quiet]\n";

// The values of the options the shared parser has read.
absl::StatusOr<Options> ParseOptions(const cli::ParsedArgs& parsed) {
  Options options;
  const auto whole_number = [&parsed](const char* flag, auto min, auto* out) -> absl::Status {
    const std::optional<std::string> value = parsed.Value(flag);
    if (value && (!absl::SimpleAtoi(*value, out) || *out < min)) {
      return absl::InvalidArgumentError(
          fmt::format("--{} '{}': expected a whole number >= {}", flag, *value, min));
    }
    return absl::OkStatus();
  };
  options.data_dir = parsed.Value("data").value_or(options.data_dir);
  RETURN_IF_ERROR(whole_number("epochs", 1, &options.epochs));
  RETURN_IF_ERROR(whole_number("steps", int64_t{1}, &options.steps));
  RETURN_IF_ERROR(whole_number("batch", 1, &options.batch_size));
  RETURN_IF_ERROR(whole_number("threads", 0, &options.threads));
  options.model = parsed.Value("model").value_or(options.model);
  if (options.model != "mlp" && options.model != "cnn") {
    return absl::InvalidArgumentError(
        fmt::format("--model '{}': expected mlp or cnn", options.model));
  }
  options.device = parsed.Value("device").value_or(options.device);
  if (options.device != "auto" && options.device != "cpu" && options.device != "gpu") {
    return absl::InvalidArgumentError(
        fmt::format("--device '{}': expected auto, cpu or gpu", options.device));
  }
  options.quiet = parsed.Has("quiet");
  return options;
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  using rill::examples::kUsage;
  const absl::StatusOr<rill::cli::ParsedArgs> parsed = rill::cli::ParseOptionsOnly(
      {argv + 1, argv + argc}, {"data", "epochs", "steps", "model", "batch", "threads", "device"},
      {"quiet"});
  if (!parsed.ok()) return rill::cli::PrintUsageError("fashion_mnist_mlp", parsed.status(), kUsage);
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  const absl::StatusOr<rill::examples::Options> options = rill::examples::ParseOptions(*parsed);
  if (!options.ok()) {
    return rill::cli::PrintUsageError("fashion_mnist_mlp", options.status(), kUsage);
  }
  const absl::Status status = rill::examples::Run(*options);
  if (!status.ok()) {
    std::fprintf(stderr, "fashion_mnist_mlp: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
