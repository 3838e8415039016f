// What the peers of an RpcServer can make it hold: bytes and calls per
// connection, bytes received from all connections together, and how many
// connections are open at once.
#ifndef RILL_TRANSPORT_CONNECTION_LIMITS_H_
#define RILL_TRANSPORT_CONNECTION_LIMITS_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "transport/rate_limited_log.h"

namespace rill {

struct ConnectionLimitOptions {
  // Calls from one connection the server holds at once: queued for a
  // handler, running, or answered but not yet written to the connection.
  // A client that sends without reading its replies stops here.
  int64_t max_calls_per_connection = 4096;
  // The bytes one connection makes the server hold: the message it is
  // sending, and the requests and replies of its calls. A message that
  // would pass it is read without being kept and refused. 0: 1 GiB, or
  // the largest tensor allowed (MaxTensorBytes) and 64 MiB more when
  // that is less.
  int64_t max_bytes_per_connection = 0;
  // The bytes held for all connections together. Messages over 64 KiB
  // may take 7/8 of it, so that small calls (heartbeats, steps, tokens)
  // still pass when large ones fill it. 0: a quarter of the machine's
  // memory.
  int64_t max_buffered_bytes = 0;
  // Connections (tcp and ipc) open at once. When all are taken, a new one
  // takes the place of the one idle longest (past idle_timeout); without
  // one, its calls are refused until a place frees.
  int max_connections = 1024;
  // A handshake or a message that stalls this long ends its connection,
  // and so does output its peer has not read for this long; a connection
  // that holds no call and has sent nothing this long gives its place to
  // a new one when all are taken.
  absl::Duration idle_timeout = absl::Seconds(10);
  // A handshake ends within this, however slowly its peer trickles bytes.
  absl::Duration handshake_timeout = absl::Seconds(10);
  // Tensors one message's header may declare, and dimensions one of its
  // shapes may have (TensorFlow's shapes have at most 254): each is a
  // parsed object the server would hold, for two bytes on the wire.
  int64_t max_tensors_per_message = int64_t{1} << 16;
  int max_tensor_dims = 254;
  // Bytes queued for one connection (replies, refusals, PONGs) past which
  // its requests are not read until it reads its replies.
  int64_t max_output_bytes = int64_t{4} << 20;
  // CURVE handshakes one source address may start a second (twice as many
  // at once); each costs public-key crypto. 0: no limit.
  int handshakes_per_source = 100;
};

// Messages of at most this many bytes may use the whole byte budget.
inline constexpr int64_t kSmallMessageBytes = int64_t{64} << 10;

class ConnectionLoad;

// The counts of one server. Shared with the tickets, which may outlive the
// server. Thread safety: all methods may be called concurrently.
class ServerLoad : public std::enable_shared_from_this<ServerLoad> {
 public:
  // Zero limits in `options` take their defaults. Limits are logged to
  // `log` (stderr when null) as they trip and recover; `port` names the
  // server there.
  static std::shared_ptr<ServerLoad> Create(const ConnectionLimitOptions& options, int port,
                                            LogSink* log);

  // A new connection's counts; `name` (its address) is what logs and
  // refusals say.
  std::shared_ptr<ConnectionLoad> Connect(std::string name);

  // The limits in force (defaults resolved).
  const ConnectionLimitOptions& options() const { return options_; }
  int port() const { return port_; }
  // Every line a peer can cause goes through it.
  RateLimitedLog& log() { return log_; }
  // Bytes held for all connections now.
  int64_t buffered();

 private:
  friend class ConnectionLoad;
  ServerLoad(const ConnectionLimitOptions& options, int port, LogSink* log);

  const ConnectionLimitOptions options_;
  const int port_;
  RateLimitedLog log_;
  absl::Mutex mu_;  // Guards every count, this server's and its connections'.
  int64_t buffered_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t refused_ ABSL_GUARDED_BY(mu_) = 0;  // Since the budget last tripped.
  bool over_ ABSL_GUARDED_BY(mu_) = false;
};

// One connection's calls and bytes. Thread safety: all methods may be
// called concurrently.
class ConnectionLoad : public std::enable_shared_from_this<ConnectionLoad> {
 public:
  // Bytes (and a call) held, given back when destroyed: with the last byte
  // of the call's reply written, the call dropped, or the connection gone.
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    // Counts `bytes` more (a reply's) whatever the limits: they are held
    // already.
    void Add(int64_t bytes);
    // Counts `bytes` more of a message being received, within the limits
    // (RESOURCE_EXHAUSTED saying which, and nothing counted, when not).
    absl::Status Grow(int64_t bytes);
    int64_t bytes() const { return bytes_; }
    explicit operator bool() const { return load_ != nullptr; }

   private:
    friend class ConnectionLoad;
    std::shared_ptr<ConnectionLoad> load_;
    int64_t bytes_ = 0;
    bool call_ = false;
    bool refusal_ = false;
  };

  // A message about to be received: `bytes` of it, counted within this
  // connection's limit and the server's budget. RESOURCE_EXHAUSTED says
  // which limit it would pass.
  absl::StatusOr<Ticket> Reserve(int64_t bytes);

  // A whole message, as a call: admitted (refusal OK; `message` becomes
  // the call's ticket), refused (a ticket for the RESOURCE_EXHAUSTED
  // reply), or dropped without a reply (no ticket: the connection does
  // not read even its refusals).
  struct Admission {
    Ticket ticket;
    absl::Status refusal;
  };
  Admission AdmitCall(Ticket message);
  // The place of a refusal reply to a message the reader refused; none
  // (the message is dropped unanswered) when kMaxQueuedRefusals of them
  // are not yet written.
  Ticket TakeRefusal();

  const ConnectionLimitOptions& limits() const { return server_->options_; }

  // Calls and bytes held now.
  int64_t calls();
  int64_t bytes();
  const std::string& name() const { return name_; }

  // Refusal replies queued before a connection's calls are dropped.
  static constexpr int kMaxQueuedRefusals = 16;

 private:
  friend class ServerLoad;
  ConnectionLoad(std::shared_ptr<ServerLoad> server, std::string name)
      : server_(std::move(server)), name_(std::move(name)) {}

  // Why `more` bytes of a message of `message` bytes so far cannot be
  // held now; OK when they can.
  absl::Status CheckBytes(int64_t message, int64_t more)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(server_->mu_);
  void Release(Ticket& ticket);

  const std::shared_ptr<ServerLoad> server_;
  const std::string name_;
  int64_t calls_ ABSL_GUARDED_BY(server_->mu_) = 0;
  int64_t bytes_ ABSL_GUARDED_BY(server_->mu_) = 0;
  int64_t refusals_ ABSL_GUARDED_BY(server_->mu_) = 0;  // Refusal replies not written.
  int64_t refused_ ABSL_GUARDED_BY(server_->mu_) = 0;   // Since its limit tripped.
  bool over_ ABSL_GUARDED_BY(server_->mu_) = false;
};

}  // namespace rill

#endif  // RILL_TRANSPORT_CONNECTION_LIMITS_H_
