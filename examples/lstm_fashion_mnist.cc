// An LSTM (hidden size 128) trained on Fashion-MNIST with Adam, reading
// each image as a sequence of 28 rows of 28 pixels: the cell runs in a
// while loop (ops::WhileLoop) whose gradient is a loop too, or with
// --unrolled as 28 copies of the cell. A dense layer on the last h gives
// the 10 classes. Prints the mean loss every --log_every steps and the test
// accuracy after each epoch; --steps stops after that many steps instead of
// epochs (--steps 50 is a quick look at the loss going down).
// --train_rows/--test_rows use the first N examples of each split.
// --device gpu runs the step on /gpu:0 (the loop's control ops that have
// no GPU kernel, and the stacks, stay on the CPU by soft placement), cpu on
// the CPU, auto (the default) where the placer puts it.
// Between-graph training, as distributed_mnist: with --ps_hosts,
// --worker_hosts, --job_name and --task_index the ps task serves the four
// variables (and Adam's slots) until it is stopped (SIGTERM, SIGINT), and
// each worker runs the loop and its gradient loop on its own batches,
// updating them asynchronously; worker 0 initializes them.
//   lstm_fashion_mnist [--data DIR] [--epochs N] [--steps N] [--batch N] [--threads N]
//       [--log_every N] [--train_rows N] [--test_rows N] [--unrolled] [--quiet]
//       [--device auto|cpu|gpu]
//       [--ps_hosts H:P,... --worker_hosts H:P,... --job_name ps|worker --task_index N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/flags.h"
#include "examples/lstm_model.h"
#include "fmt/core.h"
#include "graph/progress_line.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "runtime/data/dataset.h"
#include "runtime/data/idx_reader.h"
#include "runtime/device/device_query.h"
#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/session_manager.h"

namespace rill::examples {
namespace {

struct Options {
  std::string data_dir = kFashionMnistDir;
  int epochs = 5;
  int64_t steps = 0;  // 0: --epochs decides.
  int batch_size = 64;
  int threads = 0;         // One per hardware thread.
  int64_t log_every = 0;   // 0: a tenth of the steps, at most 100.
  int64_t train_rows = 0;  // 0: all.
  int64_t test_rows = 0;   // 0: all.
  bool unrolled = false;
  bool quiet = false;  // No progress line on stderr.
  std::string device = "auto";
  // --ps_hosts, --worker_hosts, --job_name, --task_index as given: none
  // for one process.
  std::map<std::string, std::string> cluster_flags;
};

constexpr char kPsDevice[] = "/job:ps/task:0";

// The first `rows` examples (all when 0 or more than there are).
MnistData FirstRows(const MnistData& data, int64_t rows) {
  const int64_t n = data.images.dim_size(0);
  if (rows == 0 || rows >= n) return data;
  return {data.images.Slice(0, rows), data.labels.Slice(0, rows)};
}

// The ps task: serves the variables until SIGTERM or SIGINT.
absl::Status RunPs(const ServerConfig& config) {
  BlockStopSignals();
  ServerOptions server_options;
  server_options.config = config;
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(server_options));
  fmt::print("ps {}: serving at {}\n", config.task.index, server->target());
  std::fflush(stdout);
  WaitForStopSignal();
  server->Stop();
  return absl::OkStatus();
}

// One process, or worker `config->task.index` of a cluster.
absl::Status Run(const Options& options, const std::optional<ServerConfig>& config) {
  auto train = LoadMnist(options.data_dir, MnistSplit::kTrain);
  if (!train.ok()) {
    return absl::Status(train.status().code(),
                        fmt::format("{} (install the Debian package dataset-fashion-mnist, or "
                                    "pass --data DIR): {}",
                                    options.data_dir, std::string(train.status().message())));
  }
  ASSIGN_OR_RETURN(const MnistData test_all, LoadMnist(options.data_dir, MnistSplit::kTest));
  const MnistData train_data = FirstRows(*train, options.train_rows);
  const MnistData test = FirstRows(test_all, options.test_rows);

  const int task = config ? config->task.index : 0;
  if (options.device == "gpu") {
    if (const GpuQuery gpus = QueryGpuDevices(); gpus.devices.empty()) {
      return absl::FailedPreconditionError("--device gpu: this machine has no GPU: " + gpus.reason);
    }
  }
  std::unique_ptr<Server> server;
  Scope root = ops::NewRootScope();
  LstmModelOptions model_options{.unrolled = options.unrolled};
  if (config) {
    ServerOptions server_options;
    server_options.config = *config;
    server_options.inter_op_threads = options.threads;
    server_options.intra_op_threads = options.threads;
    ASSIGN_OR_RETURN(server, Server::Create(server_options));
    root = root.WithDevice(fmt::format("/job:worker/task:{}", task));
    model_options.variable_device = kPsDevice;
  }
  if (options.device != "auto") {
    root = root.WithDevice(fmt::format("{}/device:{}:0", config ? root.device() : "",
                                       options.device == "gpu" ? "GPU" : "CPU"));
  }
  ASSIGN_OR_RETURN(const LstmModel model, BuildLstmClassifier(root, model_options));
  ASSIGN_OR_RETURN(const Output ready, ReportUninitializedVariables(root, model.variables));
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());
  SessionOptions session_options;
  session_options.inter_op_threads = options.threads;
  session_options.intra_op_threads = options.threads;
  session_options.allow_soft_placement = true;
  std::unique_ptr<Session> session;
  if (!config) {
    ASSIGN_OR_RETURN(session, NewSession(session_options, graph));
    RETURN_IF_ERROR(session->Run({}, {}, {model.init.name()}).status());
  } else {
    // Worker 0 initializes the variables on the ps; the others wait for it.
    session_options.target = server->target();
    Scaffold scaffold;
    scaffold.init_op = model.init.name();
    scaffold.ready_op = ready.name();
    SessionManager manager(graph, scaffold,
                           {.session_options = session_options,
                            .recovery_wait = absl::Seconds(1),
                            .log = LogSink::Discard()});
    if (task == 0) {
      ASSIGN_OR_RETURN(session, manager.PrepareSession(""));
    } else {
      ASSIGN_OR_RETURN(session, manager.WaitForSession(absl::Minutes(5)));
    }
    fmt::print("worker {}: the variables on {} are ready\n", task, kPsDevice);
  }

