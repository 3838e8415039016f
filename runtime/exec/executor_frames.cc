// Running graphs with control flow: every node runs tagged with its loop
// frame and iteration, a node with a dead input is dead (only _Send and
// _Recv still run, to carry the deadness), and FlowState decides what a
// finished node readies. Graphs without control flow never come here.
#include <atomic>
#include <chrono>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/control_flow.h"
#include "graph/control_flow_names.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/executor_items.h"

namespace rill {
namespace {

using executor_internal::Clear;
using executor_internal::FlowEdge;
using executor_internal::FlowGraph;
using executor_internal::FlowKind;
using executor_internal::FlowNode;
using executor_internal::FlowState;
using executor_internal::FlowTemplate;
using executor_internal::NowMicros;

FlowKind KindOf(const Node& node, bool* constant) {
  const std::string& op = node.op();
  if (IsMergeOp(op)) return FlowKind::kMerge;
  if (IsEnterOp(op)) {
    absl::StatusOr<bool> is_constant = GetBoolAttr(node.def(), "is_constant");
    *constant = is_constant.ok() && *is_constant;
    return *constant ? FlowKind::kConstantEnter : FlowKind::kEnter;
  }
  if (IsExitOp(op)) return FlowKind::kExit;
  if (IsNextIterationOp(op)) return FlowKind::kNextIteration;
  if (op == "_Send" || op == "_Recv") return FlowKind::kTransfer;
  return FlowKind::kPlain;
}

}  // namespace

absl::Status Executor::BuildFlow(const Params& params, const std::vector<const Node*>& nodes,
                                 const std::vector<int32_t>& local) {
  ASSIGN_OR_RETURN(ControlFlowInfo info, BuildControlFlowInfo(*params.graph));
  auto flow = std::make_unique<FlowGraph>();
  for (const FrameInfo& frame : info.frames) {
    FlowTemplate t;
    t.name = frame.name;
    t.parent = frame.parent;
    t.parallel_iterations = frame.parallel_iterations;
    flow->frames.push_back(std::move(t));
  }
  const int n = static_cast<int>(nodes.size());
  flow->nodes.resize(n);
  for (int i = 0; i < n; ++i) {
    const Node* node = nodes[i];
    FlowNode& fn = flow->nodes[i];
    bool constant = false;
    fn.kind = KindOf(*node, &constant);
    fn.never_dead = node->op() == "ControlTrigger";
    fn.dead_when_empty = node->op() == "_Recv";
    fn.frame = info.frame_of[node->id()];
    FlowTemplate& t = flow->frames[fn.frame];
    fn.local = static_cast<int32_t>(t.initial_pending.size());
    fn.input_start = t.num_input_slots;
    t.num_input_slots += node->num_inputs();
    if (fn.kind == FlowKind::kEnter || fn.kind == FlowKind::kConstantEnter) {
      fn.output_frame = info.output_frame_of[node->id()];
      ++flow->frames[fn.output_frame].num_enters;
    }
    if (fn.kind == FlowKind::kExit) {
      fn.exit_index = static_cast<int32_t>(t.exits.size());
      t.exits.push_back(i);
    }
    int32_t pending = 0;
    for (const Edge* edge : node->in_edges()) {
      if (edge == nullptr) continue;
      const bool from_here = local[edge->src->id()] >= 0;
      if (edge->IsControl()) {
        pending += from_here ? 1 : 0;
        continue;
      }
      if (!from_here) {
        // Fed (Build checked that the rest run): the value is there at the
        // start, in the root frame.
        if (fn.frame != 0 || fn.kind == FlowKind::kMerge) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "node '%s' (%s) in %s: its input %d cannot be fed; feed a value outside loops "
              "and not into a Merge",
              node->name(), node->op(), info.Describe(fn.frame), edge->dst_input));
        }
        continue;
      }
      if (fn.kind == FlowKind::kMerge) {
        if (!ControlFlowInfo::IsBackEdge(*edge)) ++fn.merge_forward_inputs;
        continue;
      }
      ++pending;
    }
    if (fn.kind == FlowKind::kMerge) ++pending;  // The data's one count.
    t.initial_pending.push_back(pending);
    if (fn.frame == 0 && pending == 0) flow->roots.push_back(i);
  }
  for (int i = 0; i < n; ++i) {
    FlowNode& fn = flow->nodes[i];
    const NodeItem& item = items_[i];
    fn.edges_begin = static_cast<int32_t>(flow->edges.size());
    for (int32_t e = item.out_edges_begin; e < item.out_edges_end; ++e) {
      const OutEdge& edge = out_edges_[e];
      const int32_t input = edge.dst_slot - items_[edge.dst].input_start;
      flow->edges.push_back(FlowEdge{edge.output, edge.dst,
                                     flow->nodes[edge.dst].input_start + input, edge.last_use});
    }
    for (int32_t c = item.control_begin; c < item.control_end; ++c) {
      flow->edges.push_back(FlowEdge{-1, control_edges_[c], -1, false});
    }
    fn.edges_end = static_cast<int32_t>(flow->edges.size());
    const int32_t values_frame =
        fn.kind == FlowKind::kExit ? flow->frames[fn.frame].parent : fn.frame;
    if (item.fetch_begin != item.fetch_end && values_frame != 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "node '%s' (%s) runs in %s: only values outside loops can be fetched (fetch what "
          "the loop's Exit returns)",
          item.def->name(), item.def->op(), info.Describe(fn.frame)));
    }
  }
  std::vector<int32_t> root_slot(num_input_slots_, -1);  // Fast-path slot -> root-frame slot.
  for (int i = 0; i < n; ++i) {
    for (int32_t k = 0; k < items_[i].num_inputs; ++k) {
      root_slot[items_[i].input_start + k] = flow->nodes[i].input_start + k;
    }
  }
  for (const Feed& feed : feeds_) {
    std::vector<int32_t> slots;
    for (int32_t slot : feed.slots) slots.push_back(root_slot[slot]);
    flow_feed_slots_.push_back(std::move(slots));
  }
  for (const TensorEndpoint& fetch : params.fetches) fetch_names_.push_back(fetch.ToString());
  flow_ = std::move(flow);
  // A fused loop reads its condition where it runs: on a device with
  // memory of its own that is the Switch kernels' work.
  if (params.fuse_loops && device_->device_context() == nullptr &&
      executor_internal::FusedLoopsEnabledByEnvironment()) {
    BuildFusedLoops();
  }
  return absl::OkStatus();
}

