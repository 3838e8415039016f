// Watches a client socket's ZMTP handshakes through a socket monitor, so
// that a server refusing this client fails its calls at once, saying why.
#ifndef RILL_TRANSPORT_HANDSHAKE_MONITOR_H_
#define RILL_TRANSPORT_HANDSHAKE_MONITOR_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zmq.hpp"

namespace rill::rpc_internal {

// Without it a refused client only sees its peer fall silent: ZeroMQ
// drops the connection during the handshake and never tells the sender
// of a message. ZeroMQ does not retry a connection the server refused
// (its keys, or one side without CURVE), so such a refusal lasts; a
// connection closed during a CURVE handshake with no reason (the client
// holds the wrong server key) is retried, and a later success clears it.
// Thread compatible: the client calls it under its io_mu_.
class HandshakeMonitor {
 public:
  // Starts watching `socket`, which must not have connected yet and must
  // outlive this. `address` and whether the client uses CURVE word the
  // errors.
  static absl::StatusOr<std::unique_ptr<HandshakeMonitor>> Start(zmq::context_t& context,
                                                                 zmq::socket_t& socket,
                                                                 const std::string& address,
                                                                 bool curve);

  // Readable (POLLIN) when events may wait; Read them on every wake, since
  // it only signals edges.
  int fd();
  // Takes in the events that arrived. True when the outcome changed.
  bool Read();

  ~HandshakeMonitor();
  HandshakeMonitor(const HandshakeMonitor&) = delete;
  HandshakeMonitor& operator=(const HandshakeMonitor&) = delete;

  // A handshake has succeeded and no later one failed.
  bool succeeded() const { return succeeded_; }
  // Why the server refused this client, while it does; OK otherwise.
  const absl::Status& refusal() const { return refusal_; }

 private:
  HandshakeMonitor(void* watched, zmq::socket_t monitor, std::string address, bool curve)
      : watched_(watched),
        monitor_(std::move(monitor)),
        address_(std::move(address)),
        curve_(curve) {}

  void* const watched_;  // The socket's handle.
  zmq::socket_t monitor_;
  const std::string address_;
  const bool curve_;
  bool succeeded_ = false;
  absl::Status refusal_;
};

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_HANDSHAKE_MONITOR_H_
