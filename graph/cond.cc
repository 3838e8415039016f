#include "graph/cond.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"

namespace rill::ops {
namespace {

absl::Status CondError(const Scope& scope, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrFormat("cond '%s': %s", scope.name_prefix(), status.message()));
}

}  // namespace

absl::StatusOr<std::vector<Output>> Cond(const Scope& scope, const Output& pred,
                                         const BranchFn& then_fn, const BranchFn& else_fn) {
  RETURN_IF_ERROR(scope.status());
  const Scope cond = scope.NewSubScope("cond");
  if (!IsValidOutput(pred) || BaseType(pred.type()) != DT_BOOL) {
    return CondError(cond, absl::InvalidArgumentError(absl::StrFormat(
                               "the predicate must be a bool scalar, got %s",
                               IsValidOutput(pred) ? DataTypeString(pred.type()) : "nothing")));
  }
  const int start = scope.graph()->num_nodes();
  // A reference (a variable) comes through a RefSwitch, as TensorFlow's
  // _SwitchRefOrTensor: the branch gets the variable itself, to assign,
  // and nothing reads it when the branch is not taken (it may be
  // uninitialized then). The type is the input's as this cond reads it: an
  // enclosing loop may bring it in through an Enter first.
  const auto switch_of = [cond, pred](const Output& input) {
    const Output mapped = cond.MapInput(input);
    const char* op = IsRefType(mapped.type()) ? "RefSwitch" : "Switch";
    return NodeBuilder(cond.WithOpName("Switch"), op).Input(mapped).Input(pred).Finalize();
  };
  // The pivots: every op a branch builds waits for its own, so even a
  // constant runs only in the taken branch.
  const Operation pivot_switch = switch_of(pred);
  const Output pivot_false(NodeBuilder(cond.WithOpName("switch_f"), "Identity")
                               .Input(Output(pivot_switch, 0))
                               .Finalize(),
                           0);
  const Output pivot_true(
      NodeBuilder(cond.WithOpName("switch_t"), "Identity").Input(Output(pivot_switch, 1)).Finalize(),
      0);
  RETURN_IF_ERROR(scope.status());

  auto switches = std::make_shared<absl::flat_hash_map<std::pair<Node*, int>, Operation>>();
  const auto capture = [start, switches, switch_of](int branch) -> Scope::InputMapper {
    return [start, switches, switch_of, branch](const Output& input) {
      // A null input (an op that failed to build) stays null: the scope
      // holds its error.
      if (!input.ok() || input.node()->id() >= start) return input;
      auto [it, inserted] = switches->try_emplace({input.node(), input.index()});
      if (inserted) it->second = switch_of(input);
      if (!it->second.ok()) return Output();
      return Output(it->second, branch);
    };
  };
  std::vector<Output> results[2];  // [0]: else, [1]: then.
  const BranchFn* fns[2] = {&else_fn, &then_fn};
  const Output pivots[2] = {pivot_false, pivot_true};
  const char* names[2] = {"else", "then"};
  for (int branch : {1, 0}) {
    const Scope branch_scope = cond.NewSubScope(names[branch])
                                   .WithControlDependencies(pivots[branch])
                                   .WithInputMapper(capture(branch));
    if (absl::Status status = (*fns[branch])(branch_scope, &results[branch]); !status.ok()) {
      return CondError(cond, status);
    }
    RETURN_IF_ERROR(scope.status());
    for (Output& result : results[branch]) {
      if (!IsValidOutput(result)) {
        return CondError(cond, absl::InvalidArgumentError(
                                   absl::StrFormat("the %s branch returns an invalid value", names[branch])));
      }
      result = capture(branch)(result);
    }
  }
  if (results[0].size() != results[1].size()) {
    return CondError(cond, absl::InvalidArgumentError(absl::StrFormat(
                               "the then branch returns %d values, the else branch %d",
                               results[1].size(), results[0].size())));
  }
  std::vector<Output> outputs;
  for (size_t i = 0; i < results[0].size(); ++i) {
    const Output& on_false = results[0][i];
    const Output& on_true = results[1][i];
    if (BaseType(on_false.type()) != BaseType(on_true.type())) {
      return CondError(cond, absl::InvalidArgumentError(absl::StrFormat(
                                 "value %d is %s in the then branch but %s in the else branch", i,
                                 DataTypeString(on_true.type()),
                                 DataTypeString(on_false.type()))));
    }
    outputs.push_back(Output(
        NodeBuilder(cond.WithOpName("Merge"), "Merge").Input({on_false, on_true}).Finalize(), 0));
  }
  RETURN_IF_ERROR(scope.status());
  return outputs;
}

}  // namespace rill::ops
