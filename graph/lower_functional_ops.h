// TensorFlow's functional control flow (If, Case, While and their Stateless
// twins) lowered to Switch, Merge and loop frames around calls of their
// branch, cond and body functions, as lower_if_op.cc, lower_case_op.cc and
// lower_while_op.cc do; the inliner then replaces the calls.
#ifndef RILL_GRAPH_LOWER_FUNCTIONAL_OPS_H_
#define RILL_GRAPH_LOWER_FUNCTIONAL_OPS_H_

#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "graph/proto/node_def.pb.h"

namespace rill {

bool IsFunctionalControlFlow(std::string_view op);

// The nodes that stand for `node` (an If, StatelessIf, Case, StatelessCase,
// While or StatelessWhile): primitives named under it, PartitionedCalls of
// its functions, and last an IdentityN of its results under its own name
// (a NoOp when it has none) that waits until the branch taken, or the loop,
// is done. Every node takes `node`'s device. INVALID_ARGUMENT names the
// node when an attr is missing or a type does not fit.
absl::Status LowerFunctionalControlFlow(const NodeDef& node, std::vector<NodeDef>* out);

}  // namespace rill

#endif  // RILL_GRAPH_LOWER_FUNCTIONAL_OPS_H_
