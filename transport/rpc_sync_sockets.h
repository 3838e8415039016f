// The DEALER sockets RpcClient::CallSync sends and waits on from the
// caller's own thread, pooled per client, with the same deadline and
// heartbeat rules as calls through the I/O thread.
#ifndef RILL_TRANSPORT_RPC_SYNC_SOCKETS_H_
#define RILL_TRANSPORT_RPC_SYNC_SOCKETS_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/rpc.h"
#include "transport/shm_arena.h"
#include "zmq.hpp"

namespace rill::rpc_internal {

// Sending and waiting on the caller's thread saves the two thread wakes of
// a hand-off to the I/O thread and back (30-45 us per call on these
// machines). Each socket serves one call at a time; a socket made for an
// endpoint the client no longer uses is closed when next taken.
// Thread safety: all methods may be called concurrently.
class SyncSockets {
 public:
  // `context` and `shm`, the arena large tensors go through on an ipc
  // socket, must outlive this (and so be declared before it).
  SyncSockets(zmq::context_t& context, const RpcClientOptions& options, const ShmArenaSlot* shm);
  SyncSockets(const SyncSockets&) = delete;
  SyncSockets& operator=(const SyncSockets&) = delete;

  // Where sockets connect from now on: the peer's ipc endpoint (once its
  // _hello said it is on this machine) or its tcp address (once it fell
  // silent, since it may come back elsewhere).
  void UseIpc(const std::string& endpoint);
  void UseTcp();

  // Sends `request` and waits for the reply, as RpcClient::CallSync
  // documents. At most kMaxLargeInFlight large calls run at once; more wait
  // here. nullopt when no socket could connect; `request` is then
  // untouched, for the caller to send another way.
  std::optional<absl::StatusOr<RpcMessage>> TryCall(const std::string& method, RpcMessage& request,
                                                    absl::Time deadline);

 private:
  struct Socket {
    zmq::socket_t socket;
    std::string endpoint;
  };
  class LargeSlot;

  absl::StatusOr<std::unique_ptr<Socket>> Take();
  void Return(std::unique_ptr<Socket> socket);
  absl::StatusOr<RpcMessage> CallOn(std::unique_ptr<Socket> socket, const std::string& method,
                                    RpcMessage request, absl::Time deadline);

  // Constant after construction.
  zmq::context_t& context_;
  const RpcClientOptions options_;
  const ShmArenaSlot* const shm_;

  absl::Mutex mu_;
  std::string endpoint_ ABSL_GUARDED_BY(mu_);
  std::vector<std::unique_ptr<Socket>> idle_ ABSL_GUARDED_BY(mu_);
  int large_calls_ ABSL_GUARDED_BY(mu_) = 0;
  std::atomic<uint64_t> next_id_{1};
};

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_RPC_SYNC_SOCKETS_H_