  ASSIGN_OR_RETURN(Dataset data, Dataset::FromTensors({train_data.images, train_data.labels}));
  // Each worker sees the data in its own order.
  data.Shuffle(42 + static_cast<uint64_t>(task))
      .Batch(options.batch_size)
      .Repeat(options.steps > 0 ? -1 : options.epochs)
      .Prefetch(2);
  ASSIGN_OR_RETURN(auto batches, data.MakeIterator());

  const int64_t rows = train_data.images.dim_size(0);
  const int64_t steps_per_epoch = (rows + options.batch_size - 1) / options.batch_size;
  const int64_t total_steps = options.steps > 0 ? options.steps : options.epochs * steps_per_epoch;
  const int64_t log_every =
      options.log_every > 0 ? options.log_every : std::clamp<int64_t>(total_steps / 10, 1, 100);
  const auto evaluate = [&]() -> absl::StatusOr<float> {
    ASSIGN_OR_RETURN(auto accuracy, session->Run({{"x", test.images}, {"labels", test.labels}},
                                                 {model.accuracy.name()}));
    return accuracy[0].scalar<float>();
  };
  fmt::print("{}lstm {}: hidden 128, batch {}, {} steps ({} per epoch), {} training examples\n",
             config ? fmt::format("worker {}: ", task) : "",
             options.unrolled ? "unrolled" : "while loop", options.batch_size, total_steps,
             steps_per_epoch, rows);
  std::fflush(stdout);

  const std::vector<std::string> fetches = {model.loss.name()};
  const std::vector<std::string> targets = {model.train.name()};
  // The mean loss of the first and of the last few steps, for the result.
  const int64_t window = std::clamp<int64_t>(total_steps / 2, 1, 10);
  double first_loss = 0;
  std::deque<float> recent;
  const auto start = std::chrono::steady_clock::now();
  auto log_start = start;
  auto epoch_start = start;
  double log_loss = 0;
  double epoch_loss = 0;
  int64_t step = 0;
  ProgressLine progress("train", total_steps, {.enabled = !options.quiet});
  while (step < total_steps) {
    ASSIGN_OR_RETURN(auto batch, batches->Next());
    if (!batch) break;
    ASSIGN_OR_RETURN(auto loss,
                     session->Run({{"x", (*batch)[0]}, {"labels", (*batch)[1]}}, fetches, targets));
    const float value = loss[0].scalar<float>();
    log_loss += value;
    epoch_loss += value;
    if (step < window) first_loss += value / static_cast<double>(window);
    recent.push_back(value);
    if (static_cast<int64_t>(recent.size()) > window) recent.pop_front();
    ++step;
    progress.Update(step);
    if (step % log_every == 0) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - log_start).count();
      progress.Clear();
      fmt::print("step {}  loss {:.4f}  steps/s {:.1f}\n", step,
                 log_loss / static_cast<double>(log_every),
                 static_cast<double>(log_every) / seconds);
      std::fflush(stdout);
      log_loss = 0;
      log_start = now;
    }
    if (options.steps == 0 && step % steps_per_epoch == 0) {
      const double epoch_seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - epoch_start).count();
      ASSIGN_OR_RETURN(const float accuracy, evaluate());
      progress.Clear();
      fmt::print("epoch {}  loss {:.4f}  {:.1f} s  examples/s {:.0f}  test accuracy {:.4f}\n",
                 step / steps_per_epoch, epoch_loss / static_cast<double>(steps_per_epoch),
                 epoch_seconds, static_cast<double>(rows) / epoch_seconds, accuracy);
      std::fflush(stdout);
      epoch_loss = 0;
      epoch_start = std::chrono::steady_clock::now();
    }
  }
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  progress.Finish();
  double last_loss = 0;
  for (const float value : recent) last_loss += value / static_cast<double>(recent.size());
  ASSIGN_OR_RETURN(const float accuracy, evaluate());
  fmt::print(
      "result: {{\"model\": \"lstm\", \"loop\": \"{}\", \"task\": \"{}\", "
      "\"device\": \"{}\", \"test_accuracy\": {:.4f}, "
      "\"epochs\": {:.2f}, \"batch_size\": {}, \"steps\": {}, \"train_seconds\": {:.3f}, "
      "\"first_loss\": {:.4f}, \"last_loss\": {:.4f}}}\n",
      options.unrolled ? "unrolled" : "while", config ? fmt::format("worker {}", task) : "local",
      options.device, accuracy, static_cast<double>(step) / static_cast<double>(steps_per_epoch),
      options.batch_size, step, train_seconds, first_loss, last_loss);
  return absl::OkStatus();
}