void Executor::StartFlowStep(PartitionRun* step, const Args& args) const {
  if (step->flow == nullptr) step->flow = std::make_unique<FlowState>(*flow_);
  // The step is not shared yet, but FlowState's methods require its lock.
  absl::MutexLock lock(&step->flow->mu);
  step->flow->Start();
  executor_internal::IterationState* root = step->flow->root_iteration();
  for (size_t j = 0; j < flow_feed_slots_.size(); ++j) {
    for (int32_t slot : flow_feed_slots_[j]) root->inputs[slot].tensor = args.feeds[j];
  }
  root->outstanding_ops = static_cast<int32_t>(flow_->roots.size());
  step->outstanding.store(static_cast<int32_t>(flow_->roots.size()), std::memory_order_relaxed);
}

void Executor::ProcessFlowRootsHere(PartitionRun* step) const {
  TaggedList roots;
  {
    absl::MutexLock lock(&step->flow->mu);
    for (int32_t id : flow_->roots) {
      roots.push_back(
          TaggedNode{id, step->flow->root_frame(), step->flow->root_iteration(), false});
    }
  }
  if (QuickContinuationsHere::Active() && pool_ != nullptr) {
    return ProcessFlowOnPool(step, std::move(roots));
  }
  InlineContinuations scope;
  ProcessFlow(step, std::move(roots));
}

