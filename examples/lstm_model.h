// An LSTM classifier of Fashion-MNIST that reads each image as 28 rows of
// 28 pixels: its step as a tf.while_loop, or the same cell unrolled 28 times.
#ifndef RILL_EXAMPLES_LSTM_MODEL_H_
#define RILL_EXAMPLES_LSTM_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/ops.h"

namespace rill::examples {

struct LstmModel {
  // Placeholders "x" (float [?, 784], pixels in [0, 1]) and "labels" (int32 [?]).
  Output loss;      // Mean cross-entropy, a float scalar.
  Output accuracy;  // Fraction of labels predicted, a float scalar.
  Operation train;  // One Adam step on the four variables.
  Operation init;   // Glorot-uniform weights (seeded), zero biases, Adam's slots.
  // "lstm/kernel", "lstm/bias", "logits/weights", "logits/biases".
  std::vector<Variable> variables;
};

struct LstmModelOptions {
  int64_t hidden = 128;
  float learning_rate = 0.001f;
  // 28 copies of the cell and no loop; otherwise one WhileLoop over the rows.
  bool unrolled = false;
  int parallel_iterations = 10;
  // Where the four variables live (and Adam's slots and updates beside
  // them), e.g. "/job:ps/task:0"; empty: the scope's device, as the rest.
  std::string variable_device = "";
};

// The cell of TensorFlow's BasicLSTMCell (forget bias 1): one MatMul of
// [x_t, h] with "lstm/kernel" [28 + hidden, 4 * hidden] plus "lstm/bias"
// gives the gates i, j, f, o; c = c * sigmoid(f + 1) + sigmoid(i) *
// tanh(j), h = tanh(c) * sigmoid(o). Then "logits" (dense, hidden -> 10) on
// the last h, softmax cross-entropy, and Adam.
absl::StatusOr<LstmModel> BuildLstmClassifier(const Scope& root,
                                              const LstmModelOptions& options = {});

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_LSTM_MODEL_H_
