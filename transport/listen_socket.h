// The sockets an RpcServer listens on (tcp and a unix-domain socket for
// ipc://) and what it learns of a peer that connects.
#ifndef RILL_TRANSPORT_LISTEN_SOCKET_H_
#define RILL_TRANSPORT_LISTEN_SOCKET_H_

#include <sys/socket.h>

#include <string>

#include "absl/container/flat_hash_set.h"
#include "absl/status/statusor.h"

namespace rill::rpc_internal {

// A non-blocking socket listening on `host_port` ("127.0.0.1:0", "*:2222",
// "[::1]:2222"). Errors: a malformed address (INVALID_ARGUMENT), a port
// in use or an address not of this machine (UNAVAILABLE naming it).
absl::StatusOr<int> ListenTcp(const std::string& host_port);
// The same on the unix-domain socket `path`. Errors: UNAVAILABLE.
absl::StatusOr<int> ListenIpc(const std::string& path);
// The port a listening socket got.
int BoundPort(int fd);

// Raises this process's soft limit of open files to its hard limit (the
// default soft limit, 1,024, would cap a server's connections) and
// returns the limit in force.
int RaiseFileLimit();

// The addresses of this machine's interfaces ("127.0.0.1", "::1").
absl::flat_hash_set<std::string> LocalAddresses();

struct PeerName {
  std::string address;  // "HOST:PORT" ("[HOST]:PORT" for IPv6).
  bool local = false;   // On this machine: loopback or one of `local_addresses`.
  std::string host;     // The address alone: what a source's budget is kept by.
};
PeerName NamePeer(const sockaddr_storage& peer,
                  const absl::flat_hash_set<std::string>& local_addresses);

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_LISTEN_SOCKET_H_
