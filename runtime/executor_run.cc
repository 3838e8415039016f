// Running an executor's steps: pending counts, inline and pool dispatch,
// async kernels, early frees, the first error cancelling the step.
#include <algorithm>
#include <chrono>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "runtime/executor.h"
#include "runtime/executor_items.h"

namespace rill {
namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Clear(TensorValue& value) {
  // Most slots are empty already (their value was taken): no stores then.
  if (value.tensor.IsInitialized()) value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
}

// Moves the value out, leaving `value` empty.
TensorValue Take(TensorValue& value) {
  TensorValue taken{std::move(value.tensor), value.ref, value.ref_mu};
  value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
  return taken;
}

absl::Status WithNode(const OpKernel& kernel, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrFormat("node '%s' (%s): %s", kernel.name(),
                                                     kernel.op(), status.message()));
}

}  // namespace

absl::Status CheckFedValue(std::string_view name, DataType dtype, const PartialTensorShape& shape,
                           const Tensor& value) {
  if (!value.IsInitialized()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the value fed for tensor '%s' holds no data", name));
  }
  if (value.dtype() != dtype) {
    return absl::InvalidArgumentError(
        absl::StrFormat("tensor '%s' has dtype %s, but the value fed for it has dtype %s", name,
                        DataTypeString(dtype), DataTypeString(value.dtype())));
  }
  if (!shape.IsCompatibleWith(value.shape())) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Cannot feed value of shape %s for tensor '%s', which has shape %s",
                        value.shape().DebugString(), name, shape.DebugString()));
  }
  return absl::OkStatus();
}

absl::Status Executor::CheckFeeds(const Args& args) const {
  if (args.feeds.size() != feeds_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("expected %d fed values, got %d", feeds_.size(), args.feeds.size()));
  }
  for (size_t j = 0; j < feeds_.size(); ++j) {
    RETURN_IF_ERROR(CheckFedValue(feeds_[j].name, feeds_[j].dtype, feeds_[j].shape, args.feeds[j]));
  }
  return absl::OkStatus();
}

Executor::Step* Executor::StartStep(const Args& args, std::vector<Tensor>* fetched,
                                    DoneCallback done) const {
  std::unique_ptr<Step> step;
  {
    absl::MutexLock lock(&free_steps_mu_);
    if (!free_steps_.empty()) {
      step = std::move(free_steps_.back());
      free_steps_.pop_back();
    }
  }
  if (step == nullptr) {
    step = std::make_unique<Step>();
    step->inputs.resize(num_input_slots_);
    step->outputs.resize(num_output_slots_);
    step->pending = std::make_unique<std::atomic<int32_t>[]>(items_.size());
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    // Relaxed: the step is not yet shared; starting it publishes these.
    step->pending[i].store(initial_pending_[i], std::memory_order_relaxed);
  }
  step->outstanding.store(static_cast<int32_t>(roots_.size()), std::memory_order_relaxed);
  if (args.cancellation != nullptr) {
    step->cancellation = args.cancellation;
  } else {
    step->own_cancellation.emplace();
    step->cancellation = &*step->own_cancellation;
  }
  step->step_id = args.step_id;
  {
    absl::MutexLock lock(&step->stats_mu);
    step->stats = args.stats;
  }
  step->collect_stats = args.stats != nullptr;
  step->rendezvous = args.rendezvous;
  step->done = std::move(done);
  step->fetched = fetched;
  fetched->assign(num_fetches_, Tensor());
  for (const auto& [fetch, feed] : fetches_from_feeds_) (*fetched)[fetch] = args.feeds[feed];
  for (size_t j = 0; j < feeds_.size(); ++j) {
    for (int32_t slot : feeds_[j].slots) step->inputs[slot].tensor = args.feeds[j];
  }
  return step.release();
}

