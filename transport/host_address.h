// Host names as ZeroMQ can bind them: it binds interface addresses and
// interface names, but looks up no host name for a bind.
#ifndef RILL_TRANSPORT_HOST_ADDRESS_H_
#define RILL_TRANSPORT_HOST_ADDRESS_H_

#include <string>

#include "absl/status/statusor.h"

namespace rill {

// `host` as an address to bind: "localhost" is "127.0.0.1"; an IPv4
// address, a bracketed IPv6 address, "*" and an interface name ("lo") are
// returned as they are; any other name is looked up (getaddrinfo) and its
// first IPv4 address returned (else its first IPv6 one, bracketed).
// A name that does not resolve is INVALID_ARGUMENT ("cannot resolve host
// 'x': ..."), or UNAVAILABLE when the resolver could not answer for now.
// Names under "invalid." never resolve and are answered without a lookup
// (RFC 6761, 6.4).
absl::StatusOr<std::string> BindableHost(const std::string& host);

// Whether `host_port` ("127.0.0.1:2222", "[::1]:0", "localhost:80") binds
// only loopback, where no one off this machine can reach it.
bool IsLoopbackHost(const std::string& host_port);

}  // namespace rill

#endif  // RILL_TRANSPORT_HOST_ADDRESS_H_
