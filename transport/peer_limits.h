// What one client can make an RpcServer hold: calls in flight and their
// bytes per connection, and how many connections are open at once.
#ifndef RILL_TRANSPORT_PEER_LIMITS_H_
#define RILL_TRANSPORT_PEER_LIMITS_H_

#include <cstdint>
#include <cstdio>
#include <deque>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "zmq.hpp"

namespace rill {

struct PeerLimitOptions {
  // Calls from one connection the server holds at once: queued for a
  // handler, running, or answered but not yet written to the connection.
  // A client that sends without reading its replies stops here.
  int64_t max_calls_per_peer = 4096;
  // The bytes of those calls' requests and replies. One call is always
  // admitted when a connection holds nothing, whatever its size (the
  // message size limit bounds that).
  int64_t max_bytes_per_peer = int64_t{8} << 30;
  // Connections (tcp and ipc) open at once. Calls on a connection beyond
  // the cap are answered RESOURCE_EXHAUSTED until another one closes.
  int max_connections = 1024;
};

// Calls admitted per connection (its ROUTER identity). Shared with the
// tickets, which ZeroMQ's I/O threads may release after the server is
// gone. Thread safety: all methods may be called concurrently.
class PeerLimits : public std::enable_shared_from_this<PeerLimits> {
 public:
  // A call's share of its connection's limits, given back when destroyed
  // (with the last frame of its reply, once ZeroMQ has written or dropped
  // it; or with the call, when it is never answered).
  class Ticket {
   public:
    Ticket() = default;
    Ticket(Ticket&& other) noexcept { *this = std::move(other); }
    Ticket& operator=(Ticket&& other) noexcept;
    ~Ticket();
    // Counts the reply's bytes too.
    void AddBytes(int64_t bytes);
    explicit operator bool() const { return limits_ != nullptr; }

   private:
    friend class PeerLimits;
    std::shared_ptr<PeerLimits> limits_;
    std::string peer_;
    int64_t bytes_ = 0;
    bool refusal_ = false;
  };

  // A call admitted (refusal OK, ticket set), refused (ticket set, for the
  // RESOURCE_EXHAUSTED reply), or dropped without a reply (no ticket: the
  // connection does not read even its refusals).
  struct Admission {
    Ticket ticket;
    absl::Status refusal;
  };

  // Limits are logged to `log` (stderr when null) as they trip and recover;
  // `port` names the server there.
  static std::shared_ptr<PeerLimits> Create(const PeerLimitOptions& options, int port,
                                            std::FILE* log);

  // A call of `bytes` from connection `peer` (its identity); `peer_name`
  // (its address, when known) is what the log and the refusal say.
  Admission Admit(const std::string& peer, const std::string& peer_name, int64_t bytes);

  // Calls and bytes that connection `peer` holds now (for tests).
  std::pair<int64_t, int64_t> Held(const std::string& peer);

  // Refusal replies queued per connection before its calls are dropped.
  static constexpr int kMaxQueuedRefusals = 16;

 private:
  PeerLimits(const PeerLimitOptions& options, int port, std::FILE* log)
      : options_(options), port_(port), log_(log != nullptr ? log : stderr) {}

  struct PeerLoad {
    int64_t calls = 0;
    int64_t bytes = 0;
    int64_t refusals = 0;  // Refusal replies not written yet.
    int64_t refused = 0;   // Since the limit tripped.
    bool over = false;     // The limit tripped and has not recovered.
    std::string name;
  };
  void Release(const std::string& peer, int64_t bytes, bool refusal);
  void Add(const std::string& peer, int64_t bytes);

  const PeerLimitOptions options_;
  const int port_;
  std::FILE* const log_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, PeerLoad> loads_ ABSL_GUARDED_BY(mu_);
};

// The connection cap, kept from the socket's monitor events (ACCEPTED and
// DISCONNECTED carry the connection's file descriptor; a message carries
// it as ZMQ_SRCFD). Only the socket thread calls it.
class ConnectionCap {
 public:
  ConnectionCap(int max_connections, int port, std::FILE* log)
      : max_(max_connections), port_(port), log_(log != nullptr ? log : stderr) {}

  void Accepted(int fd);
  void Disconnected(int fd);
  // Why calls on connection `fd` are refused; OK when they are not.
  absl::Status Check(int fd) const;

  int open() const { return static_cast<int>(open_.size()); }

  // Connections over the cap kept open to be told why; beyond this many
  // the oldest is shut down.
  static constexpr int kMaxWaiting = 64;

 private:
  const int max_;
  const int port_;
  std::FILE* const log_;
  absl::flat_hash_set<int> open_;
  std::deque<int> waiting_;  // Over the cap, oldest first.
  int64_t refused_ = 0;      // Connections refused since the cap last had room.
};

// Makes `frames` (a multipart message) carry `ticket` until ZeroMQ
// releases its last frame.
void AttachTicket(std::vector<zmq::message_t>& frames, PeerLimits::Ticket ticket);

// Total size of `frames`.
int64_t FrameBytes(const std::vector<zmq::message_t>& frames);

}  // namespace rill

#endif  // RILL_TRANSPORT_PEER_LIMITS_H_
