// The client's side of CurveZMQ (RFC 26) as bytes in and out, written from
// the RFC and libzmq's curve_client: each command can be made to deviate
// from the RFC, and with fixed keys it draws no randomness at all.
#ifndef RILL_TESTS_TRANSPORT_CURVE_CLIENT_H_
#define RILL_TESTS_TRANSPORT_CURVE_CLIENT_H_

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace rill::testing {

using CurveKey = std::array<uint8_t, 32>;

struct CurveKeyPair {
  CurveKey public_key{};
  CurveKey secret_key{};

  static CurveKeyPair Random();
  // The same pair for the same seed, everywhere.
  static CurveKeyPair FromSeed(uint8_t seed);
};

// A key as 40 characters of Z85, as key files and CurveKeys hold it.
std::string Z85(const CurveKey& key);

// The flags byte inside a MESSAGE box: libzmq's msg_t flags, not the frame
// header's (where COMMAND is 0x04).
inline constexpr uint8_t kBoxMore = 0x01;
inline constexpr uint8_t kBoxCommand = 0x02;

// Thread safety: none.
class CurveClient {
 public:
  // `short_term` is C', the connection's key pair.
  CurveClient(CurveKeyPair long_term, CurveKey server_key, CurveKeyPair short_term);

  struct HelloOptions {
    uint8_t major = 1;
    uint8_t minor = 0;
    size_t padding = 72;
    // Box the 64 zero bytes for this key instead of the server's.
    std::optional<CurveKey> box_for = std::nullopt;
    // The short nonce; by default the next one.
    std::optional<uint64_t> nonce = std::nullopt;
  };
  // HELLO's command body.
  std::string Hello(const HelloOptions& options);
  std::string Hello() { return Hello(HelloOptions{}); }

  // Opens WELCOME's body: keeps the server's short-term key S' and the
  // cookie. INVALID_ARGUMENT when it is not a WELCOME or does not open.
  absl::Status Welcome(std::string_view body);

  struct InitiateOptions {
    // Instead of the cookie of this client's WELCOME (96 bytes).
    std::optional<std::string> cookie = std::nullopt;
    std::optional<uint64_t> nonce = std::nullopt;
    // The vouch names these keys instead of C' and S.
    std::optional<CurveKey> vouch_short_key = std::nullopt;
    std::optional<CurveKey> vouch_server_key = std::nullopt;
    // The long-term pair that claims the connection (and signs the vouch).
    std::optional<CurveKeyPair> long_term = std::nullopt;
    // The metadata; by default Socket-Type DEALER and an empty Identity.
    std::optional<std::string> metadata = std::nullopt;
  };
  // INITIATE's command body. REQUIRES: Welcome() succeeded.
  std::string Initiate(const InitiateOptions& options);
  std::string Initiate() { return Initiate(InitiateOptions{}); }

  // Opens READY's body. INVALID_ARGUMENT when it is not a READY, does not
  // open, or its metadata does not parse.
  absl::Status Ready(std::string_view body);

  // A MESSAGE command body: `flags` (kBoxMore, kBoxCommand, or anything)
  // and `data` sealed with the next nonce, or with `nonce`.
  std::string Seal(uint8_t flags, std::string_view data, std::optional<uint64_t> nonce = {});

  struct Opened {
    uint8_t flags = 0;
    std::string data;
  };
  // Opens a server's MESSAGE body. INVALID_ARGUMENT when it is not one, its
  // nonce does not grow, or it does not open.
  absl::StatusOr<Opened> Open(std::string_view body);

  // The 96 bytes of the cookie WELCOME carried.
  const std::string& cookie() const { return cookie_; }
  const CurveKeyPair& short_term() const { return short_term_; }
  // The nonce the next command or MESSAGE takes unless told otherwise.
  uint64_t next_nonce() const { return nonce_; }
  void set_next_nonce(uint64_t nonce) { nonce_ = nonce; }

 private:
  uint64_t TakeNonce(std::optional<uint64_t> nonce);

  const CurveKeyPair long_term_;
  const CurveKey server_key_;
  const CurveKeyPair short_term_;
  CurveKey server_short_key_{};
  std::array<uint8_t, 32> shared_{};  // crypto_box_beforenm(S', c')
  std::string cookie_;
  uint64_t nonce_ = 1;
  uint64_t peer_nonce_ = 0;
};

}  // namespace rill::testing

#endif  // RILL_TESTS_TRANSPORT_CURVE_CLIENT_H_
