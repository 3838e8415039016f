// Running an executor's steps: pending counts, inline and pool dispatch,
// async kernels, early frees.
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/executor_items.h"

namespace rill {
namespace {

using executor_internal::Clear;
using executor_internal::NowMicros;

// Moves the value out, leaving `value` empty.
TensorValue Take(TensorValue& value) {
  TensorValue taken{std::move(value.tensor), value.ref, value.ref_mu};
  value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
  return taken;
}

}  // namespace

absl::Status Executor::Run(const Args& args, std::vector<Tensor>* fetched) const {
  absl::Notification finished;
  absl::Status result;
  PartitionRun* step = Begin(args, fetched, [&](absl::Status status) {
    result = std::move(status);
    finished.Notify();
  });
  if (step != nullptr) ProcessRootsHere(step);
  finished.WaitForNotification();
  return result;
}

void Executor::RunAsync(const Args& args, std::vector<Tensor>* fetched, DoneCallback done) const {
  PartitionRun* step = Begin(args, fetched, std::move(done));
  if (step == nullptr) return;
  if (args.runner == nullptr && flow_ != nullptr) {
    return pool_->Schedule([this, step] { ProcessRootsHere(step); });
  }
  if (args.runner == nullptr) return ProcessOnPool(step, ReadyList(roots_.begin(), roots_.end()));
  args.runner([this, step] { ProcessRootsHere(step); });
}

Executor::PartitionRun* Executor::Begin(const Args& args, std::vector<Tensor>* fetched,
                                        DoneCallback done) const {
  if (absl::Status status = CheckFeeds(args); !status.ok()) {
    done(std::move(status));
    return nullptr;
  }
  PartitionRun* step = StartStep(args, fetched, std::move(done));
  if ((flow_ != nullptr ? flow_->roots : roots_).empty()) {
    Finish(step);
    return nullptr;
  }
  return step;
}

void Executor::ProcessRootsHere(PartitionRun* step) const {
  if (flow_ != nullptr) return ProcessFlowRootsHere(step);
  if (QuickContinuationsHere::Active() && pool_ != nullptr) {
    // No InlineContinuations scope: what another partition readies from
    // here must not wait for (or run on) this thread.
    if (parallel_nodes_) return ProcessQuick(step, roots_);
    return ProcessOnPool(step, ReadyList(roots_.begin(), roots_.end()));
  }
  InlineContinuations scope;
  Process(step, roots_);
}

void Executor::ProcessOnPool(PartitionRun* step, ReadyList first) const {
  pool_->Schedule([this, step, first = std::move(first)] {
    InlineContinuations scope;
    Process(step, first);
  });
}

bool Executor::MayRunLong(int32_t id) const {
  if (!items_[id].expensive) return false;
  const int64_t estimate = costs_[id].EstimateNanos();
  return estimate == 0 || estimate >= kMinHandOffNanos;
}

void Executor::Process(PartitionRun* step, absl::Span<const int32_t> first) const {
  ReadyList ready;
  ReadyList expensive;
  for (int32_t id : first) (items_[id].expensive ? expensive : ready).push_back(id);
  Dispatch(step, &expensive, &ready);
  while (!ready.empty()) {
    const int32_t id = ready.back();
    ready.pop_back();
    int num_ready = 0;
    if (!step->cancellation->cancelled()) {
      // Work queued for this thread should not wait behind a long kernel.
      if (MayRunLong(id) && InlineContinuations::AnyQueued()) InlineContinuations::HandOff();
      const NodeResult result = RunNode(step, id);
      if (result == NodeResult::kPending) {
        // Still outstanding: FinishAsync accounts for it.
        Dispatch(step, &expensive, &ready);
        continue;
      }
      if (result == NodeResult::kDone) num_ready = Propagate(step, id, &ready, &expensive);
    }
    // Count the readied nodes before handing any to another thread, so that
    // the count cannot reach 0 while they are pending.
    const int delta = num_ready - 1;
    if (delta != 0 &&
        // Acq_rel: the thread that brings it to 0 must see every other
        // thread's writes to the step before finishing it.
        step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      Finish(step);
      return;
    }
    Dispatch(step, &expensive, &ready);
  }
}

void Executor::ProcessQuick(PartitionRun* step, absl::Span<const int32_t> first) const {
  const auto start = std::chrono::steady_clock::now();
  ReadyList ready;
  ReadyList readied(first.begin(), first.end());
  for (;;) {
    // Only after the readied nodes have been counted (below) may any of
    // them go to another thread, as in Process.
    for (int32_t id : readied) {
      if (MayRunLong(id)) {
        ProcessOnPool(step, ReadyList{id});
      } else {
        ready.push_back(id);
      }
    }
    readied.clear();
    if (ready.empty()) return;
    if (std::chrono::steady_clock::now() - start >=
        std::chrono::nanoseconds(kQuickRunBudgetNanos)) {
      return ProcessOnPool(step, std::move(ready));
    }
    const int32_t id = ready.back();
    ready.pop_back();
    int num_ready = 0;
    if (!step->cancellation->cancelled()) {
      const NodeResult result = RunNode(step, id);
      if (result == NodeResult::kPending) continue;  // FinishAsync accounts for it.
      if (result == NodeResult::kDone) num_ready = Propagate(step, id, &readied, &readied);
    }
    const int delta = num_ready - 1;
    // Acq_rel: as in Process.
    if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      return Finish(step);
    }
  }
}

