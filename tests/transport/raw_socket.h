// The socket calls the hand-written test peers share: a loopback
// connection (from a chosen local address), whole sends and exact reads.
#ifndef RILL_TESTS_TRANSPORT_RAW_SOCKET_H_
#define RILL_TESTS_TRANSPORT_RAW_SOCKET_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rill::testing {

// A blocking socket connected to 127.0.0.1:`port`, bound first to the
// local address `from` ("127.0.0.2": a source of its own) unless empty.
absl::StatusOr<int> ConnectLoopback(int port, const std::string& from = "");
// False when the peer closed the connection (or it broke).
bool SendAll(int fd, std::string_view bytes);
// A ZMTP frame: its header, then `body`.
bool SendZmtpFrame(int fd, uint8_t flags, std::string_view body);
// Reads exactly `n` bytes into `out` before `deadline`.
bool ReadExactly(int fd, size_t n, absl::Time deadline, std::string* out);

}  // namespace rill::testing

#endif  // RILL_TESTS_TRANSPORT_RAW_SOCKET_H_
