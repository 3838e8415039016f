#include "graph/while_loop.h"

#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "graph/attr_value_util.h"
#include "graph/control_flow_names.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"

namespace rill::ops {
namespace {

Output One(const Scope& scope, std::string_view op, const Output& input) {
  return Output(NodeBuilder(scope.WithOpName(op), op).Input(input).Finalize(), 0);
}

absl::Status LoopError(const std::string& frame, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrFormat("while loop '%s': %s", frame, status.message()));
}

}  // namespace

absl::Status WhileLoop(const Scope& scope, const std::vector<Output>& inputs,
                       const CondGraphFn& cond, const BodyGraphFn& body,
                       std::vector<Output>* outputs, const WhileLoopOptions& options) {
  RETURN_IF_ERROR(scope.status());
  // Enters run in the frame around the loop, so they keep the scope's
  // control dependencies; the rest runs in the loop's frame, where those
  // cannot reach.
  const Scope outer = scope.NewSubScope("while");
  const Scope loop = outer.WithNoControlDependencies();
  std::string frame = options.frame_name;
  if (frame.empty()) frame = outer.name_prefix().substr(0, outer.name_prefix().size() - 1);
  if (inputs.empty())
    return LoopError(frame, absl::InvalidArgumentError("it has no loop variables"));
  if (options.parallel_iterations < 1) {
    return LoopError(frame, absl::InvalidArgumentError(
                                absl::StrFormat("parallel_iterations is %d; it must be at least 1",
                                                options.parallel_iterations)));
  }
  Graph* graph = scope.graph();
  const int start = graph->num_nodes();
  // A variable read in the loop (a reference) enters through a RefEnter,
  // as TensorFlow's: every iteration then reads its value at the time, and
  // may assign it. The type is the input's as the loop's surroundings read
  // it (an enclosing loop or cond may bring it in first). By value: the
  // mapper below lives in the scopes handed to cond and body.
  const auto enter = [outer, frame, parallel = options.parallel_iterations](const Output& input,
                                                                            bool is_constant) {
    const Output mapped = outer.MapInput(input);
    const char* op = is_constant && IsRefType(mapped.type()) ? "RefEnter" : "Enter";
    return Output(NodeBuilder(outer.WithOpName("Enter"), op)
                      .Input(mapped)
                      .Attr("frame_name", MakeAttr(frame))
                      .Attr("is_constant", MakeAttr(is_constant))
                      .Attr("parallel_iterations", MakeAttr(parallel))
                      .Finalize(),
                  0);
  };
  // What the condition and the body read from outside the loop enters it
  // once, as a loop invariant.
  auto invariants = std::make_shared<absl::flat_hash_map<std::pair<Node*, int>, Output>>();
  const Scope::InputMapper capture = [start, invariants, enter](const Output& input) {
    // A null input (an op that failed to build) stays null: the scope
    // holds its error.
    if (!input.ok() || input.node()->id() >= start) return input;
    auto [it, inserted] = invariants->try_emplace({input.node(), input.index()});
    if (inserted) it->second = enter(input, /*is_constant=*/true);
    return it->second;
  };

  std::vector<Output> merges;
  for (const Output& input : inputs) {
    const Output entered = enter(input, false);
    merges.push_back(Output(
        NodeBuilder(loop.WithOpName("Merge"), "Merge").Input({entered, entered}).Finalize(), 0));
  }
  RETURN_IF_ERROR(scope.status());

  // Ops without inputs from the loop (constants) still run once per
  // iteration: they wait for the loop's state.
  Output condition;
  const Scope cond_scope =
      loop.NewSubScope("cond").WithControlDependencies(merges[0]).WithInputMapper(capture);
  if (absl::Status status = cond(cond_scope, merges, &condition); !status.ok()) {
    return LoopError(frame, status);
  }
  RETURN_IF_ERROR(scope.status());
  if (!IsValidOutput(condition) || condition.type() != DT_BOOL) {
    return LoopError(frame,
                     absl::InvalidArgumentError(absl::StrFormat(
                         "the condition must be a bool scalar, got %s",
                         IsValidOutput(condition) ? DataTypeString(condition.type()) : "nothing")));
  }
  const Output loop_cond = One(loop, "LoopCond", capture(condition));

  std::vector<Output> body_inputs;
  outputs->clear();
  for (const Output& merge : merges) {
    const Operation switched =
        NodeBuilder(loop.WithOpName("Switch"), "Switch").Input(merge).Input(loop_cond).Finalize();
    outputs->push_back(One(loop, "Exit", Output(switched, 0)));
    body_inputs.push_back(One(loop, "Identity", Output(switched, 1)));
  }
  RETURN_IF_ERROR(scope.status());

  std::vector<Output> body_outputs;
  const Scope body_scope =
      loop.NewSubScope("body").WithControlDependencies(body_inputs[0]).WithInputMapper(capture);
  if (absl::Status status = body(body_scope, body_inputs, &body_outputs); !status.ok()) {
    return LoopError(frame, status);
  }
  RETURN_IF_ERROR(scope.status());
  if (body_outputs.size() != inputs.size()) {
    return LoopError(frame, absl::InvalidArgumentError(
                                absl::StrFormat("the body returns %d values for %d loop variables",
                                                body_outputs.size(), inputs.size())));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!IsValidOutput(body_outputs[i])) {
      return LoopError(frame, absl::InvalidArgumentError(absl::StrFormat(
                                  "the body returns no valid value for loop variable %d", i)));
    }
    Output next_value = capture(body_outputs[i]);
    if (next_value.ok() && IsEnterOp(next_value.node()->op())) {
      // A value from outside the loop, returned as it entered, is live in
      // every iteration, the last included: it would start one more. As
      // TensorFlow's body ops that read only invariants, it waits for the
      // loop's state, which is dead once the loop ends.
      next_value = Output(
          NodeBuilder(body_scope.WithOpName("Identity"), "Identity").Input(next_value).Finalize(),
          0);
    }
    if (BaseType(next_value.type()) != BaseType(inputs[i].type())) {
      return LoopError(
          frame, absl::InvalidArgumentError(absl::StrFormat(
                     "the body returns %s for loop variable %d, which is %s",
                     DataTypeString(next_value.type()), i, DataTypeString(inputs[i].type()))));
    }
    const Output next = One(loop, "NextIteration", next_value);
    RETURN_IF_ERROR(scope.status());
    if (absl::Status status = graph->UpdateEdge(next.node(), 0, merges[i].node(), 1);
        !status.ok()) {
      scope.UpdateStatus(status);
      return LoopError(frame, status);
    }
  }
  return absl::OkStatus();
}

}  // namespace rill::ops
