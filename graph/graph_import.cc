#include <algorithm>
#include <functional>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/control_flow_names.h"
#include "graph/function_inline.h"
#include "graph/function_library.h"
#include "graph/graph.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

absl::Status NodeError(const NodeDef& def, const std::string& message) {
  return absl::InvalidArgumentError(
      absl::StrFormat("node '%s' (%s): %s", def.name(), def.op(), message));
}

// For each node, the indices of the nodes it reads from (data or control,
// with repeats), after checking names and inputs syntactically. A loop's
// back edge (a NextIteration feeding a Merge) is left out: it is the one
// edge that may close a cycle.
absl::StatusOr<std::vector<std::vector<int>>> ResolveInputs(const GraphDef& def) {
  absl::flat_hash_map<std::string, int> index_of;
  index_of.reserve(def.node_size());
  for (int i = 0; i < def.node_size(); ++i) {
    const NodeDef& node = def.node(i);
    if (!IsValidNodeName(node.name())) {
      return NodeError(node, "invalid node name; names match [A-Za-z0-9.][A-Za-z0-9_./]*");
    }
    auto [it, inserted] = index_of.emplace(node.name(), i);
    if (!inserted) {
      return NodeError(node,
                       absl::StrFormat("duplicate node name (nodes #%d and #%d)", it->second, i));
    }
  }

  std::vector<std::vector<int>> producers(def.node_size());
  for (int i = 0; i < def.node_size(); ++i) {
    const NodeDef& node = def.node(i);
    bool seen_control = false;
    for (int k = 0; k < node.input_size(); ++k) {
      const std::string& input = node.input(k);
      auto id = ParseTensorName(input);
      if (!id.ok()) {
        return NodeError(node, absl::StrFormat("input %d: %s", k, id.status().message()));
      }
      if (id->IsControl()) {
        seen_control = true;
      } else if (seen_control) {
        return NodeError(node, absl::StrFormat("data input '%s' follows a control input; "
                                               "control inputs must come last",
                                               input));
      }
      auto it = index_of.find(id->node);
      if (it == index_of.end()) {
        return NodeError(
            node, absl::StrFormat("input '%s' of node '%s' refers to unknown node '%s'", input,
                                  node.name(), id->node));
      }
      if (!id->IsControl() && IsMergeOp(node.op()) &&
          IsNextIterationOp(def.node(it->second).op())) {
        continue;
      }
      producers[i].push_back(it->second);
    }
  }
  return producers;
}

// Among nodes that Kahn's algorithm could not order, every one still waits
// for another of them, so walking back through waiting producers must
// revisit a node; the loop closed that way is a cycle.
std::string DescribeCycle(const GraphDef& def, const std::vector<std::vector<int>>& producers,
                          const std::vector<int>& pending) {
  int start = 0;
  while (pending[start] == 0) ++start;
  std::vector<int> position(def.node_size(), -1);
  std::vector<int> path;
  int current = start;
  while (position[current] < 0) {
    position[current] = static_cast<int>(path.size());
    path.push_back(current);
    int next = -1;
    for (int p : producers[current]) {
      if (pending[p] > 0 && (next < 0 || p < next)) next = p;
    }
    current = next;
  }
  // path runs from consumer to producer; a cycle reads in data-flow order.
  std::vector<int> cycle(path.begin() + position[current], path.end());
  std::reverse(cycle.begin(), cycle.end());
  std::rotate(cycle.begin(), std::min_element(cycle.begin(), cycle.end()), cycle.end());
  // A long cycle is shown by its start, so that the message stays short.
  constexpr size_t kMaxShown = 10;
  std::vector<std::string> names;
  for (size_t k = 0; k < cycle.size() && k < kMaxShown; ++k)
    names.push_back(def.node(cycle[k]).name());
  if (cycle.size() > kMaxShown) {
    names.push_back(absl::StrFormat("... (%d more)", cycle.size() - kMaxShown));
  }
  names.push_back(def.node(cycle.front()).name());
  return absl::StrJoin(names, " -> ");
}

// Kahn's algorithm; among ready nodes the one listed first in `def` goes
// first, so an already ordered graph keeps its order.
absl::StatusOr<std::vector<int>> TopologicalOrder(const GraphDef& def,
                                                  const std::vector<std::vector<int>>& producers) {
  const int n = def.node_size();
  std::vector<int> pending(n, 0);
  std::vector<std::vector<int>> consumers(n);
  for (int i = 0; i < n; ++i) {
    pending[i] = static_cast<int>(producers[i].size());
    for (int p : producers[i]) consumers[p].push_back(i);
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < n; ++i) {
    if (pending[i] == 0) ready.push(i);
  }
  std::vector<int> order;
  order.reserve(n);
  while (!ready.empty()) {
    const int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i]) {
      if (--pending[c] == 0) ready.push(c);
    }
  }
  if (static_cast<int>(order.size()) < n) {
    // Loops' cycles were left out above: what remains is not a loop.
    return absl::InvalidArgumentError("graph has a cycle: " +
                                      DescribeCycle(def, producers, pending));
  }
  return order;
}

// Graphs from before GraphDef version 22 wrote a Placeholder without a
// shape as one with a rank-0 shape attr, which TensorFlow reads as "any
// shape"; so do we, by saying so explicitly.
constexpr int kLastProducerWithLegacyPlaceholderShape = 21;

NodeDef UpgradeLegacyPlaceholderShape(NodeDef node) {
  if (node.op() != "Placeholder") return node;
  auto it = node.mutable_attr()->find("shape");
  if (it == node.mutable_attr()->end() || !it->second.has_shape()) return node;
  TensorShapeProto* shape = it->second.mutable_shape();
  if (shape->dim_size() == 0 && !shape->unknown_rank()) shape->set_unknown_rank(true);
  return node;
}

absl::StatusOr<std::unique_ptr<Graph>> ImportInlined(const GraphDef& def,
                                                     const OpRegistry& registry) {
  ASSIGN_OR_RETURN(std::vector<std::vector<int>> producers, ResolveInputs(def));
  ASSIGN_OR_RETURN(std::vector<int> order, TopologicalOrder(def, producers));
  auto graph = std::make_unique<Graph>(registry);
  graph->versions() = def.versions();
  graph->library() = def.library();
  const bool legacy_placeholders =
      def.versions().producer() <= kLastProducerWithLegacyPlaceholderShape;
  for (int i : order) {
    RETURN_IF_ERROR(graph->AddNode(legacy_placeholders ? UpgradeLegacyPlaceholderShape(def.node(i))
                                                       : def.node(i))
                        .status());
  }
  RETURN_IF_ERROR(graph->CheckBackEdgesResolved());
  return graph;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Graph>> ImportGraphDef(const GraphDef& def,
                                                      const OpRegistry& registry) {
  if (CallsFunctions(def)) {
    ASSIGN_OR_RETURN(GraphDef inlined, InlineFunctionCalls(def, registry));
    return ImportInlined(inlined, registry);
  }
  // The library is checked even when nothing calls it, as TensorFlow does;
  // the graph itself needs no copy.
  if (def.library().function_size() > 0) {
    RETURN_IF_ERROR(FunctionLibrary::Create(def.library(), registry).status());
  }
  return ImportInlined(def, registry);
}

}  // namespace rill
