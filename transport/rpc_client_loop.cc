#include "transport/rpc_client_loop.h"

#include <sys/epoll.h>
#include <sys/resource.h>
#include <zmq.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <system_error>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/listen_socket.h"

namespace rill::rpc_internal {

void CallbackQueue::Schedule(std::function<void()> task) {
  absl::MutexLock lock(&mu_);
  tasks_.push_back(std::move(task));
  if (running_) return;
  running_ = true;
  pool_->Schedule([self = shared_from_this()] { self->Drain(); });
}

void CallbackQueue::Drain() {
  for (;;) {
    std::function<void()> task;
    {
      absl::MutexLock lock(&mu_);
      if (tasks_.empty()) {
        running_ = false;
        return;
      }
      task = std::move(tasks_.front());
      tasks_.pop_front();
    }
    task();
  }
}

void CallbackQueue::WaitUntilIdle() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(this, &CallbackQueue::Idle));
}

absl::StatusOr<ClientLoop*> ClientLoop::Get() {
  static const absl::StatusOr<ClientLoop*> loop = []() -> absl::StatusOr<ClientLoop*> {
    auto made = std::unique_ptr<ClientLoop>(new ClientLoop());
    RETURN_IF_ERROR(made->Init());
    return made.release();  // Lives as long as the process.
  }();
  return loop;
}

absl::Status ClientLoop::Init() {
  // ZeroMQ's own cap (1023 sockets) would come first otherwise.
  const int sockets = std::max(RaiseFileLimit(), 1024);
  zmq_ctx_set(context_.handle(), ZMQ_MAX_SOCKETS, sockets);
  epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
  if (epoll_fd_ < 0) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot create an epoll instance: %s", std::strerror(errno)));
  }
  ASSIGN_OR_RETURN(wakeup_, Wakeup::Create());
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = nullptr;
  epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, wakeup_->fd(), &event);
  try {
    // ZeroMQ starts its I/O threads with the first socket: made now, so
    // that no later socket needs a thread.
    zmq::socket_t first(context_, zmq::socket_type::pair);
    callbacks_.emplace(kCallbackThreads);
    thread_ = std::thread([this] { Loop(); });
  } catch (const std::exception& e) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot start the RPC clients' threads: %s", e.what()));
  }
  return absl::OkStatus();
}

absl::Status ClientLoop::Watch(Member* member, int fd) {
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.ptr = member;
  if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event) != 0) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot watch a socket: %s", std::strerror(errno)));
  }
  return absl::OkStatus();
}

void ClientLoop::Unwatch(int fd) { epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, fd, nullptr); }

void ClientLoop::Start(Member* member) {
  {
    absl::MutexLock lock(&mu_);
    members_.insert(member);
    woken_.insert(member);
  }
  wakeup_->Signal();
}

void ClientLoop::Wake(Member* member) {
  {
    absl::MutexLock lock(&mu_);
    if (!woken_.insert(member).second) return;
  }
  wakeup_->Signal();
}

void ClientLoop::Stop(Member* member) {
  absl::MutexLock lock(&mu_);
  if (!members_.contains(member)) return;
  stopping_.insert(member);
  woken_.insert(member);
  wakeup_->Signal();
  std::pair<ClientLoop*, Member*> arg(this, member);
  mu_.Await(absl::Condition(
      +[](std::pair<ClientLoop*, Member*>* stopped) ABSL_NO_THREAD_SAFETY_ANALYSIS {
        return !stopped->first->members_.contains(stopped->second);
      },
      &arg));
}

void ClientLoop::Loop() {
  constexpr int kMaxEvents = 256;
  epoll_event events[kMaxEvents];
  std::vector<Member*> due;
  for (;;) {
    int timeout = -1;
    if (!timers_.empty()) {
      const absl::Duration wait = timers_.begin()->first - absl::Now();
      timeout = static_cast<int>(std::ceil(std::clamp(absl::ToDoubleMilliseconds(wait), 0.0, 1e9)));
    }
    const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout);
    due.clear();
    for (int i = 0; i < n; ++i) {
      if (events[i].data.ptr == nullptr) {
        wakeup_->Drain();
      } else {
        due.push_back(static_cast<Member*>(events[i].data.ptr));
      }
    }
    {
      absl::MutexLock lock(&mu_);
      due.insert(due.end(), woken_.begin(), woken_.end());
      woken_.clear();
    }
    const absl::Time now = absl::Now();
    while (!timers_.empty() && timers_.begin()->first <= now) {
      due.push_back(timers_.begin()->second);
      timer_of_.erase(timers_.begin()->second);
      timers_.erase(timers_.begin());
    }
    std::sort(due.begin(), due.end());
    due.erase(std::unique(due.begin(), due.end()), due.end());
    for (Member* member : due) {
      bool stopping;
      {
        absl::MutexLock lock(&mu_);
        if (!members_.contains(member)) continue;
        stopping = stopping_.contains(member);
      }
      const absl::Time next = member->Turn();
      if (auto it = timer_of_.find(member); it != timer_of_.end()) {
        timers_.erase({it->second, member});
        timer_of_.erase(it);
      }
      if (stopping) {
        absl::MutexLock lock(&mu_);
        members_.erase(member);
        stopping_.erase(member);
        woken_.erase(member);
        continue;
      }
      if (next != absl::InfiniteFuture()) {
        timers_.insert({next, member});
        timer_of_[member] = next;
      }
    }
  }
}

}  // namespace rill::rpc_internal
