// Tensor names as NodeDef inputs spell them ("node", "node:1", "^node"):
// parsing, printing, and the grammar of node names.
#ifndef RILL_GRAPH_TENSOR_ID_H_
#define RILL_GRAPH_TENSOR_ID_H_

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace rill {

class Node;  // graph/graph.h

inline constexpr int kControlSlot = -1;

// A parsed NodeDef input: node name and output index (kControlSlot for
// "^node").
struct TensorId {
  std::string node;
  int index = 0;
  bool IsControl() const { return index == kControlSlot; }
  // "node" for index 0, "node:N", "^node" for control.
  std::string ToString() const;
  friend bool operator==(const TensorId&, const TensorId&) = default;
};

// Node names: [A-Za-z0-9.][A-Za-z0-9_./]* (a leading '_' is reserved).
bool IsValidNodeName(std::string_view name);

// Parses "node", "node:N" (N decimal, no leading zeros, no sign) and
// "^node". INVALID_ARGUMENT for anything else ("a:first", "_a", "a:01").
absl::StatusOr<TensorId> ParseTensorName(std::string_view name);

// One output of a node of a Graph ("node:k"), as the executor and the plans
// that feed and fetch it name it.
struct TensorEndpoint {
  const Node* node = nullptr;
  int index = 0;
  // "node:k", always with the index.
  std::string ToString() const;
};

}  // namespace rill

#endif  // RILL_GRAPH_TENSOR_ID_H_
