// RunSignature: one Run call's feeds, fetches and targets resolved against
// a graph (TensorFlow's messages for bad names), and the nodes they need.
#ifndef RILL_RUNTIME_SESSION_RUN_SIGNATURE_H_
#define RILL_RUNTIME_SESSION_RUN_SIGNATURE_H_

#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "graph/tensor_id.h"

namespace rill {

// In the canonical order a step is built for (sorted, fetches and targets
// without duplicates); `key` identifies the signature.
struct RunSignature {
  std::vector<TensorEndpoint> feeds;
  std::vector<int> feed_order;  // Index into the caller's feeds, per feed.
  std::vector<TensorEndpoint> fetches;
  std::vector<int> fetch_of;  // Per caller fetch: index into `fetches`.
  std::vector<const Node*> targets;
  std::string key;
};

// Errors: no fetch and no target, unknown names, bad output indices, a
// tensor fed twice (TensorFlow's messages).
absl::StatusOr<RunSignature> ResolveNames(const Graph& graph, const std::vector<std::string>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets);

// The nodes the fetches and targets need, walking inputs backwards and
// stopping at fed tensors. As in TensorFlow, a fed Placeholder also stands
// in for its control outputs, and never runs itself; an unfed one that is
// needed is an error.
absl::StatusOr<std::vector<const Node*>> Prune(const Graph& graph, const RunSignature& sig);

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_RUN_SIGNATURE_H_
