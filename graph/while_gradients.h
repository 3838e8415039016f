// The gradient of a while loop, as TensorFlow builds it: a loop that runs
// as many times as the forward one did, backwards over its saved values.
#ifndef RILL_GRAPH_WHILE_GRADIENTS_H_
#define RILL_GRAPH_WHILE_GRADIENTS_H_

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/control_flow.h"
#include "graph/graph.h"
#include "graph/scope.h"

namespace rill {

// One loop variable's primitives.
struct LoopVariable {
  Node* enter = nullptr;  // Not constant.
  Node* merge = nullptr;
  Node* switch_node = nullptr;  // Output 1 is the body's input.
  Node* exit = nullptr;         // Null when nothing reads the final value.
  Node* next_iteration = nullptr;
};

struct LoopStructure {
  int frame = 0;
  std::string frame_name;
  int parallel_iterations = 10;
  Node* loop_cond = nullptr;
  std::vector<LoopVariable> vars;
  std::vector<Node*> invariants;  // Its constant Enters.
};

// The primitives of the loop of `frame`; INVALID_ARGUMENT naming the node
// where the loop differs from the layout of tf.while_loop.
absl::StatusOr<LoopStructure> FindLoopStructure(const ControlFlowInfo& info, int frame);

// A gradient loop's frame: its name and parallel_iterations.
struct GradientFrame {
  std::string name;
  int parallel_iterations = 10;
};

// The gradient of sum(ys) with respect to `xs`, weighted by `grad_ys`,
// built in `scope` over one iteration of a loop body; `frames` are the
// gradient loops it is built in, outermost first.
using BodyGradientFn = std::function<absl::StatusOr<std::vector<Output>>(
    const Scope& scope, const std::vector<Output>& ys, const std::vector<Output>& xs,
    const std::vector<Output>& grad_ys, const std::vector<GradientFrame>& frames)>;

struct LoopGradients {
  std::vector<Output> vars;        // Per variable: the gradient of its Enter's input.
  std::vector<Output> invariants;  // Per invariant: the gradient of its input (null: none).
};

// Adds the loop's gradient given the gradients of its Exits (one per
// variable; null where none flows). The forward loop gets a counter, and
// each forward value the body's gradient reads is pushed on a stack every
// iteration and popped by the gradient loop, in reverse. For a loop inside
// another loop's body, `scope` builds inside the outer gradient loops
// `outer_frames` (outermost first) and maps the outer loop's forward values
// to theirs: each outer iteration gets its own stacks, whose handles the
// outer loops save as they save any value.
// Only the invariants `wanted` marks (one per loop.invariants; empty: all)
// get a gradient: the rest (a model's input) cost nothing per iteration.
absl::StatusOr<LoopGradients> AddWhileLoopGradient(
    const Scope& scope, const ControlFlowInfo& info, const LoopStructure& loop,
    const std::vector<Output>& exit_grads, const BodyGradientFn& body_gradients,
    const std::vector<GradientFrame>& outer_frames = {}, const std::vector<bool>& wanted = {});

}  // namespace rill

#endif  // RILL_GRAPH_WHILE_GRADIENTS_H_
