// CurveZMQ (RFC 26), the server's side of one connection: HELLO is
// answered with WELCOME, INITIATE from an authorized client with READY, and
// from then on every frame travels sealed in a MESSAGE box.
#ifndef RILL_TRANSPORT_ZMTP_CURVE_SERVER_H_
#define RILL_TRANSPORT_ZMTP_CURVE_SERVER_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "transport/curve.h"

namespace rill::zmtp {

using CurveKey = std::array<uint8_t, 32>;

// A server's long-term keys and the client keys it accepts, decoded.
struct CurveServerKeys {
  CurveKey public_key;
  CurveKey secret_key;
  std::set<CurveKey> authorized;

  // INVALID_ARGUMENT naming a key that is not 40 characters of Z85.
  static absl::StatusOr<std::shared_ptr<const CurveServerKeys>> FromZ85(const CurveKeys& keys);
};

// Thread safety: none; one connection's reader uses it, and its writer
// seals under the connection's output lock.
class CurveServer {
 public:
  // A MESSAGE frame is this much longer than the frame it carries: the
  // command's name, the nonce, the MAC and the flags byte.
  static constexpr size_t kMessageOverhead = 8 + 8 + 16 + 1;

  explicit CurveServer(std::shared_ptr<const CurveServerKeys> keys);
  ~CurveServer();
  CurveServer(const CurveServer&) = delete;
  CurveServer& operator=(const CurveServer&) = delete;

  // HELLO's command body in, WELCOME's out. INVALID_ARGUMENT when it is
  // malformed or its box does not open (a client holding another server
  // key).
  absl::StatusOr<std::string> Hello(std::string_view hello);

  // INITIATE's command body in, READY's out, with the client's metadata in
  // `properties`. PERMISSION_DENIED when the client's key is not
  // authorized (the caller answers ERROR "400"); INVALID_ARGUMENT when it
  // is malformed or a box does not open.
  absl::StatusOr<std::string> Initiate(std::string_view initiate,
                                       std::map<std::string, std::string>* properties);

  // The client's long-term public key, once Initiate succeeded (Z85).
  const std::string& client_key() const { return client_key_; }

  // Seals a frame with ZMTP `flags` (kMore, kCommand) in place: `box`
  // holds kMessageOverhead + `size` bytes, the frame's data at box +
  // kMessageOverhead; afterwards it is the MESSAGE frame's body.
  void Seal(uint8_t flags, uint8_t* box, size_t size);
  // Opens a MESSAGE frame's body in place; the frame's data is then at
  // box + kMessageOverhead, and its flags are returned as ZMTP's (kMore,
  // kCommand). INVALID_ARGUMENT for another command, a nonce that does
  // not grow, a box that does not open, or reserved flag bits.
  absl::StatusOr<uint8_t> Open(uint8_t* box, size_t size);

  // Inside a box the flags are libzmq's message flags, not a frame
  // header's: MORE is 0x01 and COMMAND 0x02; the other bits are reserved.
  static constexpr uint8_t kBoxMore = 0x01;
  static constexpr uint8_t kBoxCommand = 0x02;

 private:
  const std::shared_ptr<const CurveServerKeys> keys_;
  CurveKey client_short_public_{};
  CurveKey short_public_{};
  CurveKey short_secret_{};
  std::array<uint8_t, 32> cookie_key_{};
  std::array<uint8_t, 32> shared_{};  // crypto_box_beforenm(C', s')
  uint64_t nonce_ = 1;                // Ours, for READY and MESSAGE.
  uint64_t peer_nonce_ = 0;
  std::string client_key_;
  enum class State { kHello, kInitiate, kReady } state_ = State::kHello;
};

}  // namespace rill::zmtp

#endif  // RILL_TRANSPORT_ZMTP_CURVE_SERVER_H_
