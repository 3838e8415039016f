#include "graph/control_flow.h"

#include <algorithm>
#include <string>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "graph/control_flow_names.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

absl::Status NodeError(const Node& node, const std::string& message) {
  return absl::InvalidArgumentError(
      absl::StrFormat("node '%s' (%s): %s", node.name(), node.op(), message));
}

}  // namespace

bool ControlFlowInfo::IsBackEdge(const Edge& edge) {
  return !edge.IsControl() && IsNextIterationOp(edge.src->op()) && IsMergeOp(edge.dst->op());
}

std::string ControlFlowInfo::Describe(int frame) const {
  if (frame == 0) return "the root frame";
  return absl::StrFormat("frame '%s'", frames[frame].name);
}

absl::StatusOr<ControlFlowInfo> BuildControlFlowInfo(const Graph& graph) {
  ControlFlowInfo info;
  info.frames.push_back(FrameInfo{});
  info.frame_of.assign(graph.num_nodes(), 0);
  info.output_frame_of.assign(graph.num_nodes(), 0);
  absl::flat_hash_map<std::string, int> frame_by_name;

  // Frames flow from inputs to consumers: nodes go in a topological order
  // (back edges left out), which ids are unless edges were added later.
  std::vector<int> waiting(graph.num_nodes(), 0);
  std::vector<const Node*> order;
  for (const Node* node : graph.nodes()) {
    for (const Edge* edge : node->in_edges()) {
      if (edge != nullptr && !ControlFlowInfo::IsBackEdge(*edge)) ++waiting[node->id()];
    }
    if (waiting[node->id()] == 0) order.push_back(node);
  }
  for (size_t next = 0; next < order.size(); ++next) {
    for (const Edge* edge : order[next]->out_edges()) {
      if (!ControlFlowInfo::IsBackEdge(*edge) && --waiting[edge->dst->id()] == 0) {
        order.push_back(edge->dst);
      }
    }
  }
  if (order.size() != static_cast<size_t>(graph.num_nodes())) {
    return absl::InvalidArgumentError("graph has a cycle that is not a loop");
  }

  for (const Node* node : order) {
    int frame = -1;
    const Node* first_source = nullptr;
    for (const Edge* edge : node->in_edges()) {
      if (edge == nullptr || ControlFlowInfo::IsBackEdge(*edge)) continue;
      const int source_frame = info.output_frame_of[edge->src->id()];
      if (frame < 0) {
        frame = source_frame;
        first_source = edge->src;
      } else if (source_frame != frame) {
        return NodeError(
            *node, absl::StrFormat("has inputs from different frames: '%s' is in %s, '%s' in %s",
                                   first_source->name(), info.Describe(frame), edge->src->name(),
                                   info.Describe(source_frame)));
      }
    }
    if (frame < 0) frame = 0;
    info.frame_of[node->id()] = frame;
    int output_frame = frame;
    const std::string& op = node->op();
    if (IsEnterOp(op)) {
      ASSIGN_OR_RETURN(std::string name, GetStringAttr(node->def(), "frame_name"));
      if (name.empty()) return NodeError(*node, "frame_name is empty");
      ASSIGN_OR_RETURN(int64_t parallel, GetIntAttr(node->def(), "parallel_iterations"));
      if (parallel < 1) {
        return NodeError(
            *node, absl::StrFormat("parallel_iterations is %d; it must be at least 1", parallel));
      }
      auto [it, inserted] = frame_by_name.emplace(name, static_cast<int>(info.frames.size()));
      if (inserted) {
        FrameInfo child;
        child.name = name;
        child.parent = frame;
        child.depth = info.frames[frame].depth + 1;
        child.parallel_iterations = static_cast<int>(parallel);
        info.frames.push_back(std::move(child));
      } else if (info.frames[it->second].parent != frame) {
        const Node* other = info.frames[it->second].enters.front();
        return NodeError(
            *node, absl::StrFormat("enters frame '%s' from %s, but '%s' enters it from %s", name,
                                   info.Describe(frame), other->name(),
                                   info.Describe(info.frames[it->second].parent)));
      }
      output_frame = it->second;
      info.frames[output_frame].enters.push_back(node);
    } else if (IsExitOp(op) || IsNextIterationOp(op) || IsLoopCondOp(op)) {
      if (frame == 0) {
        return NodeError(*node,
                         "is not inside a loop: its inputs are in the root frame (a loop "
                         "is entered through Enter nodes)");
      }
      if (IsExitOp(op)) {
        output_frame = info.frames[frame].parent;
        info.frames[frame].exits.push_back(node);
      }
    }
    info.output_frame_of[node->id()] = output_frame;
  }

  // A NextIteration's outputs are its loop's back edges: they must reach a
  // Merge of the same frame (whose frame was decided by its other inputs).
  for (const Node* node : graph.nodes()) {
    if (!IsNextIterationOp(node->op())) continue;
    bool feeds_merge = false;
    for (const Edge* edge : node->out_edges()) {
      if (edge->IsControl()) continue;
      if (!IsMergeOp(edge->dst->op())) {
        return NodeError(*node, absl::StrFormat("feeds '%s' (%s); a NextIteration may only feed "
                                                "its loop's Merge",
                                                edge->dst->name(), edge->dst->op()));
      }
      const int merge_frame = info.frame_of[edge->dst->id()];
      if (merge_frame != info.frame_of[node->id()]) {
        return NodeError(*node, absl::StrFormat("is in %s but feeds Merge '%s' in %s",
                                                info.Describe(info.frame_of[node->id()]),
                                                edge->dst->name(), info.Describe(merge_frame)));
      }
      feeds_merge = true;
    }
    if (!feeds_merge) {
      return NodeError(*node, "feeds no Merge: a loop's NextIteration must feed its Merge");
    }
    // A loop invariant is live in every iteration, the last too: fed
    // straight back it would start iterations forever.
    const Edge* in = node->num_inputs() > 0 ? node->input_edge(0) : nullptr;
    const bool waits = std::any_of(node->in_edges().begin(), node->in_edges().end(),
                                   [](const Edge* e) { return e != nullptr && e->IsControl(); });
    if (in != nullptr && !waits && IsEnterOp(in->src->op()) &&
        GetBoolAttr(in->src->def(), "is_constant").value_or(false)) {
      return NodeError(
          *node, absl::StrFormat("reads the loop invariant '%s' (a constant Enter) and waits for "
                                 "nothing in its iteration, so the loop would never end; pass "
                                 "it through an op of the body",
                                 in->src->name()));
    }
  }
  return info;
}

}  // namespace rill
