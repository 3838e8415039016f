#include "transport/zmtp/protocol.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"

namespace rill::zmtp {
namespace {

constexpr size_t kMechanismOffset = 12;
constexpr size_t kMechanismBytes = 20;

std::string_view MechanismName(Mechanism mechanism) {
  return mechanism == Mechanism::kCurve ? "CURVE" : "NULL";
}

void AppendBigEndian32(uint32_t value, std::string* out) {
  for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(value >> shift));
}

}  // namespace

uint64_t ReadBigEndian64(const uint8_t* bytes) {
  uint64_t value = 0;
  for (int i = 0; i < 8; ++i) value = (value << 8) | bytes[i];
  return value;
}

void WriteBigEndian64(uint64_t value, uint8_t* out) {
  for (int i = 7; i >= 0; --i) {
    out[i] = static_cast<uint8_t>(value);
    value >>= 8;
  }
}

std::string ServerGreeting(Mechanism mechanism) {
  std::string greeting(kGreetingBytes, '\0');
  // The signature: 0xFF, eight bytes that a ZMTP 1.0 peer reads as an
  // identity's length (an empty identity: 1), 0x7F.
  greeting[0] = static_cast<char>(0xFF);
  greeting[8] = 1;
  greeting[9] = 0x7F;
  greeting[10] = 3;  // Major version.
  greeting[11] = 1;  // Minor version.
  const std::string_view name = MechanismName(mechanism);
  std::memcpy(greeting.data() + kMechanismOffset, name.data(), name.size());
  greeting[32] = mechanism == Mechanism::kCurve ? 1 : 0;  // as-server
  return greeting;
}

absl::Status CheckGreeting(std::string_view greeting, Mechanism expected) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(greeting.data());
  if (greeting.size() < kGreetingBytes || bytes[0] != 0xFF || (bytes[9] & 0x01) == 0) {
    return absl::InvalidArgumentError("the greeting does not start with ZMTP's signature");
  }
  if (bytes[10] < 3) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "the peer speaks ZMTP %d.%d; this server needs 3.0 or later", bytes[10], bytes[11]));
  }
  std::string_view name = greeting.substr(kMechanismOffset, kMechanismBytes);
  name = name.substr(0, std::min(name.find('\0'), name.size()));
  if (name != MechanismName(expected)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the peer's security mechanism is '%s' and this server's is %s",
                        absl::CHexEscape(std::string(name)), MechanismName(expected)));
  }
  return absl::OkStatus();
}

size_t EncodeFrameHeader(uint8_t flags, uint64_t size, uint8_t* out) {
  if (size > 255) {
    out[0] = flags | kLong;
    WriteBigEndian64(size, out + 1);
    return kLongHeaderBytes;
  }
  out[0] = flags & ~kLong;
  out[1] = static_cast<uint8_t>(size);
  return kShortHeaderBytes;
}

std::string CommandBody(std::string_view name, std::string_view data) {
  std::string body;
  body.reserve(1 + name.size() + data.size());
  body.push_back(static_cast<char>(name.size()));
  body.append(name);
  body.append(data);
  return body;
}

absl::StatusOr<Command> ParseCommand(std::string_view body) {
  if (body.empty()) return absl::InvalidArgumentError("an empty command frame");
  const size_t length = static_cast<uint8_t>(body[0]);
  if (length + 1 > body.size()) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "a command frame of %d bytes names a command of %d bytes", body.size(), length));
  }
  return Command{body.substr(1, length), body.substr(1 + length)};
}

std::string EncodeProperties(const Properties& properties) {
  std::string out;
  for (const auto& [name, value] : properties) {
    out.push_back(static_cast<char>(name.size()));
    out.append(name);
    AppendBigEndian32(static_cast<uint32_t>(value.size()), &out);
    out.append(value);
  }
  return out;
}

absl::StatusOr<std::map<std::string, std::string>> ParseProperties(std::string_view bytes) {
  std::map<std::string, std::string> properties;
  size_t pos = 0;
  while (pos < bytes.size()) {
    const size_t name_length = static_cast<uint8_t>(bytes[pos]);
    if (bytes.size() - pos < 1 + name_length + 4) {
      return absl::InvalidArgumentError(
          absl::StrFormat("metadata property at byte %d runs past the end", pos));
    }
    std::string name(bytes.substr(pos + 1, name_length));
    const auto* length_bytes =
        reinterpret_cast<const uint8_t*>(bytes.data() + pos + 1 + name_length);
    const uint32_t value_length = (uint32_t{length_bytes[0]} << 24) |
                                  (uint32_t{length_bytes[1]} << 16) |
                                  (uint32_t{length_bytes[2]} << 8) | length_bytes[3];
    pos += 1 + name_length + 4;
    if (value_length > bytes.size() - pos) {
      return absl::InvalidArgumentError(
          absl::StrFormat("metadata property '%s' has a value of %d bytes, past the end",
                          absl::CHexEscape(name), value_length));
    }
    properties[std::move(name)] = std::string(bytes.substr(pos, value_length));
    pos += value_length;
  }
  return properties;
}

std::string ServerReadyProperties() {
  return EncodeProperties({{"Socket-Type", "ROUTER"}, {"Identity", ""}});
}

absl::Status CheckPeerSocketType(const std::map<std::string, std::string>& properties) {
  const auto found = properties.find("Socket-Type");
  if (found == properties.end()) {
    return absl::InvalidArgumentError("the peer's READY names no Socket-Type");
  }
  const std::string& type = found->second;
  if (type == "DEALER" || type == "REQ" || type == "ROUTER") return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat(
      "the peer is a ZeroMQ %s socket; a rill server talks to DEALER, REQ and ROUTER sockets",
      absl::CHexEscape(type)));
}

std::string ErrorBody(std::string_view reason) {
  reason = reason.substr(0, 255);
  std::string data(1, static_cast<char>(reason.size()));
  data.append(reason);
  return CommandBody("ERROR", data);
}

}  // namespace rill::zmtp
