#include "runtime/session/worker_step_table.h"

#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"

namespace rill {

WorkerStepTable::WorkerStepTable(std::string task, PushTensorFn push,
                                 const PendingPushLimits& limits, LogSink* log)
    : task_(std::move(task)), push_(std::move(push)), limits_(limits), log_(OrDefault(log)) {}

WorkerStepTable::Entry* WorkerStepTable::FindOrCreate(uint64_t step_id) {
  if (ended_.contains(step_id)) return nullptr;
  Entry& entry = live_[step_id];
  if (entry.rendezvous == nullptr) {
    entry.rendezvous = std::make_shared<RemoteRendezvous>(task_, step_id, push_);
  }
  return &entry;
}

absl::Status WorkerStepTable::PendingFull(uint64_t step_id, int64_t bytes) {
  if (refused_++ == 0) {
    log_->Log(
        "%s: %d steps that have not begun hold %d pushed bytes (limits %d steps, %d "
        "bytes): refusing pushes for steps not begun",
        task_, pending_steps_, pending_bytes_, limits_.max_steps, limits_.max_bytes);
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "%s refuses a push of %d bytes for step %d: %d steps that have not begun hold %d pushed "
      "bytes, and its limits are %d steps and %d bytes",
      task_, bytes, step_id, pending_steps_, pending_bytes_, limits_.max_steps, limits_.max_bytes));
}

absl::Status WorkerStepTable::Deliver(uint64_t step_id, std::string_view key, const Tensor& value) {
  std::shared_ptr<RemoteRendezvous> rendezvous;
  {
    absl::MutexLock lock(&mu_);
    // A push for a step that ended here (aborted) has no receiver left.
    if (ended_.contains(step_id)) return absl::OkStatus();
    auto it = live_.find(step_id);
    // The key and its slot count too: empty tensors under many keys are
    // not free.
    const int64_t bytes =
        static_cast<int64_t>(value.TotalBytes() + key.size()) + kPushOverheadBytes;
    if (it == live_.end() || !it->second.begun) {
      const bool new_step = it == live_.end();
      if ((new_step && pending_steps_ >= limits_.max_steps) ||
          (pending_bytes_ > 0 && pending_bytes_ + bytes > limits_.max_bytes)) {
        return PendingFull(step_id, bytes);
      }
      Entry* entry = FindOrCreate(step_id);
      if (new_step) {
        ++pending_steps_;
        entry->first_push = absl::Now();
      }
      entry->pushed_bytes += bytes;
      pending_bytes_ += bytes;
      rendezvous = entry->rendezvous;
    } else {
      rendezvous = it->second.rendezvous;
    }
  }
  return rendezvous->Deliver(key, value);
}

void WorkerStepTable::Settle(Entry& entry) {
  if (entry.rendezvous == nullptr || entry.begun) return;
  entry.begun = true;
  --pending_steps_;
  pending_bytes_ -= entry.pushed_bytes;
  entry.pushed_bytes = 0;
  if (refused_ > 0 && pending_steps_ < limits_.max_steps && pending_bytes_ < limits_.max_bytes) {
    log_->Log("%s: room for pushes again (%d refused)", task_, refused_);
    refused_ = 0;
  }
}

std::shared_ptr<RemoteRendezvous> WorkerStepTable::Begin(
    uint64_t step_id, std::shared_ptr<StepCancellation> cancellation) {
  absl::MutexLock lock(&mu_);
  const bool pushed = live_.contains(step_id);
  Entry* entry = FindOrCreate(step_id);
  if (entry == nullptr) return nullptr;
  if (pushed) {
    Settle(*entry);
  } else {
    entry->begun = true;
  }
  entry->cancellation = std::move(cancellation);
  return entry->rendezvous;
}

WorkerStepTable::Entry WorkerStepTable::Remove(uint64_t step_id) {
  Entry removed;
  if (auto it = live_.find(step_id); it != live_.end()) {
    Settle(it->second);
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

int WorkerStepTable::ExpirePending(absl::Time now) {
  std::vector<Entry> expired;
  int64_t bytes = 0;
  {
    absl::MutexLock lock(&mu_);
    if (pending_steps_ == 0) return 0;
    std::vector<uint64_t> late;
    for (const auto& [step_id, entry] : live_) {
      if (!entry.begun && now - entry.first_push >= limits_.deadline) late.push_back(step_id);
    }
    for (uint64_t step_id : late) {
      bytes += live_[step_id].pushed_bytes;
      expired.push_back(Remove(step_id));
    }
  }
  if (expired.empty()) return 0;
  // Outside the lock, as Abort.
  const absl::Status status = absl::DeadlineExceededError(absl::StrFormat(
      "%s dropped the tensors pushed for this step: it did not begin within %s of the first", task_,
      absl::FormatDuration(limits_.deadline)));
  for (Entry& entry : expired) entry.rendezvous->StartAbort(status);
  log_->Log("%s: dropped %d bytes pushed for %d steps that did not begin within %s", task_, bytes,
            expired.size(), absl::FormatDuration(limits_.deadline));
  return static_cast<int>(expired.size());
}

std::pair<int, int64_t> WorkerStepTable::pending() {
  absl::MutexLock lock(&mu_);
  return {pending_steps_, pending_bytes_};
}

}  // namespace rill