void Executor::ProcessFlowOnPool(PartitionRun* step, TaggedList first) const {
  pool_->Schedule([this, step, first = std::move(first)] {
    InlineContinuations scope;
    ProcessFlow(step, first);
  });
}

bool Executor::IsExpensive(const TaggedNode& node) const {
  return node.fused_loop || (items_[node.id].expensive && !node.dead);
}

void Executor::DispatchFlow(PartitionRun* step, TaggedList* expensive, TaggedList* ready) const {
  for (size_t j = 0; j < expensive->size(); ++j) {
    const TaggedNode& node = (*expensive)[j];
    // A fused loop runs long enough to be worth another thread when this
    // one has other work.
    if (pool_ == nullptr || !parallel_nodes_ || (!node.fused_loop && !MayRunLong(node.id)) ||
        (j + 1 == expensive->size() && ready->empty())) {
      ready->push_back(node);
    } else {
      ProcessFlowOnPool(step, TaggedList{node});
    }
  }
  expensive->clear();
}

void Executor::ProcessFlow(PartitionRun* step, TaggedList first) const {
  TaggedList ready;
  TaggedList expensive;
  for (const TaggedNode& node : first) {
    (IsExpensive(node) ? expensive : ready).push_back(node);
  }
  DispatchFlow(step, &expensive, &ready);
  absl::InlinedVector<TensorValue, 4> outputs;
  while (!ready.empty()) {
    const TaggedNode node = ready.back();
    ready.pop_back();
    int num_ready = 0;
    if (!step->cancellation->cancelled()) {
      if ((node.fused_loop || MayRunLong(node.id)) && InlineContinuations::AnyQueued()) {
        InlineContinuations::HandOff();
      }
      outputs.assign(items_[node.id].num_outputs, TensorValue());
      const NodeResult result = RunFlowNode(step, node, outputs.data());
      if (result == NodeResult::kPending) {
        DispatchFlow(step, &expensive, &ready);
        continue;
      }
      if (result == NodeResult::kDone) {
        num_ready = PropagateFlow(step, node, outputs.data(), &ready, &expensive);
      }
    }
    // Counted before any readied node can go to another thread, as in
    // Process.
    const int delta = num_ready - 1;
    if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      Finish(step);
      return;
    }
    DispatchFlow(step, &expensive, &ready);
  }
}

void Executor::ProcessFlowQuick(PartitionRun* step, TaggedList first) const {
  // As ProcessQuick: quick nodes only, for a bounded time, on a thread
  // that must stay responsive (a transport's); the rest go to the pool.
  const auto start = std::chrono::steady_clock::now();
  TaggedList ready;
  TaggedList readied = std::move(first);
  absl::InlinedVector<TensorValue, 4> outputs;
  for (;;) {
    for (const TaggedNode& node : readied) {
      // A fused loop may run for long: not on this thread.
      if (node.fused_loop || (!node.dead && MayRunLong(node.id))) {
        ProcessFlowOnPool(step, TaggedList{node});
      } else {
        ready.push_back(node);
      }
    }
    readied.clear();
    if (ready.empty()) return;
    if (std::chrono::steady_clock::now() - start >=
        std::chrono::nanoseconds(kQuickRunBudgetNanos)) {
      return ProcessFlowOnPool(step, std::move(ready));
    }
    const TaggedNode node = ready.back();
    ready.pop_back();
    int num_ready = 0;
    if (!step->cancellation->cancelled()) {
      outputs.assign(items_[node.id].num_outputs, TensorValue());
      const NodeResult result = RunFlowNode(step, node, outputs.data());
      if (result == NodeResult::kPending) continue;
      if (result == NodeResult::kDone) {
        num_ready = PropagateFlow(step, node, outputs.data(), &readied, &readied);
      }
    }
    const int delta = num_ready - 1;
    if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      return Finish(step);
    }
  }
}