absl::Status Executor::Run(const Args& args, std::vector<Tensor>* fetched) const {
  absl::Notification finished;
  absl::Status result;
  RunAsyncStartingHere(args, fetched, [&](absl::Status status) {
    result = std::move(status);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

void Executor::RunAsync(const Args& args, std::vector<Tensor>* fetched, DoneCallback done) const {
  Begin(args, fetched, std::move(done), StartOn::kPool);
}

void Executor::RunAsyncStartingHere(const Args& args, std::vector<Tensor>* fetched,
                                    DoneCallback done) const {
  Begin(args, fetched, std::move(done), StartOn::kThisThread);
}

void Executor::RunAsyncQuickHere(const Args& args, std::vector<Tensor>* fetched,
                                 DoneCallback done) const {
  Begin(args, fetched, std::move(done),
        parallel_nodes_ ? StartOn::kThisThreadQuickOnly : StartOn::kPool);
}

void Executor::Begin(const Args& args, std::vector<Tensor>* fetched, DoneCallback done,
                     StartOn start_on) const {
  if (absl::Status status = CheckFeeds(args); !status.ok()) {
    done(std::move(status));
    return;
  }
  Step* step = StartStep(args, fetched, std::move(done));
  if (roots_.empty()) {
    Finish(step);
    return;
  }
  switch (start_on) {
    case StartOn::kPool:
      return ProcessOnPool(step, ReadyList(roots_.begin(), roots_.end()));
    case StartOn::kThisThread: {
      InlineContinuations scope;
      return Process(step, roots_);
    }
    case StartOn::kThisThreadQuickOnly:
      // No InlineContinuations scope: what another partition readies from
      // here must not wait for (or run on) this thread.
      return ProcessQuick(step, roots_);
  }
}

void Executor::ProcessOnPool(Step* step, ReadyList first) const {
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

void Executor::Process(Step* step, absl::Span<const int32_t> first) const {
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

void Executor::ProcessQuick(Step* step, absl::Span<const int32_t> first) const {
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

void Executor::Dispatch(Step* step, ReadyList* expensive, ReadyList* ready) const {
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

Executor::NodeResult Executor::RunNode(Step* step, int32_t id) const {
  const NodeItem& item = items_[id];
  TensorValue* inputs = step->inputs.data() + item.input_start;
  TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t d = item.deref_begin; d < item.deref_end; ++d) {
    const auto [input, src] = deref_inputs_[d];
    TensorValue& value = inputs[input];
    Tensor current;
    {
      absl::MutexLock lock(value.ref_mu);
      current = *value.ref;
    }
    if (!current.IsInitialized() && !item.allows_uninitialized_input) {
      FailUninitialized(step, item, items_[src].def->name());
      return NodeResult::kFailed;
    }
    value = TensorValue{std::move(current)};
  }

  const int64_t start_micros = step->collect_stats ? NowMicros() : 0;
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
  absl::Status status;
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
  return FinishNode(step, id, std::move(status), start_micros) ? NodeResult::kDone
                                                               : NodeResult::kFailed;
}

bool Executor::FinishNode(Step* step, int32_t id, absl::Status status, int64_t start_micros) const {
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
  if (status.ok() && step->collect_stats) RecordStats(step, item, start_micros);
  if (status.ok() && (item.fetch_begin == item.fetch_end || FetchOutputs(step, item))) return true;
  if (!status.ok()) Fail(step, item, status);
  for (int32_t k = 0; k < item.num_outputs; ++k) Clear(outputs[k]);
  return false;
}

void Executor::FinishAsync(Step* step, int32_t id, bool ok) const {
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

void Executor::Fail(Step* step, const NodeItem& item, const absl::Status& status) const {
  Abort(step, WithNode(*item.kernel, status));
}

void Executor::FailUninitialized(Step* step, const NodeItem& item,
                                 const std::string& variable) const {
  // The variable leads: the reader may be a _Send the partitioner made.
  Abort(step, absl::FailedPreconditionError(absl::StrFormat(
                  "Attempting to use uninitialized value %s (read by node '%s' (%s) on %s)",
                  variable, item.kernel->name(), item.kernel->op(), device_->name())));
}

void Executor::Abort(Step* step, const absl::Status& status) const {
  if (step->rendezvous != nullptr) step->rendezvous->StartAbort(status);
  step->cancellation->Cancel(status);
}

bool Executor::FetchOutputs(Step* step, const NodeItem& item) const {
  const TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t f = item.fetch_begin; f < item.fetch_end; ++f) {
    const auto [output, fetch] = node_fetches_[f];
    const TensorValue& value = outputs[output];
    if (!value.is_ref()) {
      (*step->fetched)[fetch] = value.tensor;
      continue;
    }
    // A snapshot, so that later steps updating the variable do not change
    // what this step returned.
    Tensor snapshot;
    {
      absl::MutexLock lock(value.ref_mu);
      snapshot = value.ref->DeepCopy();
    }
    if (!snapshot.IsInitialized()) {
      FailUninitialized(step, item, item.def->name());
      return false;
    }
    (*step->fetched)[fetch] = std::move(snapshot);
  }
  return true;
}

int Executor::Propagate(Step* step, int32_t id, ReadyList* cheap, ReadyList* expensive) const {
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

void Executor::RecordStats(Step* step, const NodeItem& item, int64_t start_micros) const {
  NodeExecStats stats;
  stats.node_name = item.def->name();
  stats.op = item.def->op();
  stats.device = device_->name();
  stats.start_micros = start_micros;
  stats.end_micros = NowMicros();
  if (const char* peer = item.def->op() == "_Send"   ? "recv_device"
                         : item.def->op() == "_Recv" ? "send_device"
                                                     : nullptr) {
    const auto& attrs = item.def->attr();
    if (const auto it = attrs.find(peer); it != attrs.end()) stats.peer_device = it->second.s();
    if (const auto it = attrs.find("tensor_name"); it != attrs.end()) {
      stats.tensor_name = it->second.s();
    }
  }
  const TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t k = 0; k < item.num_outputs; ++k) {
    if (!outputs[k].is_ref())
      stats.output_bytes += static_cast<int64_t>(outputs[k].tensor.TotalBytes());
  }
  absl::MutexLock lock(&step->stats_mu);
  step->stats->push_back(std::move(stats));
}

void Executor::Finish(Step* step) const {
  const absl::Status status = step->cancellation->status();
  if (!status.ok()) {
    // Nodes that never ran left values in their input slots.
    for (TensorValue& value : step->inputs) Clear(value);
    step->fetched->clear();
  }
  DoneCallback done = std::move(step->done);
  step->done = nullptr;
  step->own_cancellation.reset();
  step->cancellation = nullptr;
  step->rendezvous = nullptr;
  step->fetched = nullptr;
  {
    absl::MutexLock lock(&free_steps_mu_);
    free_steps_.emplace_back(step);
  }
  // The executor may be gone once `done` has run.
  done(status);
}

}  // namespace rill
