#include "transport/handshake_monitor.h"

#include <zmq.h>

#include <cstring>
#include <vector>

#include "absl/strings/str_format.h"
#include "transport/rpc_internal.h"

namespace rill::rpc_internal {
namespace {

// The refusal a handshake event stands for; OK for success and for events
// that say nothing of one.
absl::Status Describe(uint16_t event, uint32_t value, const std::string& address, bool curve) {
  switch (event) {
    case ZMQ_EVENT_HANDSHAKE_FAILED_AUTH:
      // The value is the status code of the server's authenticator (ZAP).
      if (value == 400) {
        return absl::UnauthenticatedError(absl::StrFormat(
            "peer %s refused this client: its CURVE public key is not in the server's "
            "authorized_keys",
            address));
      }
      if (value == 300) {
        return absl::UnavailableError(absl::StrFormat(
            "peer %s could not authenticate this client for now (ZAP status 300)", address));
      }
      return absl::UnauthenticatedError(
          absl::StrFormat("peer %s refused this client (ZAP status %d)", address, value));
    case ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL:
      if (value == ZMQ_PROTOCOL_ERROR_ZMTP_MECHANISM_MISMATCH) {
        return absl::UnauthenticatedError(
            curve ? absl::StrFormat("peer %s does not use CURVE and this client does: start the "
                                    "server with --curve_keys, or this client without",
                                    address)
                  : absl::StrFormat("peer %s accepts only CURVE clients and this client has no "
                                    "keys: give it the cluster's key directory (--curve_keys)",
                                    address));
      }
      if (value == ZMQ_PROTOCOL_ERROR_ZMTP_CRYPTOGRAPHIC ||
          value == ZMQ_PROTOCOL_ERROR_ZMTP_KEY_EXCHANGE) {
        return absl::UnauthenticatedError(absl::StrFormat(
            "the CURVE handshake with peer %s failed (ZeroMQ protocol error 0x%x): the server "
            "does not hold the secret key for this client's server_public.key",
            address, value));
      }
      return absl::UnavailableError(absl::StrFormat(
          "the handshake with peer %s failed (ZeroMQ protocol error 0x%x): is it a rill server?",
          address, value));
    case ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL:
      // Without CURVE this is a connection lost mid-handshake, which the
      // heartbeat covers; with it, a server closes without a word a client
      // whose greeting it cannot decrypt, or one that speaks CURVE to it
      // when it does not.
      if (!curve) return absl::OkStatus();
      return absl::UnauthenticatedError(absl::StrFormat(
          "peer %s closed the connection during the CURVE handshake: either it does not use "
          "CURVE (start it with --curve_keys), or it does not hold the secret key for this "
          "client's server_public.key",
          address));
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<HandshakeMonitor>> HandshakeMonitor::Start(
    zmq::context_t& context, zmq::socket_t& socket, const std::string& address, bool curve) {
  const std::string endpoint =
      absl::StrFormat("inproc://rpc-client-handshakes-%p", static_cast<void*>(socket.handle()));
  if (zmq_socket_monitor(socket.handle(), endpoint.c_str(),
                         ZMQ_EVENT_HANDSHAKE_SUCCEEDED | ZMQ_EVENT_HANDSHAKE_FAILED_AUTH |
                             ZMQ_EVENT_HANDSHAKE_FAILED_PROTOCOL |
                             ZMQ_EVENT_HANDSHAKE_FAILED_NO_DETAIL) != 0) {
    // EMFILE among others: the monitor is a socket of its own.
    return absl::ResourceExhaustedError(absl::StrFormat("cannot watch the connection to %s: %s",
                                                        address, zmq_strerror(zmq_errno())));
  }
  try {
    zmq::socket_t monitor(context, zmq::socket_type::pair);
    monitor.connect(endpoint);
    return std::unique_ptr<HandshakeMonitor>(
        new HandshakeMonitor(socket.handle(), std::move(monitor), address, curve));
  } catch (const zmq::error_t& e) {
    zmq_socket_monitor(socket.handle(), nullptr, 0);
    return absl::ResourceExhaustedError(
        absl::StrFormat("cannot watch the connection to %s: %s", address, e.what()));
  }
}

// Monitoring stops before monitor_ closes: libzmq leaks an event it fails
// to send (one with a long endpoint is allocated).
HandshakeMonitor::~HandshakeMonitor() { zmq_socket_monitor(watched_, nullptr, 0); }

int HandshakeMonitor::fd() { return monitor_.get(zmq::sockopt::fd); }

bool HandshakeMonitor::Read() {
  const bool was_succeeded = succeeded_;
  const bool was_refused = !refusal_.ok();
  std::vector<zmq::message_t> event;
  // Each event: [kind (uint16) and value (uint32), endpoint].
  while (ReceiveFrames(monitor_, &event)) {
    if (event.empty() || event[0].size() < 6) continue;
    uint16_t kind;
    uint32_t value;
    std::memcpy(&kind, event[0].data(), sizeof(kind));
    std::memcpy(&value, event[0].data<char>() + sizeof(kind), sizeof(value));
    if (kind == ZMQ_EVENT_HANDSHAKE_SUCCEEDED) {
      succeeded_ = true;
      refusal_ = absl::OkStatus();
      continue;
    }
    absl::Status refusal = Describe(kind, value, address_, curve_);
    if (!refusal.ok()) {
      succeeded_ = false;
      refusal_ = std::move(refusal);
    }
  }
  return succeeded_ != was_succeeded || refusal_.ok() == was_refused;
}

}  // namespace rill::rpc_internal
