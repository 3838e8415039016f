// Cond: builds a tf.cond from C++: a Switch on the predicate around each
// branch and a Merge of their results, so only the taken branch runs.
#ifndef RILL_GRAPH_COND_H_
#define RILL_GRAPH_COND_H_

#include <functional>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/scope.h"

namespace rill::ops {

// Builds one branch's results.
using BranchFn = std::function<absl::Status(const Scope& scope, std::vector<Output>* outputs)>;

// `pred ? then_fn() : else_fn()`, as tf.cond: both branches are built, the
// one not taken does not run (its ops are dead), and each result is the
// Merge of the two branches' values. A tensor from outside that a branch
// reads comes in through a Switch on `pred`, so that gradients flow only
// through the branch taken. Errors: a non-bool `pred`, the branches'
// errors, branches returning different numbers or types of values.
absl::StatusOr<std::vector<Output>> Cond(const Scope& scope, const Output& pred,
                                         const BranchFn& then_fn, const BranchFn& else_fn);

}  // namespace rill::ops

#endif  // RILL_GRAPH_COND_H_