// An async kernel's state until its callback; owns the outputs the kernel
// fills, since several iterations may run the node at once.
struct Executor::FlowAsyncRun {
  FlowAsyncRun(const TaggedNode& tagged, int num_outputs) : node(tagged), outputs(num_outputs) {}
  TaggedNode node;
  std::vector<TensorValue> outputs;
  std::optional<KernelContext> ctx;
  int64_t start_micros = 0;
  absl::Status status;
  // As AsyncRun's: the second of ComputeAsync's return and the callback
  // finishes the node.
  static constexpr int kRunning = 0, kCallbackFirst = 1, kReturnedFirst = 2;
  std::atomic<int> phase{kRunning};
};

Executor::NodeResult Executor::RunFlowNode(PartitionRun* step, const TaggedNode& node,
                                           TensorValue* outputs) const {
  if (node.fused_loop) return RunFusedLoop(step, node) ? NodeResult::kDone : NodeResult::kFailed;
  const NodeItem& item = items_[node.id];
  const FlowNode& info = flow_->nodes[node.id];
  TensorValue* inputs = node.iter->inputs.data() + info.input_start;
  if (node.dead && info.kind != FlowKind::kTransfer) {
    // Its outputs stay empty: dead.
    for (int32_t i = 0; i < item.num_inputs; ++i) Clear(inputs[i]);
    return FinishFlowNode(step, node, outputs, absl::OkStatus(), 0) ? NodeResult::kDone
                                                                    : NodeResult::kFailed;
  }
  if (!DerefInputs(step, item, inputs)) return NodeResult::kFailed;
  const int64_t start_micros = step->collect_stats ? NowMicros() : 0;
  absl::Status status;
  {
    const ScopedOpRange range(*device_, *item.def);
    if (const AsyncOpKernel* async = item.async; async != nullptr) {
      auto* run = new FlowAsyncRun(node, item.num_outputs);
      KernelContext::Frame frame = KernelFrame(step, item, inputs, run->outputs.data());
      frame.eigen_cpu = device_->eigen_cpu();
      frame.frame_id = node.frame->frame_id;
      frame.iter_id = node.iter->iter;
      run->ctx.emplace(frame);
      run->start_micros = start_micros;
      async->ComputeAsync(*run->ctx, [this, step, run](absl::Status done_status) {
        run->status = std::move(done_status);
        int expected = FlowAsyncRun::kRunning;
        if (run->phase.compare_exchange_strong(expected, FlowAsyncRun::kCallbackFirst,
                                               std::memory_order_acq_rel)) {
          return;
        }
        const bool ok = FinishFlowNode(step, run->node, run->outputs.data(), std::move(run->status),
                                       run->start_micros);
        FinishFlowAsync(step, run->node, run->outputs.data(), ok);
        delete run;
      });
      int expected = FlowAsyncRun::kRunning;
      if (run->phase.compare_exchange_strong(expected, FlowAsyncRun::kReturnedFirst,
                                             std::memory_order_acq_rel)) {
        return NodeResult::kPending;
      }
      status = std::move(run->status);
      for (int32_t k = 0; k < item.num_outputs; ++k) outputs[k] = std::move(run->outputs[k]);
      delete run;
    } else {
      KernelContext::Frame frame = KernelFrame(step, item, inputs, outputs);
      frame.frame_id = node.frame->frame_id;
      frame.iter_id = node.iter->iter;
      if (!item.expensive) {
        // Not timed: a clock read costs as much as a cheap kernel.
        frame.eigen_cpu = device_->eigen_cpu();
        KernelContext ctx(frame);
        status = item.kernel->Compute(ctx);
      } else {
        KernelCost& cost = costs_[node.id];
        const bool parallel = parallel_kernels_ && cost.UseParallel();
        frame.eigen_cpu = parallel ? device_->eigen_cpu() : device_->eigen_cpu_serial();
        const auto start = std::chrono::steady_clock::now();
        {
          KernelContext ctx(frame);
          status = item.kernel->Compute(ctx);
        }
        cost.Record(parallel, std::chrono::duration_cast<std::chrono::nanoseconds>(
                                  std::chrono::steady_clock::now() - start)
                                  .count());
      }
    }
  }
  return FinishFlowNode(step, node, outputs, std::move(status), start_micros) ? NodeResult::kDone
                                                                              : NodeResult::kFailed;
}

