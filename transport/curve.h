// ZeroMQ CURVE for rill's connections: a process's key pair and the public
// keys it trusts, kept in a key directory, and a client socket's settings.
#ifndef RILL_TRANSPORT_CURVE_H_
#define RILL_TRANSPORT_CURVE_H_

#include <memory>
#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "zmq.hpp"

namespace rill {

// The CURVE identity of a process and whom it trusts. Keys are Z85 text
// (40 characters). A key directory holds:
//   public.key, secret.key    this process's pair (secret.key mode 0600);
//   authorized_keys           the client public keys a server accepts, one
//                             per line (a line starting with '#' is a comment);
//   server_public.key         the servers' public key, when it is not this
//                             process's own (a client outside the cluster).
// The members of a cluster share one directory: each server accepts the
// others, and encrypts everything, with no other set-up.
struct CurveKeys {
  std::string public_key;
  std::string secret_key;
  std::string server_public_key;
  std::set<std::string> authorized;
};

// Whether this libzmq was built with CURVE (Debian's is, with libsodium).
bool CurveAvailable();

// Reads a key directory. Errors name the file (and line) that is missing
// or malformed, and a secret key that does not match its public key.
absl::StatusOr<CurveKeys> LoadCurveKeys(const std::string& dir);

// Writes a new key pair into `dir` (made 0700 when missing; an existing
// pair is never overwritten). With `server_dir` empty the new pair is a
// cluster's: its public key starts authorized_keys. Otherwise it is a
// client of that cluster: its public key is appended to server_dir's
// authorized_keys and the cluster's public key copied to server_public.key.
// Returns the new public key.
absl::StatusOr<std::string> WriteCurveKeys(const std::string& dir, const std::string& server_dir);

// A client socket's settings: it authenticates itself and the server.
// (Servers speak CURVE themselves: transport/zmtp/curve_server.h.)
void UseCurveAsClient(zmq::socket_t& socket, const CurveKeys& keys);

}  // namespace rill

#endif  // RILL_TRANSPORT_CURVE_H_
