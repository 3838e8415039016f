// The Fashion-MNIST classifiers the examples train, with their Adam
// training ops: the 784-128(relu)-10 MLP (fashion_mnist_mlp, the training
// benchmark, distributed_mnist) and a small CNN (distributed_mnist --model cnn).
#ifndef RILL_EXAMPLES_FASHION_MLP_MODEL_H_
#define RILL_EXAMPLES_FASHION_MLP_MODEL_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/ops.h"
#include "ops/partitioned_variable.h"
#include "ops/variable.h"
#include "runtime/training/optimizer.h"

namespace rill::examples {

struct FashionModel {
  // Placeholders "x" (float [?, 784], pixels in [0, 1]) and "labels" (int32 [?]).
  Output loss;      // Mean cross-entropy, a float scalar.
  Output accuracy;  // Fraction of labels predicted, a float scalar.
  Operation train;  // One Adam step on the four variables.
  Operation init;   // Glorot-uniform weights (seeded), zero biases, Adam's slots.
};

struct FashionModelOptions {
  float learning_rate = 0.001f;
  // Incremented by every training step when given (between-graph training
  // counts steps across workers with it).
  const Variable* global_step = nullptr;
  // Cuts each weight matrix into parts along its rows (PartitionedVariable)
  // when set; the parts are among the variables training updates.
  Partitioner partitioner;
  // Builds the training op from Adam, the loss and the variables (a
  // synchronous or staleness-bounded step); unset: Adam's Minimize.
  std::function<absl::StatusOr<Operation>(const Scope&, Optimizer&, const Output& loss,
                                          const std::vector<Variable>& variables)>
      build_train;
};

absl::StatusOr<FashionModel> BuildFashionMlp(const Scope& root,
                                             const FashionModelOptions& options = {});
// conv 5x5x32 (relu, 2x2 max pool), conv 5x5x64 (relu, 2x2 max pool),
// dense 1024 (relu), dense 10, as TensorFlow's deep MNIST tutorial; the
// same placeholders as the MLP.
absl::StatusOr<FashionModel> BuildFashionCnn(const Scope& root,
                                             const FashionModelOptions& options = {});

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_FASHION_MLP_MODEL_H_
