#include "transport/listen_socket.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "transport/rpc_internal.h"

namespace rill::rpc_internal {

absl::flat_hash_set<std::string> LocalAddresses() {
  absl::flat_hash_set<std::string> addresses;
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return addresses;
  for (ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char host[NI_MAXHOST];
    const socklen_t size = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(i->ifa_addr, size, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) == 0) {
      addresses.insert(host);
    }
  }
  freeifaddrs(interfaces);
  return addresses;
}

PeerName NamePeer(const sockaddr_storage& peer,
                  const absl::flat_hash_set<std::string>& local_addresses) {
  char host[NI_MAXHOST] = "";
  char port[NI_MAXSERV] = "";
  const socklen_t size = peer.ss_family == AF_INET6 ? sizeof(sockaddr_in6) : sizeof(sockaddr_in);
  if (getnameinfo(reinterpret_cast<const sockaddr*>(&peer), size, host, sizeof(host), port,
                  sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
    return {"?", false, "?"};
  }
  const std::string h = host;
  return {peer.ss_family == AF_INET6 ? absl::StrFormat("[%s]:%s", h, port)
                                     : absl::StrFormat("%s:%s", h, port),
          h.starts_with("127.") || h == "::1" || local_addresses.contains(h), h};
}

int RaiseFileLimit() {
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) != 0) return 1024;
  if (files.rlim_cur < files.rlim_max) {
    files.rlim_cur = files.rlim_max;
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
  }
  return static_cast<int>(std::min<rlim_t>(files.rlim_cur, INT_MAX / 2));
}

int BoundPort(int fd) {
  sockaddr_storage bound{};
  socklen_t length = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) return 0;
  return ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                           : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
}

absl::StatusOr<int> ListenTcp(const std::string& bind_address) {
  RETURN_IF_ERROR(rpc_internal::CheckHostPort(bind_address, "bind address"));
  const size_t colon = bind_address.rfind(':');
  std::string host = bind_address.substr(0, colon);
  const std::string port = bind_address.substr(colon + 1);
  if (host == "*") host = "0.0.0.0";
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (const int error = getaddrinfo(host.c_str(), port.c_str(), &hints, &found); error != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot bind tcp://%s: %s", bind_address, gai_strerror(error)));
  }
  const int fd = socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    freeaddrinfo(found);
    return absl::ResourceExhaustedError(absl::StrFormat("cannot open a socket for tcp://%s: %s",
                                                        bind_address, std::strerror(errno)));
  }
  const int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  const int bound = bind(fd, found->ai_addr, found->ai_addrlen);
  const int error = errno;
  freeaddrinfo(found);
  if (bound != 0 || listen(fd, SOMAXCONN) != 0) {
    close(fd);
    const std::string message =
        absl::StrFormat("cannot bind tcp://%s: %s", bind_address, std::strerror(error));
    return error == EADDRINUSE || error == EADDRNOTAVAIL || error == EACCES
               ? absl::UnavailableError(message)
               : absl::InvalidArgumentError(message);
  }
  return fd;
}

absl::StatusOr<int> ListenIpc(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof(address.sun_path)) {
    return absl::UnavailableError(absl::StrFormat("ipc socket path %s is too long", path));
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0 ||
      listen(fd, SOMAXCONN) != 0) {
    const std::string message =
        absl::StrFormat("cannot bind ipc://%s: %s", path, std::strerror(errno));
    if (fd >= 0) close(fd);
    return absl::UnavailableError(message);
  }
  return fd;
}

}  // namespace rill::rpc_internal
