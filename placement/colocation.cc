#include "placement/colocation.h"

#include <algorithm>
#include <numeric>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"

namespace rill {

std::vector<ColocationLink> ColocationLinks(const Graph& graph) {
  std::vector<ColocationLink> links;
  for (const Node* node : graph.nodes()) {
    for (const Edge* edge : node->in_edges()) {
      if (edge == nullptr || edge->IsControl()) continue;
      const DataType type = node->input_type(edge->dst_input);
      if (IsRefType(type)) {
        links.push_back({edge->src->id(), node->id(), "ref edge", true});
      } else if (type == DT_RESOURCE) {
        links.push_back({edge->src->id(), node->id(), "resource edge", true});
      }
    }
    auto it = node->def().attr().find("_class");
    if (it == node->def().attr().end()) continue;
    std::vector<std::string> entries(it->second.list().s().begin(), it->second.list().s().end());
    if (it->second.value_case() == AttrValue::kS) entries.push_back(it->second.s());
    for (const std::string& entry : entries) {
      constexpr std::string_view kPrefix = "loc:@";
      if (!std::string_view(entry).starts_with(kPrefix)) continue;
      const Node* other = graph.FindNode(std::string_view(entry).substr(kPrefix.size()));
      if (other != nullptr && other != node) {
        links.push_back({other->id(), node->id(), "_class attr", false});
      }
    }
  }
  return links;
}

NodeSets::NodeSets(int num_nodes) : parent_(num_nodes) {
  std::iota(parent_.begin(), parent_.end(), 0);
}

int NodeSets::Find(int i) {
  while (parent_[i] != i) {
    parent_[i] = parent_[parent_[i]];
    i = parent_[i];
  }
  return i;
}

int NodeSets::Join(int a, int b) {
  a = Find(a);
  b = Find(b);
  parent_[std::max(a, b)] = std::min(a, b);
  return std::min(a, b);
}

std::vector<int> NodeSets::Roots() {
  std::vector<int> roots(parent_.size());
  for (size_t i = 0; i < parent_.size(); ++i) roots[i] = Find(static_cast<int>(i));
  return roots;
}

std::vector<int> ColocationGroups(const Graph& graph) {
  NodeSets sets(graph.num_nodes());
  for (const ColocationLink& link : ColocationLinks(graph)) sets.Join(link.a, link.b);
  return sets.Roots();
}

std::vector<std::string> ColocationReasons(const Graph& graph, const std::vector<int>& groups,
                                           const std::vector<ColocationLink>& links,
                                           const std::vector<std::string>& gave_way) {
  std::vector<std::vector<std::pair<int, const char*>>> adjacent(graph.num_nodes());
  for (const ColocationLink& link : links) {
    adjacent[link.a].emplace_back(link.b, link.kind);
    adjacent[link.b].emplace_back(link.a, link.kind);
  }
  std::vector<std::string> reasons(graph.num_nodes());
  std::vector<bool> seen(graph.num_nodes(), false);
  for (int root = 0; root < graph.num_nodes(); ++root) {
    if (groups[root] != root) continue;
    std::vector<int> queue = {root};
    seen[root] = true;
    for (size_t q = 0; q < queue.size(); ++q) {
      const int at = queue[q];
      for (const auto& [next, kind] : adjacent[at]) {
        if (seen[next]) continue;
        seen[next] = true;
        reasons[next] =
            absl::StrFormat("colocated with '%s' (%s)", graph.nodes()[at]->name(), kind);
        queue.push_back(next);
      }
    }
  }
  for (int i = 0; i < graph.num_nodes(); ++i) {
    if (!gave_way[i].empty()) {
      absl::StrAppendFormat(&reasons[i], "; its request %s gave way to its source's", gave_way[i]);
    }
  }
  return reasons;
}

}  // namespace rill
