#include "examples/lstm_model.h"

#include <cmath>
#include <vector>

#include "graph/status_macros.h"
#include "ops/variable.h"
#include "runtime/training/optimizer.h"

namespace rill::examples {
namespace {

constexpr int64_t kRows = 28;     // Steps of the sequence.
constexpr int64_t kColumns = 28;  // Features of a step.

// Glorot-uniform [fan_in, fan_out] weights, seeded.
Output GlorotUniform(const Scope& scope, int64_t fan_in, int64_t fan_out, int64_t seed) {
  const float limit = std::sqrt(6.f / static_cast<float>(fan_in + fan_out));
  const Output unit = ops::RandomUniform(scope, {fan_in, fan_out}, DT_FLOAT,
                                         ops::RandomUniform::Seed(seed).Seed2(seed));
  return ops::Sub(scope, ops::Mul(scope, unit, 2 * limit), limit);
}

struct CellWeights {
  Output kernel;  // [kColumns + hidden, 4 * hidden]
  Output bias;    // [4 * hidden]
};

struct CellState {
  Output c;
  Output h;
};

// One step of the cell on the row `x` ([batch, kColumns]).
CellState LstmCell(const Scope& s, const CellWeights& w, const Output& x, const CellState& state) {
  const Output xh = ops::ConcatV2(s, {x, state.h}, 1);
  const Output gates = ops::BiasAdd(s, ops::MatMul(s, xh, w.kernel), w.bias);
  const ops::Split split(s, 1, gates, 4);
  const Output& i = split.output[0];
  const Output& j = split.output[1];
  const Output& f = split.output[2];
  const Output& o = split.output[3];
  const Output c = ops::Add(s, ops::Mul(s, state.c, ops::Sigmoid(s, ops::Add(s, f, 1.f))),
                            ops::Mul(s, ops::Sigmoid(s, i), ops::Tanh(s, j)));
  const Output h = ops::Mul(s, ops::Tanh(s, c), ops::Sigmoid(s, o));
  return {c, h};
}

// The last h of the cell run over the rows of `sequence` ([kRows, batch,
// kColumns]) from `start`: the loop variables are the step, c and h; the
// weights and the sequence enter as loop invariants.
absl::StatusOr<Output> RunLoop(const Scope& s, const CellWeights& w, const Output& sequence,
                               const CellState& start, int parallel_iterations) {
  const auto cond = [](const Scope& cs, const std::vector<Output>& in, Output* out) {
    *out = ops::Less(cs, in[0], static_cast<int32_t>(kRows));
    return cs.status();
  };
  const auto body = [&](const Scope& bs, const std::vector<Output>& in,
                        std::vector<Output>* out) -> absl::Status {
    const Output x = ops::GatherV2(bs, sequence, in[0], 0);
    const CellState next = LstmCell(bs, w, x, {in[1], in[2]});
    *out = {ops::Add(bs, in[0], 1), next.c, next.h};
    return bs.status();
  };
  std::vector<Output> outputs;
  ops::WhileLoopOptions loop_options;
  loop_options.parallel_iterations = parallel_iterations;
  RETURN_IF_ERROR(ops::WhileLoop(s, {ops::Const(s, 0), start.c, start.h}, cond, body, &outputs,
                                 loop_options));
  return outputs[2];
}

Output RunUnrolled(const Scope& s, const CellWeights& w, const Output& sequence, CellState state) {
  const ops::Unpack rows(s, sequence, kRows);
  for (int64_t t = 0; t < kRows; ++t) state = LstmCell(s, w, rows.output[t], state);
  return state.h;
}

}  // namespace

absl::StatusOr<LstmModel> BuildLstmClassifier(const Scope& root, const LstmModelOptions& options) {
  const int64_t hidden = options.hidden;
  const Output x =
      ops::Placeholder(root.WithOpName("x"), DT_FLOAT, ops::Placeholder::Shape({-1, 784}));
  const Output labels =
      ops::Placeholder(root.WithOpName("labels"), DT_INT32, ops::Placeholder::Shape({-1}));

  const Scope s = root.NewSubScope("lstm");
  // [batch, 784] -> [kRows, batch, kColumns]: a row of the images per step.
  const Output sequence =
      ops::Transpose(s, ops::Reshape(s, x, {int64_t{-1}, kRows, kColumns}), {1, 0, 2});
  // The variables' scopes: their initial values are built beside them.
  const Scope vs = options.variable_device.empty() ? s : s.WithDevice(options.variable_device);
  const Variable kernel(vs, "kernel", GlorotUniform(vs, kColumns + hidden, 4 * hidden, 1));
  const Variable bias(vs, "bias", ops::Fill(vs, {4 * hidden}, 0.f));
  const CellWeights weights{kernel, bias};
  const Output batch = ops::Slice(s, ops::Shape(s, x), {0}, {1});
  const Output zeros = ops::Fill(
      s, ops::ConcatV2(s, {batch, ops::Const(s, {static_cast<int32_t>(hidden)})}, 0), 0.f);
  Output last;
  if (options.unrolled) {
    last = RunUnrolled(s, weights, sequence, {zeros, zeros});
  } else {
    ASSIGN_OR_RETURN(last,
                     RunLoop(s, weights, sequence, {zeros, zeros}, options.parallel_iterations));
  }

  const Scope d = root.NewSubScope("logits");
  const Scope dv = options.variable_device.empty() ? d : d.WithDevice(options.variable_device);
  const Variable dense(dv, "weights", GlorotUniform(dv, hidden, 10, 2));
  const Variable dense_bias(dv, "biases", ops::Fill(dv, {int64_t{10}}, 0.f));
  const Output logits = ops::BiasAdd(d, ops::MatMul(d, last, dense), dense_bias);

  LstmModel m;
  m.variables = {kernel, bias, dense, dense_bias};
  const ops::SparseSoftmaxCrossEntropyWithLogits xent(root, logits, labels);
  m.loss = ops::Mean(root.WithOpName("loss"), xent.loss, 0);
  const Output predicted = ops::ArgMax(root, logits, 1, ops::ArgMax::OutputType(DT_INT32));
  m.accuracy = ops::Mean(root.WithOpName("accuracy"),
                         ops::Cast(root, ops::Equal(root, predicted, labels), DT_FLOAT), 0);
  RETURN_IF_ERROR(root.status());
  AdamOptimizer adam(options.learning_rate);
  ASSIGN_OR_RETURN(m.train, adam.Minimize(root, m.loss, m.variables));
  m.init = GlobalVariablesInitializer(root);
  RETURN_IF_ERROR(root.status());
  return m;
}

}  // namespace rill::examples
