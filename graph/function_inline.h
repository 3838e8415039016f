// Function calls replaced by their functions' bodies, once per graph and
// before placement, as TensorFlow inlines them: placer, partitioner and
// executor never see a call.
#ifndef RILL_GRAPH_FUNCTION_INLINE_H_
#define RILL_GRAPH_FUNCTION_INLINE_H_

#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "graph/proto/graph.pb.h"

namespace rill {

// The attr of a call left in the graph because its function uses an op
// that is not registered: why. Its kernel fails a step that runs it with
// that reason, and the rest of the graph runs.
inline constexpr char kUninlinedCallAttr[] = "_uninlined_call";

// Whether a node of `graph` calls a function: a PartitionedCall or
// StatefulPartitionedCall, a functional If, Case or While, or a node whose
// op is a function of the graph's library (as TensorFlow allows).
bool CallsFunctions(const GraphDef& graph);

// `graph` with every call replaced by its function's body, nested calls
// too, and functional If, Case and While lowered to the primitives
// (graph/lower_functional_ops.h) around calls of their functions. A call's node becomes an
// IdentityN of the function's results under the same name (a NoOp when it returns nothing) that
// also waits for the function's `control_ret` nodes, so fetches, feeds and control dependencies on
// it keep working. Body nodes are named "call/node", take the call's device when they ask for none,
// and wait for the call's control inputs. The library stays with the graph. Errors name the calling
// node and the function: a function that is not defined, a wrong argument count or type, a missing
// or mistyped return, recursion. A function that uses an op that is not registered is not an error
// here: its call stays, as a StatefulPartitionedCall with kUninlinedCallAttr, so that a SavedModel
// whose other signatures need such ops still serves the ones that do not.
absl::StatusOr<GraphDef> InlineFunctionCalls(const GraphDef& graph, const OpRegistry& registry);

}  // namespace rill

#endif  // RILL_GRAPH_FUNCTION_INLINE_H_
