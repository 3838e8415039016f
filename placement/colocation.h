// What ties nodes to one device: `_class: loc:@x` entries and reference or
// resource edges, the groups they form, and why each member follows.
#ifndef RILL_PLACEMENT_COLOCATION_H_
#define RILL_PLACEMENT_COLOCATION_H_

#include <string>
#include <vector>

#include "graph/graph.h"

namespace rill {

// Why two nodes must share a device; `kind` is printed in reasons. Along a
// reference or resource edge `a` is the source (the variable), whose
// request wins over the consumer's, as in TensorFlow.
struct ColocationLink {
  int a;
  int b;
  const char* kind;
  bool source_wins;
};

// Every link of `graph`, by node id. A `loc:@NAME` naming a node not in the
// graph is ignored, as TensorFlow ignores it.
std::vector<ColocationLink> ColocationLinks(const Graph& graph);

// Union-find over node ids whose roots are the lowest id of each set, so a
// group is named by its first node.
class NodeSets {
 public:
  explicit NodeSets(int num_nodes);
  int Find(int i);
  // Joins the sets of a and b; returns the root of the result.
  int Join(int a, int b);
  // Per node, its set's root.
  std::vector<int> Roots();

 private:
  std::vector<int> parent_;
};

// The colocation group of every node (same value = same group), indexed by
// Node::id(): the sets that ColocationLinks join.
std::vector<int> ColocationGroups(const Graph& graph);

// For each member of a group but its root, the neighbour through which it
// joined, so its placement reason can say why it follows ("colocated with
// 'w' (ref edge)"), and `gave_way[i]`, when not empty, the request node i
// gave up to follow its source.
std::vector<std::string> ColocationReasons(const Graph& graph, const std::vector<int>& groups,
                                           const std::vector<ColocationLink>& links,
                                           const std::vector<std::string>& gave_way);

}  // namespace rill

#endif  // RILL_PLACEMENT_COLOCATION_H_
