#include "transport/zmtp/curve_server.h"

#include <sodium.h>
#include <zmq.h>

#include <cstring>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "transport/zmtp/protocol.h"

namespace rill::zmtp {
namespace {

using Nonce = std::array<uint8_t, crypto_box_NONCEBYTES>;

Nonce MakeNonce(std::string_view prefix, const uint8_t* tail) {
  Nonce nonce{};
  std::memcpy(nonce.data(), prefix.data(), prefix.size());
  std::memcpy(nonce.data() + prefix.size(), tail, nonce.size() - prefix.size());
  return nonce;
}

Nonce CounterNonce(std::string_view prefix, uint64_t counter) {
  uint8_t tail[8];
  WriteBigEndian64(counter, tail);
  return MakeNonce(prefix, tail);
}

absl::Status Malformed(std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("CURVE handshake: %s", what));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const CurveServerKeys>> CurveServerKeys::FromZ85(
    const CurveKeys& keys) {
  // Without a working libsodium every box and key would be garbage: no
  // CURVE server starts (sodium_init is idempotent and thread-safe).
  if (sodium_init() < 0) {
    return absl::FailedPreconditionError(
        "libsodium failed to initialize (sodium_init): CURVE cannot be used");
  }
  auto decoded = std::make_shared<CurveServerKeys>();
  const auto decode = [](const std::string& z85, std::string_view what,
                         CurveKey* out) -> absl::Status {
    if (z85.size() != 40 || zmq_z85_decode(out->data(), z85.c_str()) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("%s '%s' is not a CURVE key (40 characters of Z85)", what, z85));
    }
    return absl::OkStatus();
  };
  if (absl::Status s = decode(keys.public_key, "public key", &decoded->public_key); !s.ok()) {
    return s;
  }
  if (absl::Status s = decode(keys.secret_key, "secret key", &decoded->secret_key); !s.ok()) {
    return s;
  }
  for (const std::string& key : keys.authorized) {
    CurveKey binary;
    if (absl::Status s = decode(key, "authorized key", &binary); !s.ok()) return s;
    decoded->authorized.insert(binary);
  }
  return std::shared_ptr<const CurveServerKeys>(std::move(decoded));
}

CurveServer::CurveServer(std::shared_ptr<const CurveServerKeys> keys) : keys_(std::move(keys)) {
  crypto_box_keypair(short_public_.data(), short_secret_.data());
}

CurveServer::~CurveServer() {
  sodium_memzero(short_secret_.data(), short_secret_.size());
  sodium_memzero(cookie_key_.data(), cookie_key_.size());
  sodium_memzero(shared_.data(), shared_.size());
}

absl::StatusOr<std::string> CurveServer::Hello(std::string_view hello) {
  // "\x05HELLO", version 1.0, 72 bytes of padding, C', the short nonce,
  // Box[64 zero bytes](C'->S).
  if (state_ != State::kHello) return Malformed("a second HELLO");
  if (hello.size() != 200 || !hello.starts_with("\x05HELLO")) {
    return Malformed(absl::StrFormat("expected HELLO (200 bytes), got %d bytes", hello.size()));
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(hello.data());
  if (bytes[6] != 1 || bytes[7] != 0) {
    return Malformed(absl::StrFormat("HELLO of CURVE version %d.%d", bytes[6], bytes[7]));
  }
  std::memcpy(client_short_public_.data(), bytes + 80, 32);
  const Nonce hello_nonce = MakeNonce("CurveZMQHELLO---", bytes + 112);
  peer_nonce_ = ReadBigEndian64(bytes + 112);
  uint8_t zeros[64];
  if (crypto_box_open_easy(zeros, bytes + 120, 80, hello_nonce.data(), client_short_public_.data(),
                           keys_->secret_key.data()) != 0) {
    return Malformed("HELLO does not open: the client holds another server key");
  }

  // The cookie, Box[C' + s'](K), lets INITIATE prove it follows this
  // WELCOME.
  randombytes_buf(cookie_key_.data(), cookie_key_.size());
  uint8_t cookie_tail[16];
  randombytes_buf(cookie_tail, sizeof(cookie_tail));
  const Nonce cookie_nonce = MakeNonce("COOKIE--", cookie_tail);
  uint8_t cookie_plain[64];
  std::memcpy(cookie_plain, client_short_public_.data(), 32);
  std::memcpy(cookie_plain + 32, short_secret_.data(), 32);
  uint8_t cookie_box[80];
  crypto_secretbox_easy(cookie_box, cookie_plain, sizeof(cookie_plain), cookie_nonce.data(),
                        cookie_key_.data());
  sodium_memzero(cookie_plain, sizeof(cookie_plain));

  // Box[S' + cookie](S->C').
  uint8_t welcome_plain[128];
  std::memcpy(welcome_plain, short_public_.data(), 32);
  std::memcpy(welcome_plain + 32, cookie_tail, 16);
  std::memcpy(welcome_plain + 48, cookie_box, 80);
  uint8_t welcome_tail[16];
  randombytes_buf(welcome_tail, sizeof(welcome_tail));
  const Nonce welcome_nonce = MakeNonce("WELCOME-", welcome_tail);
  std::string welcome(8 + 16 + 144, '\0');
  auto* out = reinterpret_cast<uint8_t*>(welcome.data());
  std::memcpy(out, "\x07WELCOME", 8);
  std::memcpy(out + 8, welcome_tail, 16);
  if (crypto_box_easy(out + 24, welcome_plain, sizeof(welcome_plain), welcome_nonce.data(),
                      client_short_public_.data(), keys_->secret_key.data()) != 0) {
    return Malformed("cannot seal WELCOME");
  }
  state_ = State::kInitiate;
  return welcome;
}

absl::StatusOr<std::string> CurveServer::Initiate(std::string_view initiate,
                                                  std::map<std::string, std::string>* properties) {
  // "\x08INITIATE", the cookie (nonce tail and box), the short nonce,
  // Box[C + vouch + metadata](C'->S').
  if (state_ != State::kInitiate) return Malformed("INITIATE before HELLO, or twice");
  if (initiate.size() < 257 || !initiate.starts_with("\x08INITIATE")) {
    return Malformed(
        absl::StrFormat("expected INITIATE (257 bytes or more), got %d bytes", initiate.size()));
  }
  const auto* bytes = reinterpret_cast<const uint8_t*>(initiate.data());
  const Nonce cookie_nonce = MakeNonce("COOKIE--", bytes + 9);
  uint8_t cookie_plain[64];
  if (crypto_secretbox_open_easy(cookie_plain, bytes + 25, 80, cookie_nonce.data(),
                                 cookie_key_.data()) != 0 ||
      std::memcmp(cookie_plain, client_short_public_.data(), 32) != 0 ||
      std::memcmp(cookie_plain + 32, short_secret_.data(), 32) != 0) {
    sodium_memzero(cookie_plain, sizeof(cookie_plain));
    return Malformed("INITIATE carries a cookie this server did not give");
  }
  sodium_memzero(cookie_plain, sizeof(cookie_plain));

  const uint64_t initiate_counter = ReadBigEndian64(bytes + 105);
  if (initiate_counter <= peer_nonce_) return Malformed("INITIATE's nonce does not grow");
  const Nonce initiate_nonce = MakeNonce("CurveZMQINITIATE", bytes + 105);
  const size_t box_size = initiate.size() - 113;
  std::vector<uint8_t> plain(box_size - crypto_box_MACBYTES);
  if (crypto_box_open_easy(plain.data(), bytes + 113, box_size, initiate_nonce.data(),
                           client_short_public_.data(), short_secret_.data()) != 0) {
    return Malformed("INITIATE does not open");
  }
  peer_nonce_ = initiate_counter;

  // The vouch, Box[C' + S](C->S'), shows the owner of C sent C'.
  const uint8_t* client_key = plain.data();
  const Nonce vouch_nonce = MakeNonce("VOUCH---", plain.data() + 32);
  uint8_t vouch[64];
  if (crypto_box_open_easy(vouch, plain.data() + 48, 80, vouch_nonce.data(), client_key,
                           short_secret_.data()) != 0 ||
      std::memcmp(vouch, client_short_public_.data(), 32) != 0 ||
      std::memcmp(vouch + 32, keys_->public_key.data(), 32) != 0) {
    return Malformed("INITIATE's vouch does not hold");
  }
  char z85[41];
  zmq_z85_encode(z85, client_key, 32);
  client_key_ = z85;
  CurveKey key;
  std::memcpy(key.data(), client_key, 32);
  if (!keys_->authorized.contains(key)) {
    return absl::PermissionDeniedError(
        absl::StrFormat("CURVE client key %s is not in the server's authorized_keys", client_key_));
  }
  absl::StatusOr<std::map<std::string, std::string>> metadata = ParseProperties(
      std::string_view(reinterpret_cast<const char*>(plain.data()) + 128, plain.size() - 128));
  if (!metadata.ok()) return metadata.status();
  *properties = *std::move(metadata);

  if (crypto_box_beforenm(shared_.data(), client_short_public_.data(), short_secret_.data()) !=
      0) {
    return Malformed("the client's short-term key is not a usable public key");
  }
  const std::string ready_metadata = ServerReadyProperties();
  std::string ready(6 + 8 + crypto_box_MACBYTES + ready_metadata.size(), '\0');
  auto* out = reinterpret_cast<uint8_t*>(ready.data());
  std::memcpy(out, "\x05READY", 6);
  WriteBigEndian64(nonce_, out + 6);
  const Nonce ready_nonce = CounterNonce("CurveZMQREADY---", nonce_++);
  crypto_box_easy_afternm(out + 14, reinterpret_cast<const uint8_t*>(ready_metadata.data()),
                          ready_metadata.size(), ready_nonce.data(), shared_.data());
  state_ = State::kReady;
  return ready;
}

void CurveServer::Seal(uint8_t flags, uint8_t* box, size_t size) {
  std::memcpy(box, "\x07MESSAGE", 8);
  WriteBigEndian64(nonce_, box + 8);
  const Nonce nonce = CounterNonce("CurveZMQMESSAGES", nonce_++);
  box[32] = ((flags & kMore) ? kBoxMore : 0) | ((flags & kCommand) ? kBoxCommand : 0);
  // In place: the MAC goes before the flags and data it covers.
  crypto_box_detached_afternm(box + 32, box + 16, box + 32, size + 1, nonce.data(), shared_.data());
}

absl::StatusOr<uint8_t> CurveServer::Open(uint8_t* box, size_t size) {
  if (state_ != State::kReady) return Malformed("a MESSAGE before the handshake ended");
  if (size < kMessageOverhead || std::memcmp(box, "\x07MESSAGE", 8) != 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a CURVE frame of %d bytes is not a MESSAGE", size));
  }
  const uint64_t counter = ReadBigEndian64(box + 8);
  if (counter <= peer_nonce_) {
    return absl::InvalidArgumentError("a CURVE MESSAGE whose nonce does not grow (a replay?)");
  }
  const Nonce nonce = MakeNonce("CurveZMQMESSAGEC", box + 8);
  if (crypto_box_open_detached_afternm(box + 32, box + 32, box + 16, size - 32, nonce.data(),
                                       shared_.data()) != 0) {
    return absl::InvalidArgumentError("a CURVE MESSAGE does not open");
  }
  peer_nonce_ = counter;
  const uint8_t flags = box[32];
  if (flags & ~(kBoxMore | kBoxCommand)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a CURVE MESSAGE whose flags 0x%02x set reserved bits", flags));
  }
  return static_cast<uint8_t>(((flags & kBoxMore) ? kMore : 0) |
                              ((flags & kBoxCommand) ? kCommand : 0));
}

}  // namespace rill::zmtp
