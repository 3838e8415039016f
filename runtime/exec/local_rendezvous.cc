#include "runtime/exec/local_rendezvous.h"

#include <utility>
#include <vector>

#include "absl/strings/str_format.h"

namespace rill {

LocalRendezvous::~LocalRendezvous() {
  StartAbort(absl::CancelledError("the step's rendezvous was destroyed"));
}

absl::Status LocalRendezvous::SendText(std::string_view key, const Tensor& value) {
  DoneCallback receiver;
  {
    absl::MutexLock lock(&mu_);
    if (!aborted_.ok()) return aborted_;
    Slot& slot = slots_[std::string(key)];
    if (slot.sent) {
      return absl::AlreadyExistsError(
          absl::StrFormat("Send of '%s' twice in one step", std::string(key)));
    }
    slot.sent = true;
    if (slot.waiting == nullptr) {
      slot.value = value;
      return absl::OkStatus();
    }
    slot.received = true;
    receiver = std::move(slot.waiting);
    slot.waiting = nullptr;
  }
  receiver(absl::OkStatus(), value);
  return absl::OkStatus();
}

void LocalRendezvous::RecvAsync(const PreparedRendezvousKey& prepared, DoneCallback done) {
  const std::string& key = prepared.text;
  absl::Status error;
  Tensor value;
  {
    absl::MutexLock lock(&mu_);
    Slot& slot = slots_[key];
    if (!aborted_.ok()) {
      error = aborted_;
    } else if (slot.received || slot.waiting != nullptr) {
      error = absl::AlreadyExistsError(absl::StrFormat("Recv of '%s' twice in one step", key));
    } else if (!slot.sent) {
      slot.waiting = std::move(done);
      return;
    } else {
      slot.received = true;
      value = std::move(slot.value);
      slot.value = Tensor();
    }
  }
  done(error, value);
}

void LocalRendezvous::StartAbort(const absl::Status& status) {
  std::vector<DoneCallback> waiting;
  {
    absl::MutexLock lock(&mu_);
    if (!aborted_.ok()) return;
    aborted_ = status;
    for (auto& [key, slot] : slots_) {
      if (slot.waiting != nullptr) waiting.push_back(std::move(slot.waiting));
      slot.waiting = nullptr;
      slot.value = Tensor();
    }
  }
  for (DoneCallback& done : waiting) done(status, Tensor());
}

}  // namespace rill
