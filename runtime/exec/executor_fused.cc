// Running a fused loop (fused_loop.h): the whole loop on the thread that
// readied it, its kernels called in program order and its values moved
// between its frame's input slots, without FlowState's lock or pending
// counts. The loop's first iteration state holds the slots (and the
// invariants, filled once); each iteration's values are dropped as their
// last reader runs.
#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/executor_items.h"

namespace rill {
namespace {

using executor_internal::Clear;
using executor_internal::FrameState;
using executor_internal::FusedDest;
using executor_internal::FusedLoop;
using executor_internal::NowMicros;
using executor_internal::VarOf;

bool HasValue(const TensorValue& value) { return value.is_ref() || value.tensor.IsInitialized(); }

void MoveValue(TensorValue& from, TensorValue& to) {
  to.tensor = std::move(from.tensor);
  to.ref = from.ref;
  to.ref_mu = from.ref_mu;
  from.ref = nullptr;
  from.ref_mu = nullptr;
}

// The loop's values in flight: its frame's input slots and the variables'
// next values.
struct FusedValues {
  TensorValue* slots;
  TensorValue* next;

  TensorValue& at(FusedDest dest) const { return dest >= 0 ? slots[dest] : next[VarOf(dest)]; }
  // Copies `value` to all of `range` but the last, which takes it.
  void Route(const FusedLoop& loop, FusedLoop::Range range, TensorValue& value) const {
    if (range.begin == range.end) return Clear(value);
    for (int32_t d = range.begin; d + 1 < range.end; ++d) at(loop.dests[d]) = value;
    MoveValue(value, at(loop.dests[range.end - 1]));
  }
};

}  // namespace

void Executor::BuildFusedLoops() {
  std::vector<executor_internal::FusedNodeFacts> facts(items_.size());
  for (size_t i = 0; i < items_.size(); ++i) {
    facts[i].name = items_[i].def->name();
    facts[i].op = items_[i].def->op();
    facts[i].sync = items_[i].async == nullptr;
    facts[i].derefs = items_[i].deref_begin != items_[i].deref_end;
  }
  for (size_t t = 1; t < flow_->frames.size(); ++t) {
    std::string why_not;
    std::optional<FusedLoop> loop =
        executor_internal::BuildFusedLoop(*flow_, static_cast<int32_t>(t), facts, &why_not);
    if (!loop.has_value()) continue;
    for (const auto* steps : {&loop->pre, &loop->body}) {
      for (const FusedLoop::Step& s : *steps) {
        max_fused_outputs_ = std::max(max_fused_outputs_, items_[s.node].num_outputs);
      }
    }
    flow_->frames[t].fused = static_cast<int32_t>(flow_->fused_loops.size());
    flow_->fused_loops.push_back(*std::move(loop));
  }
}

void Executor::FailInLoop(PartitionRun* step, const NodeItem& item, const FrameState& frame,
                          int64_t iter, const absl::Status& status) const {
  // FailInFrame's wording, with the iteration the fused run is in.
  Fail(step, item,
       absl::Status(status.code(), absl::StrFormat("%s (in frame '%s', iteration %d)",
                                                   status.message(), frame.name, iter)));
}

bool Executor::RunFusedStep(PartitionRun* step, const FusedLoop& loop, const FusedLoop::Step& s,
                            FrameState* frame, int64_t iter, TensorValue* slots, TensorValue* next,
                            TensorValue* outputs) const {
  const NodeItem& item = items_[s.node];
  TensorValue* inputs = slots + flow_->nodes[s.node].input_start;
  for (const auto& [slot, enter] : s.reread) {
    for (const FrameState::Invariant& invariant : frame->invariants) {
      if (invariant.node == enter) slots[slot] = invariant.value;
    }
  }
  if (item.deref_begin != item.deref_end && !DerefInputs(step, item, inputs)) return false;
  const int64_t start_micros = step->collect_stats ? NowMicros() : 0;
  KernelContext::Frame kernel_frame = KernelFrame(step, item, inputs, outputs);
  kernel_frame.frame_id = frame->frame_id;
  kernel_frame.iter_id = iter;
  absl::Status status;
  {
    const ScopedOpRange range(*device_, *item.def);
    if (item.expensive && parallel_kernels_) {
      // Measured only where the measure decides something: whether the
      // kernel splits over the intra-op pool. No node of a fused loop moves
      // to another thread.
      KernelCost& cost = costs_[s.node];
      const bool parallel = cost.UseParallel();
      kernel_frame.eigen_cpu = parallel ? device_->eigen_cpu() : device_->eigen_cpu_serial();
      const auto start = std::chrono::steady_clock::now();
      {
        KernelContext ctx(kernel_frame);
        status = item.kernel->Compute(ctx);
      }
      cost.Record(parallel, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                std::chrono::steady_clock::now() - start)
                                .count());
    } else {
      // As RunFlowNode: an expensive kernel without a pool to split over
      // runs serially, not through a one-thread pool.
      kernel_frame.eigen_cpu = item.expensive ? device_->eigen_cpu_serial() : device_->eigen_cpu();
      KernelContext ctx(kernel_frame);
      status = item.kernel->Compute(ctx);
    }
  }
  for (int32_t slot : s.consumed) Clear(slots[slot]);
  const auto clear_outputs = [&] {
    for (int32_t k = 0; k < item.num_outputs; ++k) Clear(outputs[k]);
  };
  if (!status.ok()) {
    clear_outputs();
    FailInLoop(step, item, *frame, iter, status);
    return false;
  }
  if (step->collect_stats) RecordStats(step, item, start_micros, outputs);
  const FusedValues values{slots, next};
  for (size_t k = 0; k < s.outputs.size(); ++k) {
    const FusedLoop::Range range = s.outputs[k];
    if (range.begin != range.end && !HasValue(outputs[k])) {
      clear_outputs();
      FailInLoop(step, item, *frame, iter,
                 absl::InternalError(absl::StrFormat("the kernel did not set output %d", k)));
      return false;
    }
    values.Route(loop, range, outputs[k]);
  }
  clear_outputs();
  return true;
}

