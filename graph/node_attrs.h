// A node's attrs: typed access, the OpDef's defaults filled in, and
// validation against the OpDef (kinds, allowed values, minimums).
#ifndef RILL_GRAPH_NODE_ATTRS_H_
#define RILL_GRAPH_NODE_ATTRS_H_

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/proto/node_def.pb.h"
#include "graph/proto/op_def.pb.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"

namespace rill {

// Typed access. Errors: NOT_FOUND when the attr is missing, INVALID_ARGUMENT
// when it holds another kind (both naming the attr).
absl::StatusOr<int64_t> GetIntAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<float> GetFloatAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<bool> GetBoolAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<std::string> GetStringAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<DataType> GetTypeAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<PartialTensorShape> GetShapeAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<const TensorProto*> GetTensorAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<std::vector<int64_t>> GetIntListAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<std::vector<std::string>> GetStringListAttr(const NodeDef& node,
                                                           std::string_view name);
absl::StatusOr<DataTypeVector> GetTypeListAttr(const NodeDef& node, std::string_view name);
absl::StatusOr<std::vector<PartialTensorShape>> GetShapeListAttr(const NodeDef& node,
                                                                 std::string_view name);

// Adds the OpDef's default for every attr the node does not set.
void AddDefaultsToNodeDef(const OpDef& op_def, NodeDef* node);

// Checks the node's attrs against the op: every attr of the op present, of
// the right kind, within allowed values and minimums; no unknown attr
// (names starting with '_' are internal and always allowed). Assumes
// defaults were filled. Messages name the attr, not the node (the caller
// adds the node).
absl::Status ValidateNodeAttrs(const NodeDef& node, const OpDef& op_def);

}  // namespace rill

#endif  // RILL_GRAPH_NODE_ATTRS_H_
