#include "runtime/exec/fused_loop.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/control_flow_names.h"
#include "runtime/exec/frame_state.h"

namespace rill::executor_internal {
namespace {

struct InEdge {
  int32_t src;
  int32_t output;  // -1: a control edge.
  int32_t dst_slot;
};

// Builds one template's program; each check that fails leaves its reason.
class FusedLoopBuilder {
 public:
  FusedLoopBuilder(const FlowGraph& graph, int32_t tmpl, absl::Span<const FusedNodeFacts> facts)
      : graph_(graph), tmpl_(tmpl), facts_(facts), n_(static_cast<int32_t>(graph.nodes.size())) {}

  std::optional<FusedLoop> Build(std::string* why_not);

 private:
  bool Fail(std::string reason) {
    why_ = std::move(reason);
    return false;
  }
  std::string Named(int32_t id, std::string_view what) const {
    return absl::StrFormat("node '%s' (%s) %s", facts_[id].name, facts_[id].op, what);
  }
  bool InLoop(int32_t id) const { return graph_.nodes[id].frame == tmpl_; }
  std::string_view Op(int32_t id) const { return facts_[id].op; }
  bool IsSwitch(int32_t id) const { return IsSwitchOp(Op(id)); }
  bool IsLoopCond(int32_t id) const { return IsLoopCondOp(Op(id)); }
  // Checks the nodes one by one and finds the loop's skeleton.
  bool Classify();
  bool FindVars();
  // Appends where output `output` of `src` goes, through forwarded
  // Identity nodes; `in_body`: `src` runs only when the loop goes on.
  bool AppendDests(int32_t src, int32_t output, bool in_body, int32_t skip_slot);
  bool AddSteps();
  bool CheckPred() const;

