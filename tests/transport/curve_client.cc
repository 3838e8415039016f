#include "tests/transport/curve_client.h"

#include <sodium.h>
#include <zmq.h>

#include <cstring>
#include <vector>

#include "absl/status/status.h"
#include "transport/zmtp/protocol.h"

namespace rill::testing {
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
  zmtp::WriteBigEndian64(counter, tail);
  return MakeNonce(prefix, tail);
}

const uint8_t* Bytes(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }
uint8_t* Bytes(std::string& s) { return reinterpret_cast<uint8_t*>(s.data()); }

// crypto_box_easy; a key that is no usable point (which a test may send on
// purpose) leaves a box of zeros, which never opens.
void Box(uint8_t* out, const uint8_t* plain, size_t size, const Nonce& nonce, const uint8_t* to,
         const uint8_t* from) {
  if (crypto_box_easy(out, plain, size, nonce.data(), to, from) != 0) {
    std::memset(out, 0, size + crypto_box_MACBYTES);
  }
}

void EnsureSodium() {
  static const bool ready = sodium_init() >= 0;
  (void)ready;
}

}  // namespace

CurveKeyPair CurveKeyPair::Random() {
  EnsureSodium();
  CurveKeyPair pair;
  crypto_box_keypair(pair.public_key.data(), pair.secret_key.data());
  return pair;
}

CurveKeyPair CurveKeyPair::FromSeed(uint8_t seed) {
  EnsureSodium();
  uint8_t bytes[crypto_box_SEEDBYTES];
  std::memset(bytes, seed, sizeof(bytes));
  CurveKeyPair pair;
  crypto_box_seed_keypair(pair.public_key.data(), pair.secret_key.data(), bytes);
  return pair;
}

std::string Z85(const CurveKey& key) {
  char text[41];
  zmq_z85_encode(text, key.data(), key.size());
  return text;
}

CurveClient::CurveClient(CurveKeyPair long_term, CurveKey server_key, CurveKeyPair short_term)
    : long_term_(long_term), server_key_(server_key), short_term_(short_term) {
  EnsureSodium();
}

uint64_t CurveClient::TakeNonce(std::optional<uint64_t> nonce) {
  if (nonce.has_value()) {
    nonce_ = *nonce + 1;
    return *nonce;
  }
  return nonce_++;
}

std::string CurveClient::Hello(const HelloOptions& options) {
  // "\x05HELLO", the version, padding, C', the short nonce, and
  // Box[64 zero bytes](C'->S).
  const uint64_t counter = TakeNonce(options.nonce);
  std::string hello = "\x05HELLO";
  hello += static_cast<char>(options.major);
  hello += static_cast<char>(options.minor);
  hello.append(options.padding, '\0');
  hello.append(reinterpret_cast<const char*>(short_term_.public_key.data()), 32);
  uint8_t tail[8];
  zmtp::WriteBigEndian64(counter, tail);
  hello.append(reinterpret_cast<const char*>(tail), 8);
  const Nonce nonce = MakeNonce("CurveZMQHELLO---", tail);
  const uint8_t zeros[64] = {};
  uint8_t box[80];
  const CurveKey& to = options.box_for.value_or(server_key_);
  Box(box, zeros, sizeof(zeros), nonce, to.data(), short_term_.secret_key.data());
  hello.append(reinterpret_cast<const char*>(box), sizeof(box));
  return hello;
}

absl::Status CurveClient::Welcome(std::string_view body) {
  // "\x07WELCOME", a 16-byte nonce, Box[S' + cookie](S->C').
  if (body.size() != 168 || !body.starts_with("\x07WELCOME")) {
    return absl::InvalidArgumentError("not a WELCOME of 168 bytes");
  }
  const Nonce nonce = MakeNonce("WELCOME-", Bytes(body) + 8);
  uint8_t plain[128];
  if (crypto_box_open_easy(plain, Bytes(body) + 24, 144, nonce.data(), server_key_.data(),
                           short_term_.secret_key.data()) != 0) {
    return absl::InvalidArgumentError("WELCOME does not open");
  }
  std::memcpy(server_short_key_.data(), plain, 32);
  cookie_.assign(reinterpret_cast<const char*>(plain) + 32, 96);
  if (crypto_box_beforenm(shared_.data(), server_short_key_.data(),
                          short_term_.secret_key.data()) != 0) {
    return absl::InvalidArgumentError("WELCOME's short-term key is not usable");
  }
  return absl::OkStatus();
}

