// Linear regression the TensorFlow 1.x way: placeholders for the data, two
// variables, a squared loss and gradient descent, trained through a
// Session on points drawn from y = 2x + 10.
#include <cstdio>
#include <random>
#include <vector>

#include "absl/status/status.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"

namespace rill::examples {
namespace {

constexpr int kPoints = 100;
constexpr int kSteps = 300;
constexpr double kLearningRate = 0.1;

absl::Status Run() {
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
  for (int step = 1; step <= kSteps; ++step) {
    RETURN_IF_ERROR(session->Run(feeds, {}, {train.name()}).status());
    if (step % 50 == 0) {
      ASSIGN_OR_RETURN(auto values, session->Run(feeds, {"loss", "w", "b"}));
      fmt::print("step {:4}  loss {:.6f}  w {:.4f}  b {:.4f}\n", step,
                 values[0].scalar<float>(), values[1].scalar<float>(), values[2].scalar<float>());
    }
  }
  ASSIGN_OR_RETURN(auto values, session->Run(feeds, {"loss", "w", "b"}));
  fmt::print("result: {{\"w\": {}, \"b\": {}, \"loss\": {}, \"steps\": {}}}\n",
             values[1].scalar<float>(), values[2].scalar<float>(), values[0].scalar<float>(),
             kSteps);
  return absl::OkStatus();
}

}  // namespace
}  // namespace rill::examples

int main() {
  const absl::Status status = rill::examples::Run();
  if (!status.ok()) {
    std::fprintf(stderr, "linear_regression: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
