#include "runtime/remote_rendezvous.h"

#include <utility>

#include "absl/strings/str_format.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"

namespace rill {

absl::StatusOr<std::string> TaskOfDevice(std::string_view device) {
  ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(device));
  if (!spec.job || !spec.replica || !spec.task) {
    return absl::InvalidArgumentError(
        absl::StrFormat("device '%s' does not name a job, replica and task", device));
  }
  return absl::StrFormat("/job:%s/replica:%d/task:%d", *spec.job, *spec.replica, *spec.task);
}

RemoteRendezvous::RemoteRendezvous(std::string task, uint64_t step_id, PushTensorFn push)
    : task_(std::move(task)), step_id_(step_id), push_(std::move(push)) {}

absl::Status RemoteRendezvous::Send(std::string_view key, const Tensor& value) {
  ASSIGN_OR_RETURN(const RendezvousKey parsed, RendezvousKey::Parse(key));
  ASSIGN_OR_RETURN(const std::string dst_task, TaskOfDevice(parsed.dst_device));
  if (dst_task == task_) return local_.Send(key, value);
  std::weak_ptr<RemoteRendezvous> self = weak_from_this();
  push_(dst_task, step_id_, std::string(key), value, [self, dst_task](absl::Status status) {
    if (status.ok()) return;
    if (std::shared_ptr<RemoteRendezvous> alive = self.lock()) {
      alive->StartAbort(absl::Status(status.code(), absl::StrFormat("sending a tensor to %s: %s",
                                                                    dst_task, status.message())));
    }
  });
  return absl::OkStatus();
}

void RemoteRendezvous::RecvAsync(std::string_view key, DoneCallback done) {
  local_.RecvAsync(key, std::move(done));
}

void RemoteRendezvous::StartAbort(const absl::Status& status) { local_.StartAbort(status); }

absl::Status RemoteRendezvous::Deliver(std::string_view key, const Tensor& value) {
  return local_.Send(key, value);
}

StepRendezvousTable::StepRendezvousTable(std::string task, PushTensorFn push)
    : task_(std::move(task)), push_(std::move(push)) {}

std::shared_ptr<RemoteRendezvous> StepRendezvousTable::FindOrCreate(uint64_t step_id) {
  absl::MutexLock lock(&mu_);
  if (ended_.contains(step_id)) return nullptr;
  std::shared_ptr<RemoteRendezvous>& step = live_[step_id];
  if (step == nullptr) step = std::make_shared<RemoteRendezvous>(task_, step_id, push_);
  return step;
}

void StepRendezvousTable::End(uint64_t step_id, const absl::Status& status) {
  std::shared_ptr<RemoteRendezvous> step;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = live_.find(step_id); it != live_.end()) {
      step = std::move(it->second);
      live_.erase(it);
    }
    if (ended_.insert(step_id).second) {
      ended_order_.push_back(step_id);
      if (ended_order_.size() > kRememberEnded) {
        ended_.erase(ended_order_.front());
        ended_order_.pop_front();
      }
    }
  }
  // Outside the lock: aborting runs the receivers' callbacks.
  if (step != nullptr && !status.ok()) step->StartAbort(status);
}

}  // namespace rill