std::string CurveClient::Initiate(const InitiateOptions& options) {
  const uint64_t counter = TakeNonce(options.nonce);
  const CurveKeyPair& long_term = options.long_term.value_or(long_term_);
  // The vouch, Box[C' + S](C->S'), under a nonce of our own choosing: the
  // counter, so that the same client always sends the same bytes.
  uint8_t vouch_tail[16] = {};
  zmtp::WriteBigEndian64(counter, vouch_tail + 8);
  const Nonce vouch_nonce = MakeNonce("VOUCH---", vouch_tail);
  uint8_t vouch_plain[64];
  std::memcpy(vouch_plain, options.vouch_short_key.value_or(short_term_.public_key).data(), 32);
  std::memcpy(vouch_plain + 32, options.vouch_server_key.value_or(server_key_).data(), 32);
  uint8_t vouch[80];
  Box(vouch, vouch_plain, sizeof(vouch_plain), vouch_nonce, server_short_key_.data(),
      long_term.secret_key.data());

  // Box[C + vouch + metadata](C'->S').
  const std::string metadata = options.metadata.value_or(
      zmtp::EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}}));
  std::string plain(reinterpret_cast<const char*>(long_term.public_key.data()), 32);
  plain.append(reinterpret_cast<const char*>(vouch_tail), 16);
  plain.append(reinterpret_cast<const char*>(vouch), 80);
  plain += metadata;
  std::string initiate = "\x08INITIATE";
  initiate += options.cookie.value_or(cookie_);
  uint8_t tail[8];
  zmtp::WriteBigEndian64(counter, tail);
  initiate.append(reinterpret_cast<const char*>(tail), 8);
  const Nonce nonce = MakeNonce("CurveZMQINITIATE", tail);
  std::string box(plain.size() + crypto_box_MACBYTES, '\0');
  Box(Bytes(box), Bytes(plain), plain.size(), nonce, server_short_key_.data(),
      short_term_.secret_key.data());
  return initiate + box;
}

absl::Status CurveClient::Ready(std::string_view body) {
  // "\x05READY", the short nonce, Box[metadata](S'->C').
  if (body.size() < 14 + crypto_box_MACBYTES || !body.starts_with("\x05READY")) {
    return absl::InvalidArgumentError("not a READY");
  }
  const uint64_t counter = zmtp::ReadBigEndian64(Bytes(body) + 6);
  if (counter <= peer_nonce_) return absl::InvalidArgumentError("READY's nonce does not grow");
  const Nonce nonce = MakeNonce("CurveZMQREADY---", Bytes(body) + 6);
  std::string plain(body.size() - 14 - crypto_box_MACBYTES, '\0');
  if (crypto_box_open_easy_afternm(Bytes(plain), Bytes(body) + 14, body.size() - 14, nonce.data(),
                                   shared_.data()) != 0) {
    return absl::InvalidArgumentError("READY does not open");
  }
  peer_nonce_ = counter;
  return zmtp::ParseProperties(plain).status();
}

std::string CurveClient::Seal(uint8_t flags, std::string_view data, std::optional<uint64_t> nonce) {
  // "\x07MESSAGE", the short nonce, Box[flags + data](C'->S'), the MAC
  // first as crypto_box_easy lays it out.
  const uint64_t counter = TakeNonce(nonce);
  std::string plain(1, static_cast<char>(flags));
  plain.append(data);
  std::string message(16 + crypto_box_MACBYTES + plain.size(), '\0');
  std::memcpy(message.data(), "\x07MESSAGE", 8);
  zmtp::WriteBigEndian64(counter, Bytes(message) + 8);
  const Nonce box_nonce = CounterNonce("CurveZMQMESSAGEC", counter);
  crypto_box_easy_afternm(Bytes(message) + 16, Bytes(plain), plain.size(), box_nonce.data(),
                          shared_.data());
  return message;
}

absl::StatusOr<CurveClient::Opened> CurveClient::Open(std::string_view body) {
  if (body.size() < 16 + crypto_box_MACBYTES + 1 || !body.starts_with("\x07MESSAGE")) {
    return absl::InvalidArgumentError("not a MESSAGE");
  }
  const uint64_t counter = zmtp::ReadBigEndian64(Bytes(body) + 8);
  if (counter <= peer_nonce_) {
    return absl::InvalidArgumentError("a MESSAGE whose nonce does not grow");
  }
  const Nonce nonce = CounterNonce("CurveZMQMESSAGES", counter);
  std::string plain(body.size() - 16 - crypto_box_MACBYTES, '\0');
  if (crypto_box_open_easy_afternm(Bytes(plain), Bytes(body) + 16, body.size() - 16, nonce.data(),
                                   shared_.data()) != 0) {
    return absl::InvalidArgumentError("a MESSAGE that does not open");
  }
  peer_nonce_ = counter;
  Opened opened;
  opened.flags = static_cast<uint8_t>(plain[0]);
  opened.data = plain.substr(1);
  return opened;
}

}  // namespace rill::testing