constexpr char kUsage[] =
    "usage: lstm_fashion_mnist [--data DIR] [--epochs N>=1] [--steps N>=1] [--batch N>=1] "
    "[--threads N>=0] [--log_every N>=1] [--train_rows N>=1] [--test_rows N>=1] [--unrolled] "
    "[--quiet] [--device auto|cpu|gpu] [--ps_hosts H:P,... --worker_hosts H:P,... --job_name ps|worker "
    "--task_index N>=0]\n";

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
  RETURN_IF_ERROR(whole_number("log_every", int64_t{1}, &options.log_every));
  RETURN_IF_ERROR(whole_number("train_rows", int64_t{1}, &options.train_rows));
  RETURN_IF_ERROR(whole_number("test_rows", int64_t{1}, &options.test_rows));
  for (const char* flag : {"ps_hosts", "worker_hosts", "job_name", "task_index"}) {
    if (const std::optional<std::string> value = parsed.Value(flag)) {
      options.cluster_flags[flag] = *value;
    }
  }
  options.unrolled = parsed.Has("unrolled");
  options.quiet = parsed.Has("quiet");
  options.device = parsed.Value("device").value_or(options.device);
  if (options.device != "auto" && options.device != "cpu" && options.device != "gpu") {
    return absl::InvalidArgumentError(
        fmt::format("--device '{}': expected auto, cpu or gpu", options.device));
  }
  return options;
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  using rill::examples::kUsage;
  const absl::StatusOr<rill::cli::ParsedArgs> parsed = rill::cli::ParseOptionsOnly(
      {argv + 1, argv + argc},
      {"data", "epochs", "steps", "batch", "threads", "log_every", "train_rows", "test_rows",
       "ps_hosts", "worker_hosts", "job_name", "task_index", "device"},
      {"unrolled", "quiet"});
  if (!parsed.ok()) {
    return rill::cli::PrintUsageError("lstm_fashion_mnist", parsed.status(), kUsage);
  }
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  const absl::StatusOr<rill::examples::Options> options = rill::examples::ParseOptions(*parsed);
  if (!options.ok()) {
    return rill::cli::PrintUsageError("lstm_fashion_mnist", options.status(), kUsage);
  }
  absl::Status status;
  if (options->cluster_flags.empty()) {
    status = rill::examples::Run(*options, std::nullopt);
  } else {
    const absl::StatusOr<rill::ServerConfig> config =
        rill::ServerConfigFromFlags(options->cluster_flags);
    if (!config.ok()) {
      return rill::cli::PrintUsageError("lstm_fashion_mnist", config.status(), kUsage);
    }
    if (!config->cluster.HasJob("ps") || !config->cluster.HasJob("worker")) {
      return rill::cli::PrintUsageError(
          "lstm_fashion_mnist",
          absl::InvalidArgumentError("--ps_hosts and --worker_hosts: both jobs are needed"),
          kUsage);
    }
    status = config->task.job == "ps" ? rill::examples::RunPs(*config)
                                      : rill::examples::Run(*options, *config);
  }
  if (!status.ok()) {
    std::fprintf(stderr, "lstm_fashion_mnist: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