void Executor::Dispatch(PartitionRun* step, ReadyList* expensive, ReadyList* ready) const {
  if (expensive->empty()) return;
  for (size_t j = 0; j < expensive->size(); ++j) {
    const int32_t id = (*expensive)[j];
    // With nothing cheap left to do here, this thread runs the last
    // expensive node itself rather than going idle. A node not yet measured
    // (estimate 0) is assumed worth the hand-off.
    if (pool_ == nullptr || !parallel_nodes_ || !MayRunLong(id) ||
        (j + 1 == expensive->size() && ready->empty())) {
      ready->push_back(id);
    } else {
      ProcessOnPool(step, ReadyList{id});
    }
  }
  expensive->clear();
}

// The state of an async kernel between ComputeAsync and its callback.
struct Executor::AsyncRun {
  explicit AsyncRun(const KernelContext::Frame& frame) : ctx(frame) {}
  KernelContext ctx;
  int64_t start_micros = 0;
  absl::Status status;
  // kRunning until ComputeAsync returns or the callback runs, whichever is
  // first; the second one to arrive finishes the node.
  static constexpr int kRunning = 0, kCallbackFirst = 1, kReturnedFirst = 2;
  std::atomic<int> phase{kRunning};
};

bool Executor::DerefInputs(PartitionRun* step, const NodeItem& item, TensorValue* inputs) const {
  for (int32_t d = item.deref_begin; d < item.deref_end; ++d) {
    const auto [input, src] = deref_inputs_[d];
    TensorValue& value = inputs[input];
    if (!value.is_ref()) continue;  // Dead (an untaken branch).
    Tensor current;
    {
      absl::MutexLock lock(value.ref_mu);
      current = *value.ref;
    }
    if (!current.IsInitialized() && !item.allows_uninitialized_input) {
      FailUninitialized(step, item, items_[src].def->name());
      return false;
    }
    value = TensorValue{std::move(current)};
  }
  return true;
}

KernelContext::Frame Executor::KernelFrame(PartitionRun* step, const NodeItem& item,
                                           TensorValue* inputs, TensorValue* outputs) const {
  KernelContext::Frame frame;
  frame.node = item.def;
  frame.inputs = absl::MakeConstSpan(inputs, item.num_inputs);
  frame.outputs = absl::MakeSpan(outputs, item.num_outputs);
  frame.output_types = item.output_types;
  frame.allocator = device_->allocator();
  frame.step_id = step->step_id;
  frame.resource_manager = device_->resource_manager();
  frame.cancellation = step->cancellation;
  frame.device_context = device_->device_context();
  frame.rendezvous = step->rendezvous;
  return frame;
}

Executor::NodeResult Executor::RunNode(PartitionRun* step, int32_t id) const {
  const NodeItem& item = items_[id];
  TensorValue* inputs = step->inputs.data() + item.input_start;
  TensorValue* outputs = step->outputs.data() + item.output_start;
  if (!DerefInputs(step, item, inputs)) return NodeResult::kFailed;

  const int64_t start_micros = step->collect_stats ? NowMicros() : 0;
  KernelContext::Frame frame = KernelFrame(step, item, inputs, outputs);
  absl::Status status;
  {
    // The device's profiler range covers the kernel's launches, not the
    // bookkeeping after them.
    const ScopedOpRange range(*device_, *item.def);
    if (const AsyncOpKernel* async = item.async; async != nullptr) {
      frame.eigen_cpu = device_->eigen_cpu();
      auto* run = new AsyncRun(frame);
      run->start_micros = start_micros;
      async->ComputeAsync(run->ctx, [this, step, id, run](absl::Status done_status) {
        run->status = std::move(done_status);
        int expected = AsyncRun::kRunning;
        // Acq_rel: whoever finishes the node must see the other's writes.
        if (run->phase.compare_exchange_strong(expected, AsyncRun::kCallbackFirst,
                                               std::memory_order_acq_rel)) {
          return;  // Finished inline; RunNode carries on.
        }
        const bool ok = FinishNode(step, id, std::move(run->status), run->start_micros);
        delete run;
        FinishAsync(step, id, ok);
      });
      int expected = AsyncRun::kRunning;
      if (run->phase.compare_exchange_strong(expected, AsyncRun::kReturnedFirst,
                                             std::memory_order_acq_rel)) {
        return NodeResult::kPending;
      }
      status = std::move(run->status);
      delete run;
    } else if (item.expensive) {
      KernelCost& cost = costs_[id];
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
    } else {
      frame.eigen_cpu = device_->eigen_cpu();
      KernelContext ctx(frame);
      status = item.kernel->Compute(ctx);
    }
  }
  return FinishNode(step, id, std::move(status), start_micros) ? NodeResult::kDone
                                                               : NodeResult::kFailed;
}

