// WhileLoop: builds a tf.while_loop from C++ as TensorFlow's
// cc/ops/while_loop.h does: Enter, Merge, LoopCond, Switch, Exit, NextIteration.
#ifndef RILL_GRAPH_WHILE_LOOP_H_
#define RILL_GRAPH_WHILE_LOOP_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "graph/scope.h"

namespace rill::ops {

// Builds the loop condition from the loop variables: a bool scalar.
using CondGraphFn =
    std::function<absl::Status(const Scope& scope, const std::vector<Output>& inputs,
                               Output* output)>;
// Builds one iteration: the next values of the loop variables, as many as
// there are and of the same types.
using BodyGraphFn =
    std::function<absl::Status(const Scope& scope, const std::vector<Output>& inputs,
                               std::vector<Output>* outputs)>;

struct WhileLoopOptions {
  // The loop's frame; empty: the scope's unique name for "while".
  std::string frame_name = {};
  int parallel_iterations = 10;
};

// Adds `while (cond(vars)) vars = body(vars)` starting from `inputs`, and
// sets `outputs` to the final values. Ops that `cond` and `body` build run
// once per iteration (even constants, which read the loop's state as a
// control input), and a tensor from outside the loop that they read comes
// in through a loop-invariant Enter. Errors: those of `cond` or `body`, a
// body that returns the wrong number or types of values, a condition that
// is not a bool; all name the loop.
absl::Status WhileLoop(const Scope& scope, const std::vector<Output>& inputs,
                       const CondGraphFn& cond, const BodyGraphFn& body,
                       std::vector<Output>* outputs, const WhileLoopOptions& options = {});

}  // namespace rill::ops

#endif  // RILL_GRAPH_WHILE_LOOP_H_
