// Starting and ending an executor's steps: fed values checked, per-step
// state reused, fetches and stats recorded, the first error cancelling it.
#include <string>
#include <string_view>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "kernels/framework/device_context.h"
#include "kernels/framework/step_resources.h"
#include "runtime/exec/executor.h"
#include "runtime/exec/executor_items.h"

namespace rill {
namespace {

using executor_internal::Clear;
using executor_internal::NowMicros;

// "node 'NAME' (OP) on DEVICE: message", as STYLE.md's errors read.
absl::Status WithNode(const OpKernel& kernel, const Device& device, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrFormat("node '%s' (%s) on %s: %s", kernel.name(),
                                                     kernel.op(), device.name(), status.message()));
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

Executor::PartitionRun* Executor::StartStep(const Args& args, std::vector<Tensor>* fetched,
                                            DoneCallback done) const {
  std::unique_ptr<PartitionRun> step;
  {
    absl::MutexLock lock(&free_steps_mu_);
    if (!free_steps_.empty()) {
      step = std::move(free_steps_.back());
      free_steps_.pop_back();
    }
  }
  if (step == nullptr) {
    step = std::make_unique<PartitionRun>();
    step->inputs.resize(num_input_slots_);
    step->outputs.resize(num_output_slots_);
    step->pending = std::make_unique<std::atomic<int32_t>[]>(items_.size());
  }
  if (flow_ == nullptr) {
    for (size_t i = 0; i < items_.size(); ++i) {
      // Relaxed: the step is not yet shared; starting it publishes these.
      step->pending[i].store(initial_pending_[i], std::memory_order_relaxed);
    }
    step->outstanding.store(static_cast<int32_t>(roots_.size()), std::memory_order_relaxed);
  }
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
  if (flow_ != nullptr) {
    StartFlowStep(step.get(), args);
  } else {
    for (size_t j = 0; j < feeds_.size(); ++j) {
      for (int32_t slot : feeds_[j].slots) step->inputs[slot].tensor = args.feeds[j];
    }
  }
  return step.release();
}

void Executor::Fail(PartitionRun* step, const NodeItem& item, const absl::Status& status) const {
  Abort(step, WithNode(*item.kernel, *device_, status));
}

void Executor::FailUninitialized(PartitionRun* step, const NodeItem& item,
                                 const std::string& variable) const {
  // The variable leads: the reader may be a _Send the partitioner made.
  Abort(step, absl::FailedPreconditionError(absl::StrFormat(
                  "Attempting to use uninitialized value %s (read by node '%s' (%s) on %s)",
                  variable, item.kernel->name(), item.kernel->op(), device_->name())));
}

void Executor::Abort(PartitionRun* step, const absl::Status& status) const {
  if (step->rendezvous != nullptr) step->rendezvous->StartAbort(status);
  step->cancellation->Cancel(status);
}

absl::StatusOr<Tensor> Executor::Snapshot(const Tensor& value) const {
  DeviceContext* device = device_->device_context();
  if (device == nullptr || !value.IsInitialized() || InHostMemory(value.dtype()) ||
      value.TotalBytes() == 0) {
    return value.DeepCopy();
  }
  // In the device's memory, copied there in order with its kernels.
  ASSIGN_OR_RETURN(Tensor copy,
                   Tensor::Allocate(device_->allocator(), value.dtype(), value.shape()));
  RETURN_IF_ERROR(device->CopyWithinDevice(value.raw_data(), copy.raw_data(), value.TotalBytes()));
  return copy;
}

bool Executor::FetchOutputs(PartitionRun* step, const NodeItem& item,
                            const TensorValue* outputs) const {
  for (int32_t f = item.fetch_begin; f < item.fetch_end; ++f) {
    const auto [output, fetch] = node_fetches_[f];
    const TensorValue& value = outputs[output];
    if (!value.is_ref()) {
      (*step->fetched)[fetch] = value.tensor;
      continue;
    }
    // A snapshot, so that later steps updating the variable do not change
    // what this step returned.
    absl::StatusOr<Tensor> snapshot;
    {
      absl::MutexLock lock(value.ref_mu);
      snapshot = Snapshot(*value.ref);
    }
    if (!snapshot.ok()) {
      Fail(step, item, snapshot.status());
      return false;
    }
    if (!snapshot->IsInitialized()) {
      FailUninitialized(step, item, item.def->name());
      return false;
    }
    (*step->fetched)[fetch] = *std::move(snapshot);
  }
  return true;
}

void Executor::RecordStats(PartitionRun* step, const NodeItem& item, int64_t start_micros,
                           const TensorValue* outputs) const {
  NodeExecStats stats;
  stats.node_name = item.def->name();
  stats.op = item.def->op();
  stats.device = device_->name();
  stats.start_micros = start_micros;
  stats.end_micros = NowMicros();
  if (counted_allocator_ != nullptr) stats.memory_in_use = counted_allocator_->Stats().bytes_in_use;
  if (const char* peer = item.def->op() == "_Send"   ? "recv_device"
                         : item.def->op() == "_Recv" ? "send_device"
                                                     : nullptr) {
    const auto& attrs = item.def->attr();
    if (const auto it = attrs.find(peer); it != attrs.end()) stats.peer_device = it->second.s();
    if (const auto it = attrs.find("tensor_name"); it != attrs.end()) {
      stats.tensor_name = it->second.s();
    }
  }
  for (int32_t k = 0; k < item.num_outputs; ++k) {
    if (!outputs[k].is_ref())
      stats.output_bytes += static_cast<int64_t>(outputs[k].tensor.TotalBytes());
  }
  absl::MutexLock lock(&step->stats_mu);
  step->stats->push_back(std::move(stats));
}

void Executor::Finish(PartitionRun* step) const {
  absl::Status status = step->cancellation->status();
  if (!status.ok()) {
    // Nodes that never ran left values in their input slots.
    for (TensorValue& value : step->inputs) Clear(value);
    step->fetched->clear();
  }
  if (step->flow != nullptr) {
    absl::MutexLock lock(&step->flow->mu);
    step->flow->Clear();
  }
  if (makes_step_resources_ && device_->resource_manager() != nullptr) {
    CleanupStepResources(*device_->resource_manager(), step->step_id);
  }
  if (status.ok() && flow_ != nullptr) {
    for (size_t f = 0; f < step->fetched->size(); ++f) {
      if (!(*step->fetched)[f].IsInitialized()) {
        status = absl::InvalidArgumentError(absl::StrFormat(
            "fetched tensor '%s' is dead: the loop it leaves lies on a branch of a cond that "
            "was not taken",
            fetch_names_[f]));
        step->fetched->clear();
        break;
      }
    }
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
