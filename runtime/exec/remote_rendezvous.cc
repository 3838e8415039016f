#include "runtime/exec/remote_rendezvous.h"

#include <utility>

#include "absl/strings/str_format.h"

namespace rill {

RemoteRendezvous::RemoteRendezvous(std::string task, uint64_t step_id, PushTensorFn push)
    : task_(std::move(task)), step_id_(step_id), push_(std::move(push)) {}

absl::Status RemoteRendezvous::Send(const PreparedRendezvousKey& key, const Tensor& value) {
  if (key.dst_task == task_) return local_.Send(key, value);
  if (push_ == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrFormat("cannot send '%s': %s talks to no other task", key.text, task_));
  }
  std::weak_ptr<RemoteRendezvous> self = weak_from_this();
  const std::string& dst_task = key.dst_task;
  push_(dst_task, step_id_, key.text, value, [self, dst_task](absl::Status status) {
    if (status.ok()) return;
    if (std::shared_ptr<RemoteRendezvous> alive = self.lock()) {
      alive->StartAbort(absl::Status(status.code(), absl::StrFormat("sending a tensor to %s: %s",
                                                                    dst_task, status.message())));
    }
  });
  return absl::OkStatus();
}

void RemoteRendezvous::RecvAsync(const PreparedRendezvousKey& key, DoneCallback done) {
  local_.RecvAsync(key, std::move(done));
}

void RemoteRendezvous::StartAbort(const absl::Status& status) { local_.StartAbort(status); }

absl::Status RemoteRendezvous::Deliver(std::string_view key, const Tensor& value) {
  return local_.SendText(key, value);
}

}  // namespace rill
