// One training step of the Fashion-MNIST MLP (784-128-10, batch 64, Adam)
// through Session::Run with 1 and 2 threads, beside the same step written
// by hand with Eigen matrices: the floor a framework-free program reaches.
// The counter epoch_s is the time of 938 steps, one epoch of 60,000 images.
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "Eigen/Core"
#include "benchmark/benchmark.h"
#include "examples/fashion_mlp_model.h"
#include "graph/tensor.h"
#include "ops/ops.h"
#include "runtime/session.h"

namespace rill {
namespace {

constexpr int kBatch = 64;
constexpr int kPixels = 784;
constexpr int kHidden = 128;
constexpr int kClasses = 10;
constexpr double kStepsPerEpoch = 938;  // ceil(60000 / 64)

struct Batch {
  Tensor images{DT_FLOAT, TensorShape({kBatch, kPixels})};
  Tensor labels{DT_INT32, TensorShape({kBatch})};
};

Batch RandomBatch() {
  Batch batch;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> pixel(0.f, 1.f);
  for (int64_t i = 0; i < batch.images.NumElements(); ++i)
    batch.images.data<float>()[i] = pixel(rng);
  for (int i = 0; i < kBatch; ++i)
    batch.labels.data<int32_t>()[i] = static_cast<int32_t>(rng() % kClasses);
  return batch;
}

void ReportEpoch(benchmark::State& state) {
  state.counters["epoch_s"] =
      benchmark::Counter(1 / kStepsPerEpoch, benchmark::Counter::kIsIterationInvariantRate |
                                                 benchmark::Counter::kInvert);
}

// Session::Run of the training op with inter- and intra-op threads = arg.
void BM_MlpTrainingStep(benchmark::State& state) {
  const Scope root = ops::NewRootScope();
  auto model = examples::BuildFashionMlp(root);
  auto graph = root.ToGraphDef();
  if (!model.ok() || !graph.ok()) {
    state.SkipWithError("building the model failed");
    return;
  }
  SessionOptions options;
  options.inter_op_threads = static_cast<int>(state.range(0));
  options.intra_op_threads = static_cast<int>(state.range(0));
  auto session = NewSession(options, *graph);
  if (!session.ok() || !(*session)->Run({}, {}, {model->init.name()}).ok()) {
    state.SkipWithError("initializing the session failed");
    return;
  }
  const Batch batch = RandomBatch();
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", batch.images},
                                                             {"labels", batch.labels}};
  const std::vector<std::string> fetches = {model->loss.name()};
  const std::vector<std::string> targets = {model->train.name()};
  for (auto _ : state) {
    auto loss = (*session)->Run(feeds, fetches, targets);
    if (!loss.ok()) {
      state.SkipWithError(std::string(loss.status().message()).c_str());
      return;
    }
  }
  ReportEpoch(state);
}
BENCHMARK(BM_MlpTrainingStep)
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->UseRealTime()
    ->Unit(benchmark::kMicrosecond);

using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using RowVector = Eigen::RowVectorXf;

struct AdamSlot {
  explicit AdamSlot(Eigen::Index rows, Eigen::Index cols)
      : m(Matrix::Zero(rows, cols)), v(Matrix::Zero(rows, cols)) {}
  Matrix m, v;
};

// Adam exactly as ApplyAdam computes it (learning rate 0.001).
void AdamUpdate(Eigen::Ref<Matrix> var, const Matrix& grad, AdamSlot& slot, int step) {
  constexpr float kRate = 0.001f, kBeta1 = 0.9f, kBeta2 = 0.999f, kEpsilon = 1e-7f;
  const float rate = kRate * std::sqrt(1 - std::pow(kBeta2, static_cast<float>(step))) /
                     (1 - std::pow(kBeta1, static_cast<float>(step)));
  slot.m.array() += (grad.array() - slot.m.array()) * (1 - kBeta1);
  slot.v.array() += (grad.array().square() - slot.v.array()) * (1 - kBeta2);
  var.array() -= slot.m.array() * rate / (slot.v.array().sqrt() + kEpsilon);
}

// The same step by hand: forward, softmax cross-entropy, backward and four
// Adam updates on one thread, into preallocated matrices.
void BM_MlpStepEigenBaseline(benchmark::State& state) {
  const Batch batch = RandomBatch();
  const Eigen::Map<const Matrix> x(batch.images.data<float>(), kBatch, kPixels);
  const int32_t* labels = batch.labels.data<int32_t>();
  Matrix w1 = Matrix::Random(kPixels, kHidden) * 0.08f;
  Matrix b1 = Matrix::Zero(1, kHidden);
  Matrix w2 = Matrix::Random(kHidden, kClasses) * 0.2f;
  Matrix b2 = Matrix::Zero(1, kClasses);
  AdamSlot s_w1(kPixels, kHidden), s_b1(1, kHidden), s_w2(kHidden, kClasses), s_b2(1, kClasses);
  Matrix hidden(kBatch, kHidden), logits(kBatch, kClasses), d_hidden(kBatch, kHidden);
  Matrix d_w1(kPixels, kHidden), d_w2(kHidden, kClasses);
  int step = 0;
  for (auto _ : state) {
    ++step;
    hidden.noalias() = x * w1;
    hidden = (hidden.rowwise() + b1.row(0)).cwiseMax(0.f);
    logits.noalias() = hidden * w2;
    logits.rowwise() += b2.row(0);
    // Softmax, then d(mean loss)/d(logits) = (softmax - one_hot) / batch.
    float loss = 0;
    for (int i = 0; i < kBatch; ++i) {
      auto row = logits.row(i);
      row.array() = (row.array() - row.maxCoeff()).exp();
      const float sum = row.sum();
      row /= sum;
      loss -= std::log(row(labels[i]));
      row(labels[i]) -= 1;
    }
    benchmark::DoNotOptimize(loss);
    logits /= static_cast<float>(kBatch);
    d_w2.noalias() = hidden.transpose() * logits;
    d_hidden.noalias() = logits * w2.transpose();
    d_hidden = (hidden.array() > 0).select(d_hidden, 0.f);
    d_w1.noalias() = x.transpose() * d_hidden;
    AdamUpdate(w1, d_w1, s_w1, step);
    AdamUpdate(b1, d_hidden.colwise().sum(), s_b1, step);
    AdamUpdate(w2, d_w2, s_w2, step);
    AdamUpdate(b2, logits.colwise().sum(), s_b2, step);
  }
  ReportEpoch(state);
}
BENCHMARK(BM_MlpStepEigenBaseline)->UseRealTime()->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace rill

BENCHMARK_MAIN();
