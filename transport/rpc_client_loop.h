// The threads all of a process's RpcClients share: one ZeroMQ context, one
// I/O thread that watches every client's sockets and timers, and a few
// threads for their callbacks, so that a process's threads do not grow
// with the peers it talks to.
#ifndef RILL_TRANSPORT_RPC_CLIENT_LOOP_H_
#define RILL_TRANSPORT_RPC_CLIENT_LOOP_H_

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/rpc_internal.h"
#include "zmq.hpp"

namespace rill::rpc_internal {

// Tasks that run one at a time, in the order given, on the loop's
// callback threads. Thread safety: all methods may be called concurrently.
class CallbackQueue : public std::enable_shared_from_this<CallbackQueue> {
 public:
  explicit CallbackQueue(WorkQueue* pool) : pool_(pool) {}
  void Schedule(std::function<void()> task);
  // Waits until every task scheduled so far has run. REQUIRES: not called
  // from one of this queue's tasks.
  void WaitUntilIdle();

 private:
  void Drain();
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return tasks_.empty() && !running_; }

  WorkQueue* const pool_;
  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool running_ ABSL_GUARDED_BY(mu_) = false;
};

// Thread safety: all methods may be called concurrently, except as noted.
class ClientLoop {
 public:
  // What the loop drives: one client's sockets and timers.
  class Member {
   public:
    virtual ~Member() = default;
    // Runs on the I/O thread when a watched descriptor fires, when woken,
    // or at the time the last turn returned: sends what is queued, reads
    // what arrived, fails what is overdue. Returns when it next needs a
    // turn if nothing happens (InfiniteFuture: never).
    virtual absl::Time Turn() = 0;
  };

  // The process's loop, made on first use and kept until the process
  // exits; its making raises the soft limit on open files to the hard one
  // (a process may talk to many peers). RESOURCE_EXHAUSTED when its
  // threads cannot start.
  static absl::StatusOr<ClientLoop*> Get();

  zmq::context_t& context() { return context_; }

  // Turns `member` when `fd` is readable. REQUIRES: `member` is not yet
  // started or this runs on the I/O thread (in its turn).
  absl::Status Watch(Member* member, int fd);
  void Unwatch(int fd);
  // Starts turning `member`, with a first turn soon.
  void Start(Member* member);
  // Runs a turn of `member` soon.
  void Wake(Member* member);
  // Runs a last turn of `member` (which sees that it is stopping) and
  // forgets it; returns once no turn of it runs or will. REQUIRES: not on
  // the I/O thread.
  void Stop(Member* member);

  // A queue for one client's callbacks on the shared callback threads.
  std::shared_ptr<CallbackQueue> NewCallbackQueue() {
    return std::make_shared<CallbackQueue>(&*callbacks_);
  }

  // Callback threads for all clients: a callback that blocks holds one.
  static constexpr int kCallbackThreads = 4;

 private:
  ClientLoop() = default;
  absl::Status Init();
  void Loop();

  zmq::context_t context_;
  int epoll_fd_ = -1;
  std::unique_ptr<Wakeup> wakeup_;
  std::optional<WorkQueue> callbacks_;

  absl::Mutex mu_;
  absl::flat_hash_set<Member*> members_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Member*> woken_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<Member*> stopping_ ABSL_GUARDED_BY(mu_);
  // The I/O thread's: when each member next needs a turn.
  std::set<std::pair<absl::Time, Member*>> timers_;
  absl::flat_hash_map<Member*, absl::Time> timer_of_;
  std::thread thread_;
};

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_RPC_CLIENT_LOOP_H_
