// A GraphDef's FunctionDefLibrary, checked, and its functions instantiated
// for given attrs: bodies in GraphDef form, ready to be inlined.
#ifndef RILL_GRAPH_FUNCTION_LIBRARY_H_
#define RILL_GRAPH_FUNCTION_LIBRARY_H_

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/op_registry.h"
#include "graph/proto/function.pb.h"
#include "graph/proto/node_def.pb.h"
#include "graph/types.h"

namespace rill {

using AttrMap = google::protobuf::Map<std::string, AttrValue>;

// A function instantiated for its attrs (type attrs, list lengths): the
// body's nodes in GraphDef form, with the names it was written with.
struct FunctionBody {
  // Per flat argument (a list argument spelled out): the name its readers
  // use as an input ("x", or "xs_0", "xs_1" for a list), and its type.
  std::vector<std::string> arg_nodes;
  DataTypeVector arg_types;
  // Inputs read "node:k" (flat output k), an argument's name, or "^node".
  // Attrs have their placeholders replaced and the op's defaults added.
  std::vector<NodeDef> nodes;
  // Per flat result: the tensor it returns ("node:k" or an argument).
  std::vector<std::string> rets;
  DataTypeVector ret_types;
  // The nodes (or arguments) a call waits for besides its results: those
  // with side effects (`control_ret`).
  std::vector<std::string> control_rets;
};

// Thread safety: const methods may be called concurrently.
class FunctionLibrary {
 public:
  // Checks each function on its own: a unique name that is not an op's,
  // well-formed signature arg names, a `ret` for every output and none
  // other, `control_ret` naming body nodes. Errors name the function.
  static absl::StatusOr<FunctionLibrary> Create(const FunctionDefLibrary& library,
                                                const OpRegistry& registry);

  // Null when `name` is not a function of the library.
  const FunctionDef* Find(std::string_view name) const;
  bool empty() const { return functions_.empty(); }

  // The signature of an op or of a function, for a node that calls it.
  absl::StatusOr<const OpDef*> Signature(std::string_view op) const;

  // The flat argument and result types of `name` called with `attrs`.
  absl::StatusOr<std::pair<DataTypeVector, DataTypeVector>> CallTypes(std::string_view name,
                                                                      const AttrMap& attrs) const;

  // `name` instantiated with `attrs` (every attr its signature declares).
  // Errors name the function and, inside it, the node: an input that names
  // nothing, a type that differs from what the op or the signature wants,
  // a missing or mistyped return.
  absl::StatusOr<FunctionBody> Instantiate(std::string_view name, const AttrMap& attrs) const;

 private:
  FunctionLibrary(const OpRegistry& registry) : registry_(&registry) {}

  const OpRegistry* registry_;
  absl::flat_hash_map<std::string, FunctionDef> functions_;
};

}  // namespace rill

#endif  // RILL_GRAPH_FUNCTION_LIBRARY_H_
