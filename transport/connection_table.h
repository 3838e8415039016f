// The connections an RpcServer has open, and which of them have a place
// under its cap: a new one takes a free place, or that of the connection
// longest in its handshake or idle longest; without one it waits, its
// calls refused. Also ends handshakes that stall or run past their
// deadline, messages that stall and output that is not read, and logs
// what it closes (a few lines a second).
#ifndef RILL_TRANSPORT_CONNECTION_TABLE_H_
#define RILL_TRANSPORT_CONNECTION_TABLE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "transport/connection_limits.h"
#include "transport/server_connection.h"

namespace rill {

// Thread safety: none; the server's socket thread owns it.
class ConnectionTable {
 public:
  // `forget(connection)` runs before a connection's socket closes (the
  // server stops watching it, and ends what its calls still run). The
  // limits and the log are `server`'s.
  ConnectionTable(std::shared_ptr<ServerLoad> server,
                  std::function<void(const ServerConnection&)> forget)
      : server_(std::move(server)),
        limits_(server_->options()),
        port_(server_->port()),
        log_(&server_->log()),
        forget_(std::move(forget)) {}

  // A new connection: it takes a place, or waits for one (over_cap).
  void Add(std::shared_ptr<ServerConnection> connection);
  // Null when closed.
  std::shared_ptr<ServerConnection> Find(uint64_t id) const;
  // Closes a connection for what it sent or failed to send; logged
  // unless `why` is CANCELLED (the peer went away).
  void Drop(uint64_t id, const absl::Status& why);
  // A connection finished its handshake: one waiting over the cap takes
  // the place of a connection still in its handshake, however new (a
  // flood of fresh greetings cannot keep it out).
  void HandshakeDone(uint64_t id);
  // Closes the connection longest in its handshake, to free a descriptor
  // that accept failed for (`error`); false when there is none.
  bool CloseOneInHandshake(int error);
  // Closes every connection (the server stops).
  void CloseAll();
  // Drops handshakes past handshake_timeout, and handshakes, messages and
  // unread output stalled past idle_timeout at `now`; gives waiting
  // connections the places of idle ones.
  void Check(absl::Time now);

  size_t size() const { return connections_.size(); }
  int served() const { return served_; }

  // Connections over the cap kept open to be told why; beyond this many
  // the oldest still in its handshake past kHandshakeGrace is closed, or
  // else the newest.
  static constexpr int kMaxWaiting = 64;
  // A connection in its handshake this long may lose its place to a new
  // one (a real client's handshake takes a round trip or two).
  static constexpr absl::Duration kHandshakeGrace = absl::Milliseconds(200);

 private:
  // The connection to close for a new one, or null (see the file comment;
  // closing an idle connection of a real client costs it nothing: its
  // DEALER connects again). `grace`: how long a handshake is spared.
  ServerConnection* PlaceToFree(absl::Time now, absl::Duration grace = kHandshakeGrace);
  // The open connection longest in its handshake, or null.
  ServerConnection* OldestInHandshake();
  void GiveUpPlace(ServerConnection& connection);
  void Close(uint64_t id);
  // Waiting connections take the places that are free.
  void PromoteWaiting();

  const std::shared_ptr<ServerLoad> server_;
  const ConnectionLimitOptions limits_;
  const int port_;
  RateLimitedLog* const log_;
  const std::function<void(const ServerConnection&)> forget_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<ServerConnection>> connections_;
  int served_ = 0;                // Connections with a place.
  std::deque<uint64_t> waiting_;  // Over the cap, oldest first.
  int64_t refused_ = 0;           // Connections over the cap since it last had room.
  int64_t dropped_ = 0;
  absl::Time last_trim_;  // When freed memory was last given back to the system.
};

}  // namespace rill

#endif  // RILL_TRANSPORT_CONNECTION_TABLE_H_
