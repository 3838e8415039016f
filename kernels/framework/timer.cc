#include "kernels/framework/timer.h"

namespace rill {

Timer::Timer() = default;

Timer::~Timer() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    changed_.Signal();
  }
  if (thread_.joinable()) thread_.join();
}

Timer& Timer::Default() {
  // Never destroyed: steps may set deadlines during static destruction.
  static Timer* const timer = new Timer();
  return *timer;
}

Timer::Id Timer::Schedule(absl::Time when, std::function<void()> callback) {
  absl::MutexLock lock(&mu_);
  const Id id = next_id_++;
  const bool earliest = due_.empty() || when < due_.begin()->first.first;
  due_.emplace(std::make_pair(when, id), std::move(callback));
  when_.emplace(id, when);
  if (!thread_.joinable()) {
    thread_ = std::thread([this] { Loop(); });
  } else if (earliest) {
    changed_.Signal();
  }
  return id;
}

bool Timer::Cancel(Id id) {
  absl::MutexLock lock(&mu_);
  if (auto it = when_.find(id); it != when_.end()) {
    due_.erase({it->second, id});
    when_.erase(it);
    return true;
  }
  if (thread_.get_id() != std::this_thread::get_id()) {
    while (running_ == id) finished_.Wait(&mu_);
  }
  return false;
}

void Timer::Loop() {
  absl::MutexLock lock(&mu_);
  while (!stopping_) {
    if (due_.empty()) {
      changed_.Wait(&mu_);
      continue;
    }
    const absl::Time next = due_.begin()->first.first;
    if (absl::Now() < next) {
      changed_.WaitWithDeadline(&mu_, next);
      continue;
    }
    auto first = due_.begin();
    const Id id = first->first.second;
    std::function<void()> callback = std::move(first->second);
    due_.erase(first);
    when_.erase(id);
    running_ = id;
    mu_.Unlock();
    callback();
    callback = nullptr;  // What it holds is released outside the lock.
    mu_.Lock();
    running_ = 0;
    finished_.SignalAll();
  }
}

}  // namespace rill
