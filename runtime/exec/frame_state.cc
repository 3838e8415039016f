#include "runtime/exec/frame_state.h"

#include <utility>

namespace rill::executor_internal {
namespace {

bool HasValue(const TensorValue& value) { return value.is_ref() || value.tensor.IsInitialized(); }

void ClearValue(TensorValue& value) {
  if (value.tensor.IsInitialized()) value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
}

}  // namespace

uint64_t ChildFrameId(uint64_t parent_id, int64_t iter, const std::string& name) {
  // FNV-1a: fixed across processes, unlike absl::Hash.
  uint64_t hash = 14695981039346656037ull;
  const auto mix = [&](const void* data, size_t size) {
    const auto* bytes = static_cast<const unsigned char*>(data);
    for (size_t i = 0; i < size; ++i) {
      hash ^= bytes[i];
      hash *= 1099511628211ull;
    }
  };
  mix(&parent_id, sizeof(parent_id));
  mix(&iter, sizeof(iter));
  mix(name.data(), name.size());
  return hash == 0 ? 1 : hash;  // 0 is the root's.
}

FlowState::FlowState(const FlowGraph& graph)
    : graph_(graph), free_iterations_(graph.frames.size()) {}

FlowState::~FlowState() = default;

void FlowState::Start() {
  root_.tmpl = 0;
  root_.frame_id = 0;
  root_.oldest = root_.newest = 0;
  root_.iterations.assign(1, NewIteration(0, 0));
}

IterationState* FlowState::NewIteration(int32_t tmpl, int64_t iter) {
  IterationState* state;
  std::vector<IterationState*>& free = free_iterations_[tmpl];
  const FlowTemplate& t = graph_.frames[tmpl];
  if (free.empty()) {
    storage_.push_back(std::make_unique<IterationState>());
    state = storage_.back().get();
    state->inputs.resize(t.num_input_slots);
    state->dead.resize(t.initial_pending.size());
    state->taken.resize(t.initial_pending.size());
  } else {
    state = free.back();
    free.pop_back();
  }
  state->iter = iter;
  state->pending = t.initial_pending;
  state->outstanding_ops = 0;
  state->outstanding_frames = 0;
  return state;
}

void FlowState::FreeIteration(int32_t tmpl, IterationState* state) {
  // Values a dead node or a dropped Merge input left behind.
  for (TensorValue& value : state->inputs) ClearValue(value);
  std::fill(state->dead.begin(), state->dead.end(), 0);
  std::fill(state->taken.begin(), state->taken.end(), 0);
  free_iterations_[tmpl].push_back(state);
}

void FlowState::Clear() {
  for (auto& [key, frame] : children_) {
    for (int64_t i = frame->oldest; i <= frame->newest; ++i) {
      if (IterationState* state = frame->iteration(i); state != nullptr) {
        FreeIteration(frame->tmpl, state);
      }
    }
  }
  children_.clear();
  if (!root_.iterations.empty()) FreeIteration(0, root_.iterations[0]);
  root_.iterations.clear();
}

FrameState* FlowState::FindOrCreateChild(FrameState* parent, IterationState* iter, int32_t tmpl) {
  auto [it, inserted] = children_.try_emplace(ChildKey{parent, iter->iter, tmpl});
  if (!inserted) return it->second.get();
  const FlowTemplate& t = graph_.frames[tmpl];
  auto frame = std::make_unique<FrameState>();
  frame->tmpl = tmpl;
  frame->name = t.name;
  frame->frame_id = ChildFrameId(parent->frame_id, iter->iter, t.name);
  frame->parent = parent;
  frame->parent_iter = iter;
  frame->pending_enters = t.num_enters;
  frame->iterations.assign(static_cast<size_t>(t.parallel_iterations) + 1, nullptr);
  frame->iterations[0] = NewIteration(tmpl, 0);
  frame->exit_live.assign(t.exits.size(), 0);
  frame->holding = t.fused >= 0;
  ++iter->outstanding_frames;
  it->second = std::move(frame);
  return it->second.get();
}

IterationState* FlowState::AddIteration(FrameState* frame, TaggedList* ready) {
  const int64_t next = ++frame->newest;
  IterationState* state = NewIteration(frame->tmpl, next);
  frame->iterations[static_cast<size_t>(next % static_cast<int64_t>(frame->iterations.size()))] =
      state;
  for (FrameState::Invariant& invariant : frame->invariants) {
    ActivateOutputs(invariant.node, frame, state, &invariant.value, invariant.dead,
                    /*copy=*/true, ready);
  }
  return state;
}

void FlowState::Propagate(const TaggedNode& node, TensorValue* outputs, TaggedList* ready) {
  if (node.fused_loop) return FinishFusedLoop(node, ready);
  const FlowNode& info = graph_.nodes[node.id];
  FrameState* frame = node.frame;
  IterationState* iter = node.iter;
  switch (info.kind) {
    case FlowKind::kEnter:
    case FlowKind::kConstantEnter: {
      FrameState* child = FindOrCreateChild(frame, iter, info.output_frame);
      if (info.kind == FlowKind::kConstantEnter) {
        const bool dead = node.dead || !HasValue(outputs[0]);
        child->invariants.push_back({node.id, outputs[0], dead});
        for (int64_t i = child->oldest; i <= child->newest; ++i) {
          ActivateOutputs(node.id, child, child->iteration(i), outputs, dead, /*copy=*/true, ready);
        }
      } else {
        ActivateOutputs(node.id, child, child->iteration(0), outputs, node.dead, false, ready);
      }
      if (--child->pending_enters == 0 && child->holding) ReleaseHeld(child, ready);
      CleanUp(child, ready);
      break;
    }
    case FlowKind::kExit:
      // A dead Exit is the loop going on; the frame's end decides whether
      // the loop as a whole was dead (DeleteFrame).
      if (!node.dead && HasValue(outputs[0])) {
        frame->exit_live[info.exit_index] = 1;
        ActivateOutputs(node.id, frame->parent, frame->parent_iter, outputs, false, false, ready);
      }
      break;
    case FlowKind::kNextIteration: {
      // A dead NextIteration is the loop ending: nothing goes on.
      if (node.dead || !HasValue(outputs[0])) break;
      const int64_t next = iter->iter + 1;
      if (next <= frame->newest) {
        ActivateOutputs(node.id, frame, frame->iteration(next), outputs, false, false, ready);
      } else if (frame->deferred.empty() && frame->newest - frame->oldest + 1 <
                                                graph_.frames[frame->tmpl].parallel_iterations) {
        ActivateOutputs(node.id, frame, AddIteration(frame, ready), outputs, false, false, ready);
      } else {
        frame->deferred.emplace_back(node.id, std::move(outputs[0]));
      }
      break;
    }
    default:
      ActivateOutputs(node.id, frame, iter, outputs,
                      node.dead || (info.dead_when_empty && !HasValue(outputs[0])), false, ready);
  }
  // Only an iteration with nothing left running can end.
  if (--iter->outstanding_ops == 0 && frame != &root_) CleanUp(frame, ready);
}

void FlowState::ActivateOutputs(int32_t id, FrameState* frame, IterationState* iter,
                                TensorValue* outputs, bool node_dead, bool copy,
                                TaggedList* ready) {
  const FlowNode& info = graph_.nodes[id];
  for (int32_t e = info.edges_begin; e < info.edges_end; ++e) {
    const FlowEdge& edge = graph_.edges[e];
    if (edge.dst_slot < 0) {
      Activate(edge.dst, -1, frame, iter, nullptr, node_dead, copy, ready);
      continue;
    }
    TensorValue* value = node_dead ? nullptr : &outputs[edge.output];
    const bool dead = value == nullptr || !HasValue(*value);
    Activate(edge.dst, edge.dst_slot, frame, iter, value, dead, copy || !edge.last_use, ready);
  }
}

void FlowState::Activate(int32_t dst, int32_t slot, FrameState* frame, IterationState* iter,
                         TensorValue* value, bool dead, bool copy, TaggedList* ready) {
  const FlowNode& info = graph_.nodes[dst];
  const int32_t local = info.local;
  const auto store = [&] {
    TensorValue& input = iter->inputs[slot];
    if (copy) {
      input = *value;
    } else {
      input = std::move(*value);
      ClearValue(*value);
    }
  };
  if (info.kind == FlowKind::kMerge) {
    // Its pending count holds its control inputs plus one for the data,
    // which the first live input (or the last dead one) settles.
    if (slot < 0) {
      // A control input only counts down.
    } else if (dead) {
      if (++iter->dead[local] != info.merge_forward_inputs || iter->taken[local]) return;
    } else {
      if (iter->taken[local]) return;  // A later live input is dropped.
      iter->taken[local] = 1;
      store();
    }
  } else if (dead) {
    ++iter->dead[local];
  } else if (slot >= 0) {
    store();
  }
  if (--iter->pending[local] != 0) return;
  const bool dst_dead = info.kind == FlowKind::kMerge ? !iter->taken[local]
                                                      : !info.never_dead && iter->dead[local] > 0;
  ++iter->outstanding_ops;
  if (frame->holding) {
    frame->held.push_back(TaggedNode{dst, frame, iter, dst_dead});
    return;
  }
  ready->push_back(TaggedNode{dst, frame, iter, dst_dead});
}

void FlowState::ReleaseHeld(FrameState* frame, TaggedList* ready) {
  frame->holding = false;
  const FusedLoop& loop = graph_.fused_loops[graph_.frames[frame->tmpl].fused];
  IterationState* iter = frame->iteration(0);
  bool live = true;
  for (const FrameState::Invariant& invariant : frame->invariants) live = live && !invariant.dead;
  for (const FusedLoop::Var& var : loop.vars) {
    live = live && iter->taken[graph_.nodes[var.merge].local] != 0;
  }
  if (!live) {
    // A loop in an untaken branch, or partly dead: frame by frame, as
    // without fusion.
    ready->insert(ready->end(), frame->held.begin(), frame->held.end());
  } else {
    iter->outstanding_ops -= static_cast<int32_t>(frame->held.size()) - 1;
    ready->push_back(TaggedNode{loop.loop_cond, frame, iter, false, /*fused_loop=*/true});
  }
  frame->held.clear();
}

void FlowState::FinishFusedLoop(const TaggedNode& node, TaggedList* ready) {
  FrameState* frame = node.frame;
  const FlowTemplate& t = graph_.frames[frame->tmpl];
  for (size_t e = 0; e < frame->exit_values.size(); ++e) {
    if (!HasValue(frame->exit_values[e])) continue;
    frame->exit_live[e] = 1;
    ActivateOutputs(t.exits[e], frame->parent, frame->parent_iter, &frame->exit_values[e], false,
                    false, ready);
  }
  frame->exit_values.clear();
  if (--node.iter->outstanding_ops == 0) CleanUp(frame, ready);
}

void FlowState::CleanUp(FrameState* frame, TaggedList* ready) {
  const FlowTemplate& t = graph_.frames[frame->tmpl];
  for (;;) {
    IterationState* oldest = frame->iteration(frame->oldest);
    if (oldest->outstanding_ops > 0 || oldest->outstanding_frames > 0) return;
    // Iteration 0 may still get values from Enters; later ones only from
    // the iteration before, which is done.
    if (frame->oldest == 0 && frame->pending_enters > 0) return;
    if (frame->oldest == frame->newest && frame->deferred.empty()) {
      DeleteFrame(frame, ready);
      return;
    }
    frame->iterations[static_cast<size_t>(
        frame->oldest % static_cast<int64_t>(frame->iterations.size()))] = nullptr;
    FreeIteration(frame->tmpl, oldest);
    ++frame->oldest;
    if (!frame->deferred.empty() && frame->newest - frame->oldest + 1 < t.parallel_iterations) {
      IterationState* next = AddIteration(frame, ready);
      for (auto& [id, value] : frame->deferred) {
        ActivateOutputs(id, frame, next, &value, false, false, ready);
      }
      frame->deferred.clear();
    }
  }
}

void FlowState::DeleteFrame(FrameState* frame, TaggedList* ready) {
  FrameState* parent = frame->parent;
  IterationState* parent_iter = frame->parent_iter;
  const FlowTemplate& t = graph_.frames[frame->tmpl];
  // An Exit that never had a value: the whole loop was dead (inside an
  // untaken branch), and so is what reads the Exit.
  for (size_t e = 0; e < t.exits.size(); ++e) {
    if (!frame->exit_live[e]) {
      ActivateOutputs(t.exits[e], parent, parent_iter, nullptr, /*node_dead=*/true, false, ready);
    }
  }
  --parent_iter->outstanding_frames;
  FreeIteration(frame->tmpl, frame->iteration(frame->oldest));
  children_.erase(ChildKey{parent, parent_iter->iter, frame->tmpl});
  if (parent != &root_) CleanUp(parent, ready);
}

}  // namespace rill::executor_internal
