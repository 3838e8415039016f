// The LSTM of lstm_fashion_mnist: the while loop and its gradient loop give
// the loss and gradients of the same cell unrolled 28 times.
#include "examples/lstm_model.h"

#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

// Fixed random pixels and labels.
std::vector<std::pair<std::string, Tensor>> Batch(int batch) {
  std::mt19937 random(7);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<float> pixels(static_cast<size_t>(batch) * 784);
  for (float& p : pixels) p = unit(random);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t& l : labels) l = static_cast<int32_t>(random() % 10);
  return {{"x", Tensor::FromVector<float>(pixels, TensorShape({batch, 784}))},
          {"labels", Tensor::FromVector<int32_t>(labels, TensorShape({batch}))}};
}

// The loss and d(loss)/d(variable) for each variable, from fixed weights
// (the seeded initializers) and fixed inputs.
std::vector<Tensor> LossAndGradients(bool unrolled, int batch) {
  const Scope root = ops::NewRootScope();
  auto model = examples::BuildLstmClassifier(root, {.hidden = 8, .unrolled = unrolled});
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  AdamOptimizer probe;
  auto grads = probe.ComputeGradients(root.NewSubScope("probe"), model->loss, model->variables);
  EXPECT_TRUE(grads.ok()) << grads.status();
  if (!grads.ok()) return {};
  std::vector<std::string> fetches = {model->loss.name()};
  for (const GradientAndVariable& g : *grads) {
    EXPECT_TRUE(g.gradient.ok()) << g.variable.ref().name();
    if (g.gradient.ok()) fetches.push_back(g.gradient.name());
  }
  auto graph = root.ToGraphDef();
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  auto session = NewSession(SessionOptions(), *graph);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  EXPECT_TRUE((*session)->Run({}, {}, {model->init.name()}).ok());

  auto out = (*session)->Run(Batch(batch), fetches);
  EXPECT_TRUE(out.ok()) << out.status();
  return out.ok() ? *out : std::vector<Tensor>{};
}

TEST(LstmModel, WhileLoopGivesTheLossAndGradientsOfTheUnrolledCell) {
  const std::vector<Tensor> loop = LossAndGradients(/*unrolled=*/false, 3);
  const std::vector<Tensor> unrolled = LossAndGradients(/*unrolled=*/true, 3);
  ASSERT_EQ(loop.size(), 5u);
  ASSERT_EQ(unrolled.size(), 5u);
  const char* names[] = {"loss", "lstm/kernel", "lstm/bias", "logits/weights", "logits/biases"};
  for (size_t i = 0; i < loop.size(); ++i) {
    ASSERT_EQ(loop[i].shape(), unrolled[i].shape()) << names[i];
    const float* a = loop[i].data<float>();
    const float* b = unrolled[i].data<float>();
    int reported = 0;
    for (int64_t k = 0; k < loop[i].NumElements(); ++k) {
      if (std::abs(a[k] - b[k]) > 1e-5f + 1e-4f * std::abs(b[k]) && reported++ < 5) {
        ADD_FAILURE() << names[i] << "[" << k << "]: loop " << a[k] << ", unrolled " << b[k];
      }
    }
  }
}

// The losses of `steps` Adam steps on the same batch.
std::vector<float> TrainingLosses(const Scope& root, const examples::LstmModelOptions& options,
                                  const SessionOptions& session_options, int steps) {
  auto model = examples::BuildLstmClassifier(root, options);
  EXPECT_TRUE(model.ok()) << model.status();
  if (!model.ok()) return {};
  auto graph = root.ToGraphDef();
  EXPECT_TRUE(graph.ok()) << graph.status();
  if (!graph.ok()) return {};
  auto session = NewSession(session_options, *graph);
  EXPECT_TRUE(session.ok()) << session.status();
  if (!session.ok()) return {};
  EXPECT_TRUE((*session)->Run({}, {}, {model->init.name()}).ok());
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    auto out = (*session)->Run(Batch(4), {model->loss.name()}, {model->train.name()});
    EXPECT_TRUE(out.ok()) << out.status();
    if (!out.ok()) break;
    losses.push_back((*out)[0].scalar<float>());
  }
  return losses;
}

// Between-graph placement: the weights (and Adam's slots) on a ps, the
// loop and its gradient loop on a worker, the kernel read across tasks.
TEST(LstmModel, TrainsOnAWorkerWithTheWeightsOnAPs) {
  const std::vector<float> local =
      TrainingLosses(ops::NewRootScope(), {.hidden = 8}, SessionOptions(), 3);
  ServerOptions server;
  server.log = LogSink::Discard();
  auto cluster = Server::CreateLocalCluster({{"worker", 1}, {"ps", 1}}, server);
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  SessionOptions remote;
  remote.target = (*cluster)[0]->target();
  const std::vector<float> distributed =
      TrainingLosses(ops::NewRootScope().WithDevice("/job:worker/task:0"),
                     {.hidden = 8, .variable_device = "/job:ps/task:0"}, remote, 3);
  ASSERT_EQ(local.size(), 3u);
  ASSERT_EQ(distributed.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(distributed[i], local[i], 1e-5) << i;
  EXPECT_LT(local[2], local[0]);
}

}  // namespace
}  // namespace rill