bool Executor::FinishNode(PartitionRun* step, int32_t id, absl::Status status,
                          int64_t start_micros) const {
  const NodeItem& item = items_[id];
  TensorValue* inputs = step->inputs.data() + item.input_start;
  TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t i = 0; i < item.num_inputs; ++i) Clear(inputs[i]);
  if (status.ok()) {
    for (int32_t k = 0; k < item.num_outputs; ++k) {
      if (output_needed_[item.output_start + k] && !outputs[k].is_ref() &&
          !outputs[k].tensor.IsInitialized()) {
        status = absl::InternalError(absl::StrFormat("the kernel did not set output %d", k));
        break;
      }
    }
  }
  if (status.ok() && step->collect_stats) RecordStats(step, item, start_micros, outputs);
  if (status.ok() && (item.fetch_begin == item.fetch_end || FetchOutputs(step, item, outputs))) {
    return true;
  }
  if (!status.ok()) Fail(step, item, status);
  for (int32_t k = 0; k < item.num_outputs; ++k) Clear(outputs[k]);
  return false;
}

void Executor::FinishAsync(PartitionRun* step, int32_t id, bool ok) const {
  ReadyList ready;
  ReadyList expensive;
  const int num_ready = ok ? Propagate(step, id, &ready, &expensive) : 0;
  const int delta = num_ready - 1;
  // Acq_rel: as in Process.
  if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
    Finish(step);
    return;
  }
  if (num_ready == 0) return;
  ready.insert(ready.end(), expensive.begin(), expensive.end());
  // The callback may run inside another node's Send, on another
  // partition's thread: the readied nodes continue once that thread is
  // done with its own work, or on the pool.
  if (InlineContinuations::Defer(pool_, [this, step, ready] { Process(step, ready); })) return;
  if (QuickContinuationsHere::Active() && pool_ != nullptr && parallel_nodes_) {
    return ProcessQuick(step, ready);
  }
  if (pool_ == nullptr) {
    Process(step, ready);
  } else {
    ProcessOnPool(step, std::move(ready));
  }
}

int Executor::Propagate(PartitionRun* step, int32_t id, ReadyList* cheap,
                        ReadyList* expensive) const {
  const NodeItem& item = items_[id];
  TensorValue* outputs = step->outputs.data() + item.output_start;
  int num_ready = 0;
  const auto release = [&](int32_t dst, bool sole_input) {
    // Acq_rel: the last producer to decrement runs `dst` and must see the
    // other producers' writes to its input slots. A node that waits for
    // one edge has one producer, this thread: the atomic read-modify-write,
    // most of what handing on a value costs, could only count 1 to 0.
    if (sole_input || step->pending[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      (items_[dst].expensive ? expensive : cheap)->push_back(dst);
      ++num_ready;
    }
  };
  for (int32_t e = item.out_edges_begin; e < item.out_edges_end; ++e) {
    const OutEdge& edge = out_edges_[e];
    TensorValue& output = outputs[edge.output];
    if (edge.last_use) {
      step->inputs[edge.dst_slot] = Take(output);
    } else {
      step->inputs[edge.dst_slot] = output;
    }
    release(edge.dst, edge.sole_input);
  }
  for (int32_t c = item.control_begin; c < item.control_end; ++c) {
    release(control_edges_[c], initial_pending_[control_edges_[c]] == 1);
  }
  // Outputs nobody reads (and fetched ones) are released now.
  for (int32_t k = 0; k < item.num_outputs; ++k) Clear(outputs[k]);
  return num_ready;
}

}  // namespace rill
