// A node's signature: the flat input and output types its op's args expand
// to for the node's attrs (list args spelled out, references as _REF).
#ifndef RILL_GRAPH_NODE_SIGNATURE_H_
#define RILL_GRAPH_NODE_SIGNATURE_H_

#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/proto/node_def.pb.h"
#include "graph/proto/op_def.pb.h"
#include "graph/types.h"

namespace rill {

// The flat input and output types of a node: list args expanded (N * T,
// list(type)), reference args as _REF types. Errors when an attr the
// signature needs is missing or invalid.
struct NodeSignature {
  DataTypeVector input_types;
  DataTypeVector output_types;
  // For each OpDef input_arg / output_arg, its [begin, end) range of flat
  // slots.
  std::vector<std::pair<int, int>> input_arg_ranges;
  std::vector<std::pair<int, int>> output_arg_ranges;
};
absl::StatusOr<NodeSignature> ComputeNodeSignature(const NodeDef& node, const OpDef& op_def);

}  // namespace rill

#endif  // RILL_GRAPH_NODE_SIGNATURE_H_
