// Functions from C++: part of a Scope's graph turned into a FunctionDef, as
// TensorFlow's graph_to_functiondef does, and a call to one in another graph.
#ifndef RILL_GRAPH_FUNCTION_BUILDER_H_
#define RILL_GRAPH_FUNCTION_BUILDER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/proto/function.pb.h"
#include "graph/scope.h"

namespace rill {

struct FunctionOutputs {
  std::vector<Output> values = {};
  // The results' names; empty: "output_0", "output_1", ...
  std::vector<std::string> names = {};
  // Nodes the call waits for without reading them (a variable's update).
  std::vector<Operation> control = {};
};

// The function `name` that computes `outputs` from `inputs` in `body`
// (typically a root Scope's graph, its inputs Placeholders). Its body is
// every node an output depends on, back to the inputs; each input becomes
// an argument named after its node (lower case, "_" for what an argument
// name may not hold). INVALID_ARGUMENT names the node when the outputs read
// a Placeholder that is not an input, or when a name is invalid.
absl::StatusOr<FunctionDef> GraphToFunctionDef(const Graph& body, const std::string& name,
                                               const std::vector<Output>& inputs,
                                               const FunctionOutputs& outputs);

// Adds `function` to the library of `scope`'s graph (once: a second add of
// the same definition is a no-op, of another one under the same name an
// error) and calls it on `args`: a StatefulPartitionedCall when the
// function has stateful nodes, else a PartitionedCall. Returns its results.
absl::StatusOr<std::vector<Output>> CallFunction(const Scope& scope, const FunctionDef& function,
                                                 const std::vector<Output>& args);

}  // namespace rill

#endif  // RILL_GRAPH_FUNCTION_BUILDER_H_
