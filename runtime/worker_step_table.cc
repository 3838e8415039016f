#include "runtime/worker_step_table.h"

#include <utility>

namespace rill {

WorkerStepTable::WorkerStepTable(std::string task, PushTensorFn push)
    : task_(std::move(task)), push_(std::move(push)) {}

WorkerStepTable::Entry* WorkerStepTable::FindOrCreate(uint64_t step_id) {
  if (ended_.contains(step_id)) return nullptr;
  Entry& entry = live_[step_id];
  if (entry.rendezvous == nullptr) {
    entry.rendezvous = std::make_shared<RemoteRendezvous>(task_, step_id, push_);
  }
  return &entry;
}

std::shared_ptr<RemoteRendezvous> WorkerStepTable::Rendezvous(uint64_t step_id) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindOrCreate(step_id);
  return entry == nullptr ? nullptr : entry->rendezvous;
}

std::shared_ptr<RemoteRendezvous> WorkerStepTable::Begin(
    uint64_t step_id, std::shared_ptr<StepCancellation> cancellation) {
  absl::MutexLock lock(&mu_);
  Entry* entry = FindOrCreate(step_id);
  if (entry == nullptr) return nullptr;
  entry->cancellation = std::move(cancellation);
  return entry->rendezvous;
}

WorkerStepTable::Entry WorkerStepTable::Remove(uint64_t step_id) {
  Entry removed;
  if (auto it = live_.find(step_id); it != live_.end()) {
    removed = std::move(it->second);
    live_.erase(it);
  }
  if (ended_.insert(step_id).second) {
    ended_order_.push_back(step_id);
    if (ended_order_.size() > kRememberEnded) {
      ended_.erase(ended_order_.front());
      ended_order_.pop_front();
    }
  }
  return removed;
}

void WorkerStepTable::End(uint64_t step_id) {
  Entry removed;
  {
    absl::MutexLock lock(&mu_);
    removed = Remove(step_id);
  }
  // Released outside the lock: the last reference may run destructors
  // that abort waiting receivers.
}

void WorkerStepTable::Abort(uint64_t step_id, const absl::Status& status) {
  Entry removed;
  {
    absl::MutexLock lock(&mu_);
    removed = Remove(step_id);
  }
  // Outside the lock: aborting runs the receivers' and kernels' callbacks.
  if (removed.cancellation != nullptr) removed.cancellation->Cancel(status);
  if (removed.rendezvous != nullptr) removed.rendezvous->StartAbort(status);
}

}  // namespace rill
