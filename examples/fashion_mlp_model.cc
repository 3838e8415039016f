#include "examples/fashion_mlp_model.h"

#include <cmath>
#include <vector>

#include "graph/status_macros.h"
#include "ops/variable.h"
#include "runtime/training/optimizer.h"

namespace rill::examples {
namespace {

// Glorot-uniform weights, as Keras and PyTorch-style initializers use: of
// shape `shape` (a part's, or fan_in x fan_out), seeded per part.
Output GlorotUniform(const Scope& scope, int64_t fan_in, int64_t fan_out, int64_t seed,
                     const std::vector<int64_t>& shape, int64_t part_offset = 0) {
  const float limit = std::sqrt(6.f / static_cast<float>(fan_in + fan_out));
  const Output unit =
      ops::RandomUniform(scope,
                         ops::Input(Tensor::FromVector<int64_t>(
                             shape, TensorShape({static_cast<int64_t>(shape.size())}))),
                         DT_FLOAT, ops::RandomUniform::Seed(seed).Seed2(seed + part_offset));
  return ops::Sub(scope, ops::Mul(scope, unit, 2 * limit), limit);
}

// The placeholders both models read: "x" (float [?, 784]) and "labels"
// (int32 [?]).
struct Inputs {
  Output x;
  Output labels;
};

Inputs MakeInputs(const Scope& root) {
  return {ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 784})),
          ops::Placeholder(root.WithOpName("labels"), DT_INT32, ops::Placeholder::Shape({-1}))};
}

// A fully connected layer "<name>/weights", "<name>/biases" (Glorot
// weights, zero biases), with a relu unless it gives the logits; its
// variables are appended to `vars`.
Output Dense(const Scope& root, const char* name, const Output& in, int64_t fan_in, int64_t fan_out,
             int64_t seed, bool relu, const Partitioner& partitioner, std::vector<Variable>* vars) {
  const Scope s = root.NewSubScope(name);
  Output weights;
  if (partitioner) {
    const PartitionedVariable w(
        s, "weights", TensorShape({fan_in, fan_out}), DT_FLOAT, partitioner,
        [&](const Scope& part, const SaveSliceInfo& slice) {
          return ops::Input(
              GlorotUniform(part, fan_in, fan_out, seed, slice.var_shape, slice.var_offset[0]));
        });
    vars->insert(vars->end(), w.parts().begin(), w.parts().end());
    weights = w;
  } else {
    const Variable w(s, "weights", GlorotUniform(s, fan_in, fan_out, seed, {fan_in, fan_out}));
    vars->push_back(w);
    weights = w;
  }
  const Variable b(s, "biases", ops::Fill(s, {fan_out}, 0.f));
  vars->push_back(b);
  const Output sum = ops::Add(s, ops::MatMul(s, in, weights), b);
  return relu ? Output(ops::Relu(s, sum)) : sum;
}

// Loss, accuracy, the Adam step and the initializer over `logits`.
absl::StatusOr<FashionModel> Finish(const Scope& root, const Output& logits, const Output& labels,
                                    const std::vector<Variable>& variables,
                                    const FashionModelOptions& options) {
  FashionModel m;
  const ops::SparseSoftmaxCrossEntropyWithLogits xent(root, logits, labels);
  m.loss = ops::Mean(root.WithOpName("loss"), xent.loss, 0);
  const Output predicted = ops::ArgMax(root, logits, 1, ops::ArgMax::OutputType(DT_INT32));
  m.accuracy = ops::Mean(root.WithOpName("accuracy"),
                         ops::Cast(root, ops::Equal(root, predicted, labels), DT_FLOAT), 0);
  AdamOptimizer adam(options.learning_rate);
  if (options.build_train) {
    ASSIGN_OR_RETURN(m.train, options.build_train(root, adam, m.loss, variables));
  } else {
    ASSIGN_OR_RETURN(m.train, adam.Minimize(root, m.loss, variables, options.global_step));
  }
  m.init = GlobalVariablesInitializer(root);
  RETURN_IF_ERROR(root.status());
  return m;
}

}  // namespace

absl::StatusOr<FashionModel> BuildFashionMlp(const Scope& root,
                                             const FashionModelOptions& options) {
  const Inputs in = MakeInputs(root);
  std::vector<Variable> vars;
  const Output hidden =
      Dense(root, "hidden", in.x, 784, 128, 1, /*relu=*/true, options.partitioner, &vars);
  const Output logits =
      Dense(root, "logits", hidden, 128, 10, 2, /*relu=*/false, options.partitioner, &vars);
  return Finish(root, logits, in.labels, vars, options);
}

absl::StatusOr<FashionModel> BuildFashionCnn(const Scope& root,
                                             const FashionModelOptions& options) {
  const Inputs in = MakeInputs(root);
  const Output images = ops::Reshape(root, in.x, {-1, 28, 28, 1});
  // A 5x5 convolution (relu) and a 2x2 max pool, halving height and width.
  const auto conv_pool = [&](const char* name, const Output& in, int64_t in_channels,
                             int64_t out_channels, int64_t seed, std::vector<Variable>* vars) {
    const Scope s = root.NewSubScope(name);
    const Output unit = ops::RandomUniform(s, {int64_t{5}, int64_t{5}, in_channels, out_channels},
                                           DT_FLOAT, ops::RandomUniform::Seed(seed).Seed2(seed));
    const float limit = std::sqrt(6.f / static_cast<float>(25 * (in_channels + out_channels)));
    const Variable w(s, "weights", ops::Sub(s, ops::Mul(s, unit, 2 * limit), limit));
    const Variable b(s, "biases", ops::Fill(s, {out_channels}, 0.f));
    vars->insert(vars->end(), {w, b});
    const Output conv = ops::Relu(s, ops::Add(s, ops::Conv2D(s, in, w, {1, 1, 1, 1}, "SAME"), b));
    return Output(ops::MaxPool(s, conv, {1, 2, 2, 1}, {1, 2, 2, 1}, "SAME"));
  };
  std::vector<Variable> vars;
  const Output pool1 = conv_pool("conv1", images, 1, 32, 3, &vars);
  const Output pool2 = conv_pool("conv2", pool1, 32, 64, 4, &vars);
  const Output flat = ops::Reshape(root, pool2, {-1, 7 * 7 * 64});
  const Output hidden =
      Dense(root, "hidden", flat, 7 * 7 * 64, 1024, 5, /*relu=*/true, options.partitioner, &vars);
  const Output logits =
      Dense(root, "logits", hidden, 1024, 10, 6, /*relu=*/false, options.partitioner, &vars);
  return Finish(root, logits, in.labels, vars, options);
}

}  // namespace rill::examples
