// Linear regression the TensorFlow 1.x way: placeholders for the data, two
// variables, a squared loss and gradient descent, trained through a
// Session on points drawn from y = 2x + 10. With --logdir DIR it also
// writes what TensorFlow's tools read: a checkpoint every 100 steps (the
// newest 2 kept) and the loss as a TensorBoard scalar, and at the end
// restores the last checkpoint into a fresh session. The steps are counted
// on stderr (--quiet: not at all).
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/progress_line.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/session.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/meta_graph.h"
#include "runtime/training/optimizer.h"
#include "runtime/training/saver.h"
#include "runtime/training/summary_writer.h"

namespace rill::examples {
namespace {

constexpr int kPoints = 100;
constexpr int kSteps = 300;
constexpr double kLearningRate = 0.1;

absl::Status Run(const std::string& logdir, bool quiet) {
  const Scope root = ops::NewRootScope();
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1}));
  const Output y = ops::Placeholder(root.WithOpName("y"), DT_FLOAT, ops::Placeholder::Shape({-1}));
  const Variable w(root, "w", 0.f);
  const Variable b(root, "b", 0.f);
  const Output prediction = ops::Add(root, ops::Mul(root, x, w), b);
  const Output loss =
      ops::Mean(root.WithOpName("loss"), ops::Square(root, ops::Sub(root, prediction, y)), 0);
  GradientDescentOptimizer optimizer(kLearningRate);
  ASSIGN_OR_RETURN(const Operation train, optimizer.Minimize(root, loss, {w, b}));
  const Operation init = GlobalVariablesInitializer(root);
  const Output loss_summary = ops::ScalarSummary(root.WithOpName("loss_summary"), "loss", loss);
  SaverOptions saver_options;
  saver_options.max_to_keep = 2;
  ASSIGN_OR_RETURN(const std::unique_ptr<Saver> saver, Saver::Build(root, {w, b}, saver_options));
  ASSIGN_OR_RETURN(const GraphDef graph, root.ToGraphDef());

  std::mt19937 rng(1);
  std::uniform_real_distribution<float> uniform(-1.f, 1.f);
  std::vector<float> xs(kPoints), ys(kPoints);
  for (int i = 0; i < kPoints; ++i) {
    xs[i] = uniform(rng);
    ys[i] = 2.f * xs[i] + 10.f;
  }
  const std::vector<std::pair<std::string, Tensor>> feeds = {
      {"x", Tensor::FromVector<float>(xs, TensorShape({kPoints}))},
      {"y", Tensor::FromVector<float>(ys, TensorShape({kPoints}))}};

  ASSIGN_OR_RETURN(auto session, NewSession(SessionOptions(), graph));
  RETURN_IF_ERROR(session->Run({}, {}, {init.name()}).status());
  std::unique_ptr<SummaryWriter> events;
  const MetaGraphDef meta_graph = MakeMetaGraph(graph, &saver->saver_def());
  if (!logdir.empty()) {
    ASSIGN_OR_RETURN(events, SummaryWriter::Create(logdir));
    RETURN_IF_ERROR(events->AddGraph(graph));
  }
  ProgressLine progress("train", kSteps, {.enabled = !quiet});
  for (int step = 1; step <= kSteps; ++step) {
    RETURN_IF_ERROR(session->Run(feeds, {}, {train.name()}).status());
    progress.Update(step);
    if (events != nullptr && step % 10 == 0) {
      ASSIGN_OR_RETURN(auto summary, session->Run(feeds, {loss_summary.name()}));
      RETURN_IF_ERROR(events->AddSummary(summary[0].scalar<std::string>(), step));
    }
    if (!logdir.empty() && step % 100 == 0) {
      ASSIGN_OR_RETURN(const std::string prefix,
                       saver->Save(*session, logdir + "/model.ckpt", step, &meta_graph));
      progress.Clear();
      fmt::print("saved {}\n", prefix);
    }
    if (step % 50 == 0) {
      ASSIGN_OR_RETURN(auto values, session->Run(feeds, {"loss", "w", "b"}));
      progress.Clear();
      fmt::print("step {:4}  loss {:.6f}  w {:.4f}  b {:.4f}\n", step, values[0].scalar<float>(),
                 values[1].scalar<float>(), values[2].scalar<float>());
    }
  }
  progress.Finish();
  if (events != nullptr) {
    RETURN_IF_ERROR(events->Close());
    fmt::print("events: {}\n", events->path());
    // What was saved comes back in a session that never ran the initializer.
    ASSIGN_OR_RETURN(auto restored, NewSession(SessionOptions(), graph));
    const std::string latest = LatestCheckpoint(logdir).value_or("");
    RETURN_IF_ERROR(saver->Restore(*restored, latest));
    ASSIGN_OR_RETURN(auto values, restored->Run({}, {"w", "b"}));
    fmt::print("restored {}: w {:.4f}  b {:.4f}\n", latest, values[0].scalar<float>(),
               values[1].scalar<float>());
  }
  ASSIGN_OR_RETURN(auto values, session->Run(feeds, {"loss", "w", "b"}));
  fmt::print("result: {{\"w\": {}, \"b\": {}, \"loss\": {}, \"steps\": {}}}\n",
             values[1].scalar<float>(), values[2].scalar<float>(), values[0].scalar<float>(),
             kSteps);
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  constexpr char kUsage[] =
      "usage: linear_regression [--logdir DIR] [--quiet]\n"
      "  --logdir DIR  write checkpoints and TensorBoard events there, then restore the last\n"
      "  --quiet       no progress line on stderr\n";
  const absl::StatusOr<rill::cli::ParsedArgs> parsed =
      rill::cli::ParseOptionsOnly({argv + 1, argv + argc}, {"logdir"}, {"quiet"});
  if (!parsed.ok()) return rill::cli::PrintUsageError("linear_regression", parsed.status(), kUsage);
  if (parsed->help) return rill::cli::PrintHelp(kUsage);
  const absl::Status status =
      rill::examples::Run(parsed->Value("logdir").value_or(""), parsed->Has("quiet"));
  if (!status.ok()) {
    std::fprintf(stderr, "linear_regression: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