  const FlowGraph& graph_;
  const int32_t tmpl_;
  const absl::Span<const FusedNodeFacts> facts_;
  const int32_t n_;
  std::string why_;
  FusedLoop loop_;
  std::vector<std::vector<InEdge>> in_edges_;  // Per node of the loop.
  std::vector<int32_t> members_;               // The loop's nodes, in order.
  std::vector<char> invariant_slot_;
  std::vector<int32_t> invariant_enter_;  // Per invariant slot: its constant Enter.
  std::vector<int32_t> var_of_merge_, var_of_switch_, var_of_next_;
  std::vector<char> body_;       // Runs only when the loop goes on.
  std::vector<char> forwarded_;  // An Identity whose value moves on untouched.
};

std::optional<FusedLoop> FusedLoopBuilder::Build(std::string* why_not) {
  for (const FlowTemplate& frame : graph_.frames) {
    if (frame.parent == tmpl_) {
      *why_not = "it holds a nested loop";
      return std::nullopt;
    }
  }
  in_edges_.resize(n_);
  for (int32_t src = 0; src < n_; ++src) {
    const FlowNode& node = graph_.nodes[src];
    for (int32_t e = node.edges_begin; e < node.edges_end; ++e) {
      const FlowEdge& edge = graph_.edges[e];
      if (InLoop(edge.dst)) in_edges_[edge.dst].push_back({src, edge.output, edge.dst_slot});
    }
    if (node.frame == tmpl_) members_.push_back(src);
  }
  if (!Classify() || !FindVars() || !AddSteps()) {
    *why_not = why_;
    return std::nullopt;
  }
  if (!CheckPred()) {
    *why_not = "nothing that runs in every iteration gives the LoopCond its value";
    return std::nullopt;
  }
  return std::move(loop_);
}

bool FusedLoopBuilder::Classify() {
  const FlowTemplate& t = graph_.frames[tmpl_];
  invariant_slot_.assign(t.num_input_slots, 0);
  invariant_enter_.assign(t.num_input_slots, -1);
  var_of_merge_.assign(n_, -1);
  var_of_switch_.assign(n_, -1);
  var_of_next_.assign(n_, -1);
  body_.assign(n_, 0);
  forwarded_.assign(n_, 0);
  int loop_conds = 0;
  for (int32_t id : members_) {
    const FlowNode& node = graph_.nodes[id];
    const std::string name(Op(id));
    if (node.kind == FlowKind::kTransfer) return Fail("it holds a _Send or _Recv");
    if (node.kind == FlowKind::kEnter || node.kind == FlowKind::kConstantEnter) {
      return Fail("it holds a nested loop");
    }
    if (!facts_[id].sync) return Fail("node of op " + name + " runs an async kernel");
    if (IsLoopCond(id)) {
      ++loop_conds;
      loop_.loop_cond = id;
      loop_.pred_slot = node.input_start;
    }
  }
  if (loop_conds != 1) return Fail("it has no single LoopCond");
  // What enters: constant Enters are invariants, the others start a variable.
  for (int32_t id = 0; id < n_; ++id) {
    const FlowNode& node = graph_.nodes[id];
    if ((node.kind != FlowKind::kEnter && node.kind != FlowKind::kConstantEnter) ||
        node.output_frame != tmpl_) {
      continue;
    }
    if (node.kind == FlowKind::kConstantEnter) {
      for (int32_t e = node.edges_begin; e < node.edges_end; ++e) {
        const FlowEdge& edge = graph_.edges[e];
        if (edge.dst_slot < 0) continue;
        invariant_slot_[edge.dst_slot] = 1;
        invariant_enter_[edge.dst_slot] = id;
      }
      continue;
    }
    if (node.edges_end - node.edges_begin != 1) return Fail("an Enter feeds more than a Merge");
    const FlowEdge& edge = graph_.edges[node.edges_begin];
    if (edge.dst_slot < 0 || graph_.nodes[edge.dst].kind != FlowKind::kMerge) {
      return Fail("an Enter feeds more than a Merge");
    }
    if (var_of_merge_[edge.dst] >= 0) return Fail("a Merge has two Enters");
    var_of_merge_[edge.dst] = static_cast<int32_t>(loop_.vars.size());
    FusedLoop::Var var;
    var.merge = edge.dst;
    var.enter_slot = edge.dst_slot;
    loop_.vars.push_back(std::move(var));
  }
  if (loop_.vars.empty()) return Fail("it has no loop variables");
  loop_.pred_is_invariant = invariant_slot_[loop_.pred_slot] != 0;
  return true;
}

bool FusedLoopBuilder::FindVars() {
  const auto data_inputs = [&](int32_t id, int want) {
    if (static_cast<int>(in_edges_[id].size()) != want) return false;
    for (const InEdge& in : in_edges_[id]) {
      if (in.output < 0) return false;
    }
    return true;
  };
  for (int32_t id : members_) {
    const FlowNode& node = graph_.nodes[id];
    if (node.kind == FlowKind::kMerge) {
      if (var_of_merge_[id] < 0 || !data_inputs(id, 2)) return Fail("a Merge is not a loop's");
    } else if (node.kind == FlowKind::kNextIteration) {
      // Control inputs only order it after nodes of its iteration, which
      // all run before the next iteration starts.
      int32_t data = 0;
      bool from_loop = false;
      for (const InEdge& in : in_edges_[id]) {
        if (in.output < 0) continue;
        ++data;
        from_loop = InLoop(in.src);
      }
      if (data != 1 || !from_loop) return Fail(Named(id, "reads a loop invariant"));
      if (node.edges_end - node.edges_begin != 1) return Fail(Named(id, "feeds more than its Merge"));
      const FlowEdge& edge = graph_.edges[node.edges_begin];
      const int32_t var = edge.dst_slot >= 0 ? var_of_merge_[edge.dst] : -1;
      if (var < 0) return Fail("a NextIteration feeds no loop variable's Merge");
      var_of_next_[id] = var;
    } else if (node.kind == FlowKind::kExit) {
      if (!data_inputs(id, 1) || !IsSwitch(in_edges_[id][0].src) || in_edges_[id][0].output != 0) {
        return Fail("an Exit reads something other than a Switch");
      }
    } else if (IsSwitch(id)) {
      if (!data_inputs(id, 2)) return Fail("a Switch has control inputs");
    } else if (IsLoopCond(id)) {
      if (!data_inputs(id, 1)) return Fail("the LoopCond has control inputs");
    }
  }
  // Each variable: its Merge feeds one Switch, whose predicate is the
  // LoopCond, and one NextIteration feeds the Merge.
  for (size_t v = 0; v < loop_.vars.size(); ++v) {
    FusedLoop::Var& var = loop_.vars[v];
    int32_t nexts = 0;
    for (const InEdge& in : in_edges_[var.merge]) {
      if (graph_.nodes[in.src].kind == FlowKind::kNextIteration) ++nexts;
    }
    if (nexts != 1) return Fail("a Merge is not fed by one NextIteration");
    const FlowNode& merge = graph_.nodes[var.merge];
    int32_t switches = 0;
    for (int32_t e = merge.edges_begin; e < merge.edges_end; ++e) {
      const FlowEdge& edge = graph_.edges[e];
      if (edge.output == 1) return Fail("a Merge's value_index is read");
      if (edge.dst_slot >= 0 && IsSwitch(edge.dst) &&
          edge.dst_slot == graph_.nodes[edge.dst].input_start) {
        if (var_of_switch_[edge.dst] >= 0) return Fail("a Switch reads two Merges");
        var_of_switch_[edge.dst] = static_cast<int32_t>(v);
        ++switches;
      }
    }
    if (switches != 1) return Fail("a Merge does not feed one Switch");
  }
  const FlowNode& loop_cond = graph_.nodes[loop_.loop_cond];
  for (int32_t e = loop_cond.edges_begin; e < loop_cond.edges_end; ++e) {
    const FlowEdge& edge = graph_.edges[e];
    if (edge.dst_slot < 0 || var_of_switch_[edge.dst] < 0 ||
        edge.dst_slot != graph_.nodes[edge.dst].input_start + 1) {
      return Fail("the LoopCond feeds more than the Switches' predicates");
    }
  }
  for (int32_t id : members_) {
    if (!IsSwitch(id)) continue;
    if (var_of_switch_[id] < 0) return Fail("it holds a cond");
    for (const InEdge& in : in_edges_[id]) {
      if (in.dst_slot == graph_.nodes[id].input_start + 1 && in.src != loop_.loop_cond) {
        return Fail("a Switch's predicate is not the LoopCond");
      }
    }
  }
  // Which nodes run only when the loop goes on: what reads a Switch's true
  // output, and what reads those. Ids are a topological order.
  for (int32_t id : members_) {
    const FlowNode& node = graph_.nodes[id];
    const bool is_switch = var_of_switch_[id] >= 0;
    for (int32_t e = node.edges_begin; e < node.edges_end; ++e) {
      const FlowEdge& edge = graph_.edges[e];
      if (is_switch) {
        if (edge.dst_slot < 0) return Fail("a Switch has control outputs");
        if (edge.output == 0 && graph_.nodes[edge.dst].kind != FlowKind::kExit) {
          return Fail("something other than an Exit reads a Switch's false output");
        }
        if (edge.output == 1) body_[edge.dst] = 1;
      } else if (body_[id]) {
        body_[edge.dst] = 1;
      }
      if (edge.dst_slot < 0 && (IsLoopCond(id) || node.kind == FlowKind::kNextIteration)) {
        return Fail("a LoopCond or NextIteration has control outputs");
      }
    }
    if (node.kind == FlowKind::kPlain && Op(id) == "Identity" && !facts_[id].derefs) {
      int32_t data = 0;
      bool from_loop = false;
      for (const InEdge& in : in_edges_[id]) {
        if (in.output < 0) continue;
        ++data;
        from_loop = InLoop(in.src);
      }
      forwarded_[id] = data == 1 && from_loop;
    }
  }
  return true;
}

bool FusedLoopBuilder::AppendDests(int32_t src, int32_t output, bool in_body, int32_t skip_slot) {
  const FlowNode& node = graph_.nodes[src];
  for (int32_t e = node.edges_begin; e < node.edges_end; ++e) {
    const FlowEdge& edge = graph_.edges[e];
    if (edge.dst_slot < 0 || edge.output != output || edge.dst_slot == skip_slot) continue;
    const int32_t dst = edge.dst;
    const FlowNode& to = graph_.nodes[dst];
    if (to.kind == FlowKind::kNextIteration) {
      if (!in_body) return Fail("a NextIteration reads a value of every iteration");
      loop_.dests.push_back(NextValue(var_of_next_[dst]));
    } else if (to.kind != FlowKind::kPlain || IsSwitch(dst)) {
      return Fail("an Exit, Merge or Switch reads a value of the body or the condition");
    } else if (IsLoopCond(dst) && in_body) {
      return Fail("the LoopCond reads the body");
    } else if (forwarded_[dst]) {
      if (!AppendDests(dst, 0, in_body || body_[dst], -1)) return false;
    } else {
      loop_.dests.push_back(edge.dst_slot);
    }
  }
  return true;
}

bool FusedLoopBuilder::AddSteps() {
  const auto range = [&](auto append) {
    FusedLoop::Range r;
    r.begin = static_cast<int32_t>(loop_.dests.size());
    const bool ok = append();
    r.end = static_cast<int32_t>(loop_.dests.size());
    return std::make_pair(ok, r);
  };
  for (FusedLoop::Var& var : loop_.vars) {
    int32_t switch_id = -1;
    const FlowNode& merge = graph_.nodes[var.merge];
    for (int32_t e = merge.edges_begin; e < merge.edges_end; ++e) {
      const int32_t dst = graph_.edges[e].dst;
      if (var_of_switch_[dst] >= 0) switch_id = dst;
    }
    const int32_t switch_slot = graph_.nodes[switch_id].input_start;
    auto [pre_ok, pre] = range([&] { return AppendDests(var.merge, 0, false, switch_slot); });
    if (!pre_ok) return false;
    var.pre = pre;
    auto [body_ok, body] = range([&] { return AppendDests(switch_id, 1, true, -1); });
    if (!body_ok) return false;
    var.body = body;
    const FlowNode& sw = graph_.nodes[switch_id];
    for (int32_t e = sw.edges_begin; e < sw.edges_end; ++e) {
      if (graph_.edges[e].output == 0) var.exits.push_back(graph_.edges[e].dst);
    }
  }
  for (int32_t id : members_) {
    const FlowNode& node = graph_.nodes[id];
    if (node.kind != FlowKind::kPlain || var_of_switch_[id] >= 0 || IsLoopCond(id) ||
        forwarded_[id]) {
      continue;
    }
    FusedLoop::Step step;
    step.node = id;
    int32_t num_outputs = 0;
    int32_t num_inputs = 0;
    for (int32_t e = node.edges_begin; e < node.edges_end; ++e) {
      num_outputs = std::max(num_outputs, graph_.edges[e].output + 1);
    }
    for (const InEdge& in : in_edges_[id]) {
      if (in.output >= 0) num_inputs = std::max(num_inputs, in.dst_slot - node.input_start + 1);
    }
    for (int32_t k = 0; k < num_outputs; ++k) {
      auto [ok, r] = range([&] { return AppendDests(id, k, body_[id] != 0, -1); });
      if (!ok) return false;
      step.outputs.push_back(r);
    }
    for (int32_t i = 0; i < num_inputs; ++i) {
      const int32_t slot = node.input_start + i;
      if (!invariant_slot_[slot]) {
        step.consumed.push_back(slot);
      } else if (facts_[id].derefs) {
        step.reread.emplace_back(slot, invariant_enter_[slot]);
      }
    }
    (body_[id] ? loop_.body : loop_.pre).push_back(std::move(step));
  }
  return true;
}

bool FusedLoopBuilder::CheckPred() const {
  if (loop_.pred_is_invariant) return true;
  const auto writes = [&](const FusedLoop::Range& r) {
    for (int32_t d = r.begin; d < r.end; ++d) {
      if (loop_.dests[d] == loop_.pred_slot) return true;
    }
    return false;
  };
  for (const FusedLoop::Var& var : loop_.vars) {
    if (writes(var.pre)) return true;
  }
  for (const FusedLoop::Step& step : loop_.pre) {
    for (const FusedLoop::Range& r : step.outputs) {
      if (writes(r)) return true;
    }
  }
  return false;
}

}  // namespace

std::optional<FusedLoop> BuildFusedLoop(const FlowGraph& graph, int32_t tmpl,
                                        absl::Span<const FusedNodeFacts> facts,
                                        std::string* why_not) {
  return FusedLoopBuilder(graph, tmpl, facts).Build(why_not);
}

bool FusedLoopsEnabledByEnvironment() {
  static const bool enabled = [] {
    const char* value = std::getenv("RILL_FUSE_LOOPS");
    return value == nullptr || std::strcmp(value, "0") != 0;
  }();
  return enabled;
}

}  // namespace rill::executor_internal