bool Executor::RunFusedLoop(PartitionRun* step, const TaggedNode& node) const {
  FrameState* frame = node.frame;
  const FusedLoop& loop = flow_->fused_loops[flow_->frames[frame->tmpl].fused];
  TensorValue* slots = node.iter->inputs.data();
  const size_t num_vars = loop.vars.size();
  absl::InlinedVector<TensorValue, 4> current(num_vars), next(num_vars);
  absl::InlinedVector<TensorValue, 4> outputs(max_fused_outputs_);
  for (size_t v = 0; v < num_vars; ++v) MoveValue(slots[loop.vars[v].enter_slot], current[v]);
  const FusedValues values{slots, next.data()};
  const NodeItem& loop_cond = items_[loop.loop_cond];
  for (int64_t iter = 0;; ++iter) {
    // Relaxed: a hint, as the kernels poll it; an error or a deadline ends
    // a loop that never stops.
    if (step->cancellation->cancelled()) return false;
    for (size_t v = 0; v < num_vars; ++v) {
      const FusedLoop::Range range = loop.vars[v].pre;
      for (int32_t d = range.begin; d < range.end; ++d) values.at(loop.dests[d]) = current[v];
    }
    for (const FusedLoop::Step& s : loop.pre) {
      if (!RunFusedStep(step, loop, s, frame, iter, slots, next.data(), outputs.data())) {
        return false;
      }
    }
    TensorValue& pred = slots[loop.pred_slot];
    Tensor read;  // A reference's value.
    const Tensor& p = pred.is_ref() ? (read = pred.Value()) : pred.tensor;
    if (!p.IsInitialized() || p.dtype() != DT_BOOL || p.shape().dims() != 0) {
      // The LoopCond kernel's check, which the frames path runs.
      FailInLoop(step, loop_cond, *frame, iter,
                 absl::InvalidArgumentError(absl::StrFormat(
                     "the loop condition must be a bool scalar, but has shape %s",
                     p.shape().DebugString())));
      return false;
    }
    const bool go_on = p.scalar<bool>();
    if (!loop.pred_is_invariant) Clear(pred);
    if (!go_on) break;
    for (size_t v = 0; v < num_vars; ++v) values.Route(loop, loop.vars[v].body, current[v]);
    for (const FusedLoop::Step& s : loop.body) {
      if (!RunFusedStep(step, loop, s, frame, iter, slots, next.data(), outputs.data())) {
        return false;
      }
    }
    for (size_t v = 0; v < num_vars; ++v) MoveValue(next[v], current[v]);
  }
  // The loop ends: each variable's value leaves through its Exits.
  frame->exit_values.resize(flow_->frames[frame->tmpl].exits.size());
  for (size_t v = 0; v < num_vars; ++v) {
    const std::vector<int32_t>& exits = loop.vars[v].exits;
    for (size_t e = 0; e < exits.size(); ++e) {
      TensorValue& out = frame->exit_values[flow_->nodes[exits[e]].exit_index];
      if (e + 1 < exits.size()) {
        out = current[v];
      } else {
        MoveValue(current[v], out);
      }
      const NodeItem& exit = items_[exits[e]];
      if (exit.fetch_begin != exit.fetch_end && !FetchOutputs(step, exit, &out)) return false;
    }
    Clear(current[v]);
  }
  return true;
}

}  // namespace rill
