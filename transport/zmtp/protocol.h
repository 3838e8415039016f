// ZMTP 3.x, ZeroMQ's wire protocol, as far as a rill server speaks it
// itself: the greeting, frame headers, commands and their properties.
#ifndef RILL_TRANSPORT_ZMTP_PROTOCOL_H_
#define RILL_TRANSPORT_ZMTP_PROTOCOL_H_

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill::zmtp {

// Every greeting is this long (RFC 23, ZMTP 3.0).
inline constexpr size_t kGreetingBytes = 64;

// A frame's flags byte.
inline constexpr uint8_t kMore = 0x01;
inline constexpr uint8_t kLong = 0x02;
inline constexpr uint8_t kCommand = 0x04;

// A frame header is one flags byte and a one- or eight-byte size.
inline constexpr size_t kShortHeaderBytes = 2;
inline constexpr size_t kLongHeaderBytes = 9;

enum class Mechanism { kNull, kCurve };

// This side's greeting: ZMTP 3.1 with `mechanism`, as a server.
std::string ServerGreeting(Mechanism mechanism);

// A peer's greeting, checked: the signature, a version of 3.0 or later,
// and `expected` as its mechanism. Errors say what is wrong.
// REQUIRES: `greeting` holds kGreetingBytes.
absl::Status CheckGreeting(std::string_view greeting, Mechanism expected);

// Writes the header of a frame of `size` bytes with `flags` (kLong is set
// when the size needs it) into `out`, which has kLongHeaderBytes; returns
// its length.
size_t EncodeFrameHeader(uint8_t flags, uint64_t size, uint8_t* out);

// A command frame's body: the name's length, the name, then `data`.
std::string CommandBody(std::string_view name, std::string_view data);
struct Command {
  std::string_view name;
  std::string_view data;
};
// Splits a command frame's body. INVALID_ARGUMENT when the name's length
// runs past the body.
absl::StatusOr<Command> ParseCommand(std::string_view body);

// Metadata, as READY and INITIATE carry it: for each property a one-byte
// name length, the name, a four-byte big-endian value length, the value.
using Properties = std::vector<std::pair<std::string, std::string>>;
std::string EncodeProperties(const Properties& properties);
// INVALID_ARGUMENT naming the property that runs past the end.
absl::StatusOr<std::map<std::string, std::string>> ParseProperties(std::string_view bytes);

// What a server's READY says of it: a ROUTER with an empty identity.
std::string ServerReadyProperties();
// Whether a peer whose READY carries `properties` may talk to a ROUTER
// (a DEALER, REQ or ROUTER). INVALID_ARGUMENT naming its socket type.
absl::Status CheckPeerSocketType(const std::map<std::string, std::string>& properties);

// An ERROR command's body, with `reason` cut to 255 bytes.
std::string ErrorBody(std::string_view reason);

uint64_t ReadBigEndian64(const uint8_t* bytes);
void WriteBigEndian64(uint64_t value, uint8_t* out);

}  // namespace rill::zmtp

#endif  // RILL_TRANSPORT_ZMTP_PROTOCOL_H_
