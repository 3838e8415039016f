// Symbolic differentiation: AddGradients extends a graph with the nodes
// that compute d(sum ys)/d(xs), like tf.gradients, from per-op functions.
#ifndef RILL_GRAPH_GRADIENTS_H_
#define RILL_GRAPH_GRADIENTS_H_

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/scope.h"

namespace rill {

// Given the gradients flowing into op's outputs (one per output; a null
// Output where no gradient flows), appends one gradient per data input of
// `op` to `grad_inputs` (a null Output for inputs that get none, such as
// integer indices). `scope` is already under "gradients/...".
using GradientFunction =
    std::function<absl::Status(const Scope& scope, const Operation& op,
                               const std::vector<Output>& grad_outputs,
                               std::vector<Output>* grad_inputs)>;

// Thread safety: register everything first; lookups may then run
// concurrently.
class GradientRegistry {
 public:
  void Register(std::string op, GradientFunction fn);
  // Ops declared as having no gradient (shape queries, comparisons):
  // nothing flows back through them, and that is not an error.
  void RegisterNoGradient(std::string op);
  // nullptr for a no-gradient op; NOT_FOUND naming the op when unknown.
  absl::StatusOr<const GradientFunction*> Lookup(std::string_view op) const;

 private:
  absl::flat_hash_map<std::string, GradientFunction> functions_;
  absl::flat_hash_map<std::string, bool> no_gradient_;
};

// Whether values of `dtype` carry gradients (floating and complex types,
// resources, variants), as TensorFlow's IsTrainable.
bool IsDifferentiableType(DataType dtype);

// Adds the gradient of sum(ys) (weighted by grad_ys; empty grad_ys means
// ones) with respect to each of `xs`. New nodes are named under
// "gradients/" (uniquified as tf.gradients does). An x that ys do not
// depend on gets a zeros tensor of x's shape. Fails naming the op when a
// path from x to y goes through an op without a gradient function.
absl::StatusOr<std::vector<Output>> AddGradients(const Scope& scope,
                                                 const std::vector<Output>& ys,
                                                 const std::vector<Output>& xs,
                                                 const std::vector<Output>& grad_ys,
                                                 const GradientRegistry& registry);

}  // namespace rill

#endif  // RILL_GRAPH_GRADIENTS_H_
