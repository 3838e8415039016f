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
#include "runtime/session.h"
#include "runtime/training/optimizer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

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

  std::mt19937 random(7);
  std::uniform_real_distribution<float> unit(0.f, 1.f);
  std::vector<float> pixels(static_cast<size_t>(batch) * 784);
  for (float& p : pixels) p = unit(random);
  std::vector<int32_t> labels(static_cast<size_t>(batch));
  for (int32_t& l : labels) l = static_cast<int32_t>(random() % 10);
  auto out =
      (*session)->Run({{"x", Tensor::FromVector<float>(pixels, TensorShape({batch, 784}))},
                       {"labels", Tensor::FromVector<int32_t>(labels, TensorShape({batch}))}},
                      fetches);
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

}  // namespace
}  // namespace rill
