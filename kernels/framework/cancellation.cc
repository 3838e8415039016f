#include "kernels/framework/cancellation.h"

namespace rill {

void StepCancellation::Cancel(absl::Status status) {
  std::vector<std::pair<Token, Callback>> callbacks;
  absl::Status recorded;
  {
    absl::MutexLock lock(&mu_);
    if (cancelled_.load(std::memory_order_relaxed)) return;
    status_ = std::move(status);
    cancelled_.store(true, std::memory_order_release);
    if (callbacks_.empty()) return;
    callbacks.swap(callbacks_);
    recorded = status_;
    running_callbacks_ = true;
    cancelling_thread_ = std::this_thread::get_id();
  }
  for (auto& [token, callback] : callbacks) callback(recorded);
  absl::MutexLock lock(&mu_);
  running_callbacks_ = false;
}

absl::Status StepCancellation::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

bool StepCancellation::RegisterCallback(Callback callback, Token* token) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return false;
  *token = next_token_++;
  callbacks_.emplace_back(*token, std::move(callback));
  return true;
}

bool StepCancellation::TryDeregisterCallback(Token token) {
  // Destroyed after the lock is released: it may hold the last reference
  // to something whose destructor takes other locks.
  Callback dropped;
  absl::MutexLock lock(&mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return false;
  for (auto it = callbacks_.begin(); it != callbacks_.end(); ++it) {
    if (it->first == token) {
      dropped = std::move(it->second);
      callbacks_.erase(it);
      break;
    }
  }
  return true;
}

bool StepCancellation::DeregisterCallback(Token token) {
  if (TryDeregisterCallback(token)) return true;
  absl::MutexLock lock(&mu_);
  // Its callback may be running: whoever deregisters is about to free what
  // the callback uses.
  if (running_callbacks_ && cancelling_thread_ != std::this_thread::get_id()) {
    mu_.Await(absl::Condition(
        +[](bool* running) { return !*running; }, &running_callbacks_));
  }
  return false;
}

}  // namespace rill
