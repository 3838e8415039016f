#include "runtime/session/run_signature.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

bool EndpointLess(const TensorEndpoint& a, const TensorEndpoint& b) {
  return a.node->name() != b.node->name() ? a.node->name() < b.node->name() : a.index < b.index;
}

bool EndpointEqual(const TensorEndpoint& a, const TensorEndpoint& b) {
  return a.node == b.node && a.index == b.index;
}

// A tensor name as a feed or fetch, with TensorFlow's messages.
absl::StatusOr<TensorEndpoint> ResolveTensor(const Graph& graph, const std::string& name,
                                             bool is_feed) {
  ASSIGN_OR_RETURN(TensorId id, ParseTensorName(name));
  if (id.IsControl()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "%s %s: a control input names no tensor", is_feed ? "FeedInputs:" : "FetchOutputs", name));
  }
  const std::string canonical = absl::StrFormat("%s:%d", id.node, id.index);
  const Node* node = graph.FindNode(id.node);
  if (node == nullptr) {
    return absl::NotFoundError(
        is_feed ? absl::StrFormat("FeedInputs: unable to find feed output %s", canonical)
                : absl::StrFormat("FetchOutputs node %s: not found", canonical));
  }
  if (id.index >= node->num_outputs()) {
    return absl::InvalidArgumentError(
        is_feed ? absl::StrFormat("FeedInputs: %s should have output index < %d", canonical,
                                  node->num_outputs())
                : absl::StrFormat("FetchOutputs %s: output index too large, must be < %d",
                                  canonical, node->num_outputs()));
  }
  return TensorEndpoint{node, id.index};
}

}  // namespace

absl::StatusOr<RunSignature> ResolveNames(const Graph& graph, const std::vector<std::string>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets) {
  if (fetches.empty() && targets.empty()) {
    return absl::InvalidArgumentError("Must specify at least one target to fetch or execute.");
  }
  RunSignature sig;
  for (const std::string& name : feeds) {
    ASSIGN_OR_RETURN(TensorEndpoint feed, ResolveTensor(graph, name, /*is_feed=*/true));
    sig.feeds.push_back(feed);
  }
  sig.feed_order.resize(feeds.size());
  for (size_t i = 0; i < feeds.size(); ++i) sig.feed_order[i] = static_cast<int>(i);
  std::sort(sig.feed_order.begin(), sig.feed_order.end(),
            [&](int a, int b) { return EndpointLess(sig.feeds[a], sig.feeds[b]); });
  std::vector<TensorEndpoint> sorted_feeds;
  for (int i : sig.feed_order) {
    if (!sorted_feeds.empty() && EndpointEqual(sorted_feeds.back(), sig.feeds[i])) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s fed more than once.", sig.feeds[i].ToString()));
    }
    sorted_feeds.push_back(sig.feeds[i]);
  }
  sig.feeds = std::move(sorted_feeds);

  std::vector<TensorEndpoint> requested;
  for (const std::string& name : fetches) {
    ASSIGN_OR_RETURN(TensorEndpoint fetch, ResolveTensor(graph, name, /*is_feed=*/false));
    requested.push_back(fetch);
  }
  sig.fetches = requested;
  std::sort(sig.fetches.begin(), sig.fetches.end(), EndpointLess);
  sig.fetches.erase(std::unique(sig.fetches.begin(), sig.fetches.end(), EndpointEqual),
                    sig.fetches.end());
  for (const TensorEndpoint& fetch : requested) {
    sig.fetch_of.push_back(static_cast<int>(
        std::lower_bound(sig.fetches.begin(), sig.fetches.end(), fetch, EndpointLess) -
        sig.fetches.begin()));
  }

  // As in TensorFlow, a target is a node name exactly ("a", not "a:0").
  std::vector<std::string> not_found;
  for (const std::string& name : targets) {
    const Node* node = graph.FindNode(name);
    if (node == nullptr) {
      not_found.push_back(name);
    } else {
      sig.targets.push_back(node);
    }
  }
  if (!not_found.empty()) {
    return absl::NotFoundError(absl::StrCat("PruneForTargets: Some target nodes not found: ",
                                            absl::StrJoin(not_found, " ")));
  }
  std::sort(sig.targets.begin(), sig.targets.end(),
            [](const Node* a, const Node* b) { return a->name() < b->name(); });
  sig.targets.erase(std::unique(sig.targets.begin(), sig.targets.end()), sig.targets.end());

  const auto join_endpoints = [](const std::vector<TensorEndpoint>& endpoints) {
    std::vector<std::string> names;
    for (const TensorEndpoint& e : endpoints) names.push_back(e.ToString());
    return absl::StrJoin(names, ",");
  };
  std::vector<std::string> target_names;
  for (const Node* node : sig.targets) target_names.push_back(node->name());
  sig.key = absl::StrCat(join_endpoints(sig.feeds), ";", join_endpoints(sig.fetches), ";",
                         absl::StrJoin(target_names, ","));
  return sig;
}

absl::StatusOr<std::vector<const Node*>> Prune(const Graph& graph, const RunSignature& sig) {
  absl::flat_hash_set<std::pair<int, int>> fed;
  absl::flat_hash_set<int> fed_placeholders;
  for (const TensorEndpoint& feed : sig.feeds) {
    fed.insert({feed.node->id(), feed.index});
    if (feed.node->op() == "Placeholder") fed_placeholders.insert(feed.node->id());
  }
  std::vector<char> needed(graph.num_nodes(), 0);
  std::vector<const Node*> stack;
  const auto visit = [&](const Node* node) {
    if (needed[node->id()] || fed_placeholders.contains(node->id())) return;
    needed[node->id()] = 1;
    stack.push_back(node);
  };
  for (const TensorEndpoint& fetch : sig.fetches) {
    if (!fed.contains({fetch.node->id(), fetch.index})) visit(fetch.node);
  }
  for (const Node* target : sig.targets) visit(target);
  while (!stack.empty()) {
    const Node* node = stack.back();
    stack.pop_back();
    for (const Edge* edge : node->in_edges()) {
      if (!edge->IsControl() && fed.contains({edge->src->id(), edge->src_output})) continue;
      visit(edge->src);
    }
  }
  std::vector<const Node*> nodes;
  for (const Node* node : graph.nodes()) {
    if (!needed[node->id()]) continue;
    if (node->op() == "Placeholder") {
      // Placeholders have no kernel: a needed one must be fed.
      const DataType dtype = node->output_type(0);
      absl::StatusOr<PartialTensorShape> shape = GetShapeAttr(node->def(), "shape");
      std::string message =
          absl::StrFormat("You must feed a value for placeholder tensor '%s' with dtype %s",
                          node->name(), DataTypeString(dtype));
      if (shape.ok() && !shape->unknown_rank()) {
        absl::StrAppend(&message, " and shape ", shape->DebugString());
      }
      return absl::InvalidArgumentError(message);
    }
    nodes.push_back(node);
  }
  return nodes;
}

}  // namespace rill