bool Executor::FinishFlowNode(PartitionRun* step, const TaggedNode& node, TensorValue* outputs,
                              absl::Status status, int64_t start_micros) const {
  const NodeItem& item = items_[node.id];
  TensorValue* inputs = node.iter->inputs.data() + flow_->nodes[node.id].input_start;
  for (int32_t i = 0; i < item.num_inputs; ++i) Clear(inputs[i]);
  if (!status.ok()) {
    FailInFrame(step, node, status);
    return false;
  }
  if (step->collect_stats && !node.dead) RecordStats(step, item, start_micros, outputs);
  if (item.fetch_begin == item.fetch_end) return true;
  const bool exit = flow_->nodes[node.id].kind == FlowKind::kExit;
  for (int32_t f = item.fetch_begin; f < item.fetch_end; ++f) {
    const int32_t output = node_fetches_[f].first;
    if (!outputs[output].is_ref() && !outputs[output].tensor.IsInitialized()) {
      // An Exit is dead in every iteration but the last; the step's end
      // checks that it had a value once.
      if (exit) return true;
      Fail(step, item,
           absl::InvalidArgumentError(absl::StrFormat(
               "fetched output %d is dead: it lies on a branch of a cond that was not taken",
               output)));
      return false;
    }
  }
  return FetchOutputs(step, item, outputs);
}

void Executor::FailInFrame(PartitionRun* step, const TaggedNode& node,
                           const absl::Status& status) const {
  if (node.frame->frame_id == 0) return Fail(step, items_[node.id], status);
  Fail(step, items_[node.id],
       absl::Status(status.code(),
                    absl::StrFormat("%s (in frame '%s', iteration %d)", status.message(),
                                    node.frame->name, node.iter->iter)));
}

int Executor::PropagateFlow(PartitionRun* step, const TaggedNode& node, TensorValue* outputs,
                            TaggedList* cheap, TaggedList* expensive) const {
  TaggedList readied;
  {
    absl::MutexLock lock(&step->flow->mu);
    step->flow->Propagate(node, outputs, &readied);
  }
  for (int32_t k = 0; k < items_[node.id].num_outputs; ++k) Clear(outputs[k]);
  for (const TaggedNode& next : readied) {
    (IsExpensive(next) ? expensive : cheap)->push_back(next);
  }
  return static_cast<int>(readied.size());
}

void Executor::FinishFlowAsync(PartitionRun* step, const TaggedNode& node, TensorValue* outputs,
                               bool ok) const {
  TaggedList ready;
  TaggedList expensive;
  const int num_ready = ok ? PropagateFlow(step, node, outputs, &ready, &expensive) : 0;
  const int delta = num_ready - 1;
  if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
    Finish(step);
    return;
  }
  if (num_ready == 0) return;
  ready.insert(ready.end(), expensive.begin(), expensive.end());
  if (InlineContinuations::Defer(pool_, [this, step, ready] { ProcessFlow(step, ready); })) return;
  if (QuickContinuationsHere::Active() && pool_ != nullptr && parallel_nodes_) {
    return ProcessFlowQuick(step, std::move(ready));
  }
  if (pool_ == nullptr) {
    ProcessFlow(step, std::move(ready));
  } else {
    ProcessFlowOnPool(step, std::move(ready));
  }
}

}  // namespace rill
