// RpcClient's implementation, shared by the files that send calls
// (rpc_client.cc) and run the I/O thread's turn (rpc_client_turn.cc).
#ifndef RILL_TRANSPORT_RPC_CLIENT_IMPL_H_
#define RILL_TRANSPORT_RPC_CLIENT_IMPL_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/handshake_monitor.h"
#include "transport/rpc.h"
#include "transport/rpc_client_calls.h"
#include "transport/rpc_client_loop.h"
#include "transport/rpc_internal.h"
#include "transport/rpc_sync_sockets.h"
#include "transport/shm_arena.h"
#include "zmq.hpp"

namespace rill {

// One connection's client: its sockets, the calls in flight and the I/O
// thread's turn for it (rpc_client.cc describes the whole).
class RpcClient::Impl final : public rpc_internal::ClientLoop::Member {
 public:
  using CallTable = rpc_internal::CallTable;
  using Completion = rpc_internal::Completion;
  using Finish = rpc_internal::Finish;
  using Outgoing = rpc_internal::Outgoing;
  using Pending = rpc_internal::Pending;

  Impl(const RpcClientOptions& options, rpc_internal::ClientLoop* loop)
      : options_(options),
        loop_(loop),
        tcp_(loop->context(), zmq::socket_type::dealer),
        shm_(options.shm_min_bytes, options.shm_capacity),
        sync_(loop->context(), options, &shm_) {}

  ~Impl() override;

  absl::Status Connect();

  void Call(const std::string& method, RpcMessage request, absl::Time deadline, RpcDone done);

  absl::StatusOr<RpcMessage> CallSync(const std::string& method, RpcMessage request,
                                      absl::Time deadline);

  std::string transport() const {
    return using_ipc_.load(std::memory_order_acquire) ? "ipc" : "tcp";  // Set by the I/O thread.
  }
  const std::string& address() const { return options_.address; }
  bool shared_memory() const { return shm_.arena() != nullptr; }

 private:
  // Sends `call`, or holds it while kMaxLargeInFlight large calls are out
  // (in order: a held call is never overtaken by a later large one).
  void SendOrHold(Outgoing call);

  // Sends held calls while there is room, and fails those past their
  // deadline.
  void ReleaseHeld(absl::Time now);

  void Enqueue(const std::string& method, RpcMessage request, absl::Time deadline, Finish finish);

  // Sends `call` on this thread when the I/O thread is not using the
  // sockets (it is not in this client's turn) and no queued call would be
  // overtaken:
  // this saves the I/O thread's wake. Wakes it only when it must act
  // sooner than it planned (an earlier deadline) or when this send took in
  // a reply it would not otherwise notice. False: queue it instead.
  bool TrySendHere(Outgoing& call);

  void Complete(Finish finish, Completion completion) ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_) {
    completed_.emplace_back(std::move(finish), std::move(completion));
  }

  // Runs the finishes recorded under io_mu_, after it is released: a
  // callback may call again.
  void RunCompleted() ABSL_LOCKS_EXCLUDED(io_mu_);

  absl::Status Cancelled(const std::string& method) const;

  zmq::socket_t& active_socket() { return ipc_.has_value() ? *ipc_ : tcp_; }

  // One turn on the process's I/O thread, which holds io_mu_ for it: what
  // a caller queued is sent, what arrived is matched to its call, and
  // what is overdue fails. The turn after the stop cancels everything.
  absl::Time Turn() override;

  void UnwatchAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_);

  // When the I/O thread must next act: the next deadline, ping or
  // heartbeat timeout, and at least every heartbeat_interval, so that a
  // call sent by another thread (TrySendHere) never needs to wake it for
  // its heartbeats.
  absl::Time NextWake(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_);

  // The header's frame, then the tensors' (taken from `call`).
  static std::vector<zmq::message_t> TakeFrames(Outgoing& call);

  // For a call that will not go by ipc: its blocks go back to the arena (no
  // peer saw them) and its tensors are encoded as frames.
  static void Unshare(Outgoing& call);

  // Asks the ipc peer to map this client's new arena, with a one-byte block: tensors go through
  // it only once the peer could, so that one that cannot (in another pid namespace, without
  // /proc access to this process, refusing shared memory) still gets them all, as frames.
  // Tried again each turn until the ipc connection takes it.
  void ProbeSharedMemory() ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_);

  // Sends a transport method ("_ping", "_hello") that no caller waits for.
  uint64_t SendControl(const std::string& method);

  void Send(Outgoing call);

  // True when it stopped at kReceiveBatch messages (more may wait).
  bool ReceiveAll(zmq::socket_t& socket);

  // A refusal fails every call, held or in flight: the server drops them
  // unread. A success settles the path unless a _hello is still out.
  void OnHandshake();

  absl::Status Refused(const std::string& method) const;

  void OnHello(const RpcHeader& header);

  absl::Status DeadlineExceeded(const std::string& method, absl::Time start,
                                absl::Time deadline) const;

  void ExpireDeadlines(absl::Time now);

  // Back to tcp, which reaches whoever serves the address now, and asks
  // that server for its ipc endpoint again.
  void LeaveIpc();

  void CheckHeartbeat(absl::Time now);

  // Constant after Connect.
  const RpcClientOptions options_;
  rpc_internal::ClientLoop* const loop_;
  std::string local_host_id_;
  std::shared_ptr<rpc_internal::CallbackQueue> callbacks_;

  absl::Mutex mu_;  // Taken after io_mu_ when both are.
  std::deque<Outgoing> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool io_running_ ABSL_GUARDED_BY(mu_) = false;  // Between the hello and the stop.

  std::atomic<bool> using_ipc_{false};

  // The sockets and the calls in flight: the I/O thread's in this client's
  // turn, and a caller's while it holds io_mu_.
  absl::Mutex io_mu_;
  zmq::socket_t tcp_ ABSL_GUARDED_BY(io_mu_);
  std::optional<zmq::socket_t> ipc_ ABSL_GUARDED_BY(io_mu_);
  // tcp_'s; declared after it, so that it goes first.
  std::unique_ptr<rpc_internal::HandshakeMonitor> handshakes_ ABSL_GUARDED_BY(io_mu_);
  uint64_t last_id_ ABSL_GUARDED_BY(io_mu_) = 0;
  uint64_t hello_id_ ABSL_GUARDED_BY(io_mu_) = 0;  // 0: no hello outstanding.
  bool shm_probe_wanted_ ABSL_GUARDED_BY(io_mu_) = false;
  uint64_t shm_probe_id_ ABSL_GUARDED_BY(io_mu_) = 0;  // 0: no probe outstanding.
  CallTable calls_ ABSL_GUARDED_BY(io_mu_);
  absl::Time last_heard_ ABSL_GUARDED_BY(io_mu_);
  absl::Time last_ping_ ABSL_GUARDED_BY(io_mu_);
  absl::Time planned_wake_ ABSL_GUARDED_BY(io_mu_);   // When the next turn comes unasked.
  std::vector<int> watched_ ABSL_GUARDED_BY(io_mu_);  // Descriptors the loop watches.
  // Finishes to run once io_mu_ is released.
  std::vector<std::pair<Finish, Completion>> completed_ ABSL_GUARDED_BY(io_mu_);

  // Where large tensors go while the path is ipc; before sync_, which uses it.
  ShmArenaSlot shm_;
  // CallSync's sockets.
  rpc_internal::SyncSockets sync_;
  // False while a _hello is out (calls then go through the I/O thread).
  std::atomic<bool> path_settled_{false};
};

}  // namespace rill

#endif  // RILL_TRANSPORT_RPC_CLIENT_IMPL_H_
