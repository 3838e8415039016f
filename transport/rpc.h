// RPC over ZeroMQ: an RpcServer listens on one tcp port (plus an ipc://
// endpoint for peers on the same machine) and speaks ZeroMQ's protocol to
// its clients; an RpcClient talks to one peer through a DEALER, with many
// calls in flight, deadlines and heartbeats.
#ifndef RILL_TRANSPORT_RPC_H_
#define RILL_TRANSPORT_RPC_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "graph/tensor.h"
#include "transport/connection_limits.h"
#include "transport/curve.h"

namespace rill {

// A request or a reply: the method's message (a serialized proto) and
// tensors, which travel as raw frames. Sending never copies a tensor's
// bytes (the frame keeps the buffer alive until ZeroMQ is done with it);
// a received tensor uses the frame's memory when it is aligned for the
// dtype, and is copied otherwise.
struct RpcMessage {
  std::string body;
  std::vector<Tensor> tensors;
  // On a request handed to a server's handler: the connection it came on
  // (never 0), which RpcServer's `closed` callback names when it goes.
  uint64_t connection = 0;
};

// Called exactly once, from any thread.
using RpcDone = std::function<void(absl::Status status, RpcMessage reply)>;

struct RpcServerOptions {
  // "tcp://HOST:PORT" to bind; PORT 0 picks a free port. HOST is an
  // interface address ("127.0.0.1") or "0.0.0.0" when asked for.
  std::string bind_address;
  // Also bind an ipc:// endpoint (a socket file in the temporary
  // directory) that clients on this machine use instead of tcp.
  bool bind_ipc = true;
  // Map the shared memory of clients on this machine (reached by ipc) whose
  // tensors wait there; off, they send frames.
  bool accept_shared_memory = true;
  // Threads that run handlers (the socket thread never blocks on one).
  int handler_threads = 2;
  // With keys, every endpoint speaks CURVE: only clients whose public key
  // is authorized get in, and everything is encrypted.
  std::shared_ptr<const CurveKeys> curve;
  // Without keys a server binds only loopback addresses unless the network
  // is trusted: anyone who reaches the port could do what any client can.
  bool insecure = false;
  // What connections may make the server hold, and how many may be open.
  ConnectionLimitOptions limits;
  // Where limits that trip are logged; null: stderr.
  LogSink* log = nullptr;
};

// Runs `request`; calls `reply` once (possibly later, from any thread). A
// non-OK status travels to the caller unchanged (code and message).
using RpcHandler = std::function<void(RpcMessage request, RpcDone reply)>;

// One method a server answers: the one place that names it, says what
// runs it and where.
struct RpcMethod {
  std::string name;
  RpcHandler handler;
  // The handler never blocks (it only starts work or answers at once): it
  // runs on the socket thread itself, which saves the two thread wakes of a
  // hand-off to a handler thread and back.
  bool runs_inline = false;
};

// Called once for each connection the server closes while serving (the
// peer went away, or sent what it may not), after its last request was
// handed to a handler; on a handler thread. A reply to the connection's
// calls would be dropped: a service ends what they still run.
using RpcConnectionClosed = std::function<void(uint64_t connection)>;

// Thread safety: all methods may be called concurrently.
class RpcServer {
 public:
  using Handler = RpcHandler;

  // Binds and starts serving `methods` (the transport's own methods are
  // always served). With no methods, other calls are refused with
  // UNAVAILABLE until Serve. Errors: a malformed address, a port in use
  // (UNAVAILABLE naming the address), a method named twice.
  static absl::StatusOr<std::unique_ptr<RpcServer>> Start(const RpcServerOptions& options,
                                                          std::vector<RpcMethod> methods = {},
                                                          RpcConnectionClosed closed = nullptr);
  // Starts serving `methods`, once: for a server bound before the services
  // behind its methods existed. Errors: serving already, a method named
  // twice.
  absl::Status Serve(std::vector<RpcMethod> methods, RpcConnectionClosed closed = nullptr);
  // Stops serving and joins its threads; replies not sent yet are dropped.
  ~RpcServer();

  // The tcp port bound (the chosen one when asked for port 0).
  int port() const;
  // "ipc:///tmp/..." or empty when bind_ipc is off.
  std::string ipc_endpoint() const;

  class Impl;

 private:
  explicit RpcServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

struct RpcClientOptions {
  // The peer as "HOST:PORT" (what the cluster spec says).
  std::string address;
  // Use the peer's ipc:// endpoint when it runs on this machine.
  bool prefer_ipc = true;
  // With calls outstanding and nothing heard from the peer for
  // heartbeat_interval, the client pings it; after heartbeat_timeout of
  // silence every outstanding call fails with UNAVAILABLE.
  absl::Duration heartbeat_interval = absl::Milliseconds(500);
  absl::Duration heartbeat_timeout = absl::Seconds(3);
  int64_t max_message_bytes = int64_t{4} << 30;
  // With keys, connect with CURVE (to a server that has them).
  std::shared_ptr<const CurveKeys> curve;
  // While the peer is reached by ipc, numeric tensors of at least this many
  // bytes travel through shared memory: copied once into an arena of this
  // client's (a memfd of shm_capacity bytes, touched as it is used), which
  // the server maps and its tensors use in place. 0: never.
  size_t shm_min_bytes = size_t{64} << 10;
  size_t shm_capacity = size_t{1} << 30;
  // Run Call's `done` on the I/O thread itself, saving a thread wake per
  // reply. Only for callbacks that never block: they may Call again, but
  // must not wait for this client (CallSync, or a reply).
  bool inline_callbacks = false;
};

// Thread safety: all methods may be called concurrently.
class RpcClient {
 public:
  // Connects (ZeroMQ connects lazily: a peer not up yet is not an error
  // here). Errors: a malformed address.
  static absl::StatusOr<std::unique_ptr<RpcClient>> Connect(const RpcClientOptions& options);
  // Outstanding calls fail with CANCELLED.
  ~RpcClient();

  // Sends `request` to `method`; `done` gets the reply, the remote
  // handler's error, DEADLINE_EXCEEDED at `deadline`, or UNAVAILABLE when
  // the peer stops answering. Messages name the peer and the method.
  // `done` runs on the client's one callback thread, in completion order
  // (or on the I/O thread with inline_callbacks); it may call this client
  // again.
  void Call(const std::string& method, RpcMessage request, absl::Time deadline, RpcDone done);
  // As Call, waiting on this thread: it sends and receives on a socket of
  // its own, without the I/O thread's two hand-offs.
  absl::StatusOr<RpcMessage> CallSync(const std::string& method, RpcMessage request,
                                      absl::Time deadline);

  // "tcp" or "ipc": the path calls take (settled by the first reply).
  std::string transport() const;
  // Large tensors go through shared memory: the path is ipc and the peer
  // has mapped this client's arena (shortly after the path settles).
  bool shared_memory() const;
  const std::string& address() const;

  class Impl;

 private:
  explicit RpcClient(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace rill

#endif  // RILL_TRANSPORT_RPC_H_
