// A 784-128-10 multilayer perceptron (or --model cnn, the convolutional
// model of distributed_mnist) trained on Fashion-MNIST with Adam in one
// process: the data pipeline (IDX files, shuffled batches prefetched on a
// background thread) feeding placeholders, and one Session::Run per
// training step. --steps stops after that many steps instead of epochs.
//   fashion_mnist_mlp [--data DIR] [--epochs N] [--steps N] [--batch N] [--threads N]
//       [--model mlp|cnn]
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "examples/fashion_mlp_model.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "runtime/data/dataset.h"
#include "runtime/data/idx_reader.h"
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

  const Scope root = ops::NewRootScope();
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
  const bool live = isatty(fileno(stdout));
  const std::vector<std::string> fetches = {model.loss.name()};
  const std::vector<std::string> targets = {model.train.name()};
  const auto start = std::chrono::steady_clock::now();
  auto epoch_start = start;
  double epoch_loss = 0;
  int64_t step = 0;
  while (options.steps == 0 || step < options.steps) {
    ASSIGN_OR_RETURN(auto batch, batches->Next());
    if (!batch) break;
    ASSIGN_OR_RETURN(auto loss,
                     session->Run({{"x", (*batch)[0]}, {"labels", (*batch)[1]}}, fetches, targets));
    epoch_loss += loss[0].scalar<float>();
    ++step;
    const int64_t epoch = (step - 1) / steps_per_epoch + 1;
    const auto now = std::chrono::steady_clock::now();
    const double epoch_seconds = std::chrono::duration<double>(now - epoch_start).count();
    const int64_t epoch_step = (step - 1) % steps_per_epoch + 1;
    if (live && step % 50 == 0) {
      fmt::print("\rstep {:6}  epoch {}  loss {:.4f}  examples/s {:9.0f}", step, epoch,
                 loss[0].scalar<float>(),
                 static_cast<double>(epoch_step * options.batch_size) / epoch_seconds);
      std::fflush(stdout);
    }
    if (epoch_step == steps_per_epoch) {
      ASSIGN_OR_RETURN(auto accuracy, session->Run({{"x", test.images}, {"labels", test.labels}},
                                                   {model.accuracy.name()}));
      fmt::print("{}epoch {}  loss {:.4f}  {:.3f} s  examples/s {:.0f}  test accuracy {:.4f}\n",
                 live ? "\r" : "", epoch, epoch_loss / static_cast<double>(steps_per_epoch),
                 epoch_seconds, static_cast<double>(rows) / epoch_seconds,
                 accuracy[0].scalar<float>());
      epoch_loss = 0;
      epoch_start = std::chrono::steady_clock::now();
    }
  }
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSIGN_OR_RETURN(auto accuracy, session->Run({{"x", test.images}, {"labels", test.labels}},
                                               {model.accuracy.name()}));
  fmt::print(
      "result: {{\"model\": \"{}\", \"test_accuracy\": {:.4f}, \"epochs\": {:.2f}, "
      "\"batch_size\": {}, \"steps\": {}, \"train_seconds\": {:.3f}}}\n",
      options.model, accuracy[0].scalar<float>(),
      static_cast<double>(step) / static_cast<double>(steps_per_epoch), options.batch_size, step,
      train_seconds);
  return absl::OkStatus();
}

bool ParseOptions(int argc, char** argv, Options* options) {
  for (int i = 1; i < argc; i += 2) {
    const std::string_view flag = argv[i];
    if (i + 1 >= argc) return false;
    const char* value = argv[i + 1];
    if (flag == "--data") {
      options->data_dir = value;
    } else if (flag == "--epochs") {
      if (!absl::SimpleAtoi(value, &options->epochs) || options->epochs < 1) return false;
    } else if (flag == "--steps") {
      if (!absl::SimpleAtoi(value, &options->steps) || options->steps < 1) return false;
    } else if (flag == "--model") {
      options->model = value;
      if (options->model != "mlp" && options->model != "cnn") return false;
    } else if (flag == "--batch") {
      if (!absl::SimpleAtoi(value, &options->batch_size) || options->batch_size < 1) return false;
    } else if (flag == "--threads") {
      if (!absl::SimpleAtoi(value, &options->threads) || options->threads < 0) return false;
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  rill::examples::Options options;
  if (!rill::examples::ParseOptions(argc, argv, &options)) {
    std::fprintf(stderr,
                 "usage: fashion_mnist_mlp [--data DIR] [--epochs N>=1] [--steps N>=1] "
                 "[--batch N>=1] [--threads N>=0] [--model mlp|cnn]\n");
    return 2;
  }
  const absl::Status status = rill::examples::Run(options);
  if (!status.ok()) {
    std::fprintf(stderr, "fashion_mnist_mlp: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
