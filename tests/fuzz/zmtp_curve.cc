#include "tests/fuzz/zmtp_curve.h"

#include <sodium.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "graph/log_sink.h"
#include "transport/connection_limits.h"
#include "transport/zmtp/protocol.h"
#include "transport/zmtp/server_reader.h"

namespace rill::fuzz {
namespace {

// Draws since the last restart: each draw is the ChaCha20 stream of a seed
// holding its index, so the same draws return the same bytes.
uint64_t draws = 0;

void DeterministicBuffer(void* const buffer, const size_t size) {
  uint8_t seed[randombytes_SEEDBYTES] = {};
  zmtp::WriteBigEndian64(draws++, seed);
  randombytes_buf_deterministic(buffer, size, seed);
}

uint32_t DeterministicRandom() {
  uint32_t value;
  DeterministicBuffer(&value, sizeof(value));
  return value;
}

uint32_t DeterministicUniform(const uint32_t upper) {
  return upper < 2 ? 0 : DeterministicRandom() % upper;
}

const char* DeterministicName() { return "rill_fuzz_deterministic"; }

randombytes_implementation deterministic = {
    .implementation_name = DeterministicName,
    .random = DeterministicRandom,
    .stir = nullptr,
    .uniform = DeterministicUniform,
    .buf = DeterministicBuffer,
    .close = nullptr,
};

const testing::CurveKeyPair& ServerPair() {
  static const testing::CurveKeyPair pair = testing::CurveKeyPair::FromSeed(1);
  return pair;
}
const testing::CurveKeyPair& ClientPair() {
  static const testing::CurveKeyPair pair = testing::CurveKeyPair::FromSeed(2);
  return pair;
}

// What the reader sends back, command by command.
class Recorder : public zmtp::ServerReader::Sink {
 public:
  void SendHandshake(std::string bytes) override { sent.push_back(std::move(bytes)); }
  void Pong(std::string) override {}
  void HandshakeDone() override {}
  void Message(zmtp::ReceivedMessage) override {}
  void Refused(const RpcHeader&, absl::Status) override {}
  std::vector<std::string> sent;
};

[[noreturn]] void Fail(const char* what) {
  std::fprintf(stderr, "zmtp_curve: %s\n", what);
  std::abort();
}

std::string CommandFrame(std::string_view body) {
  uint8_t header[zmtp::kLongHeaderBytes];
  const size_t length = zmtp::EncodeFrameHeader(zmtp::kCommand, body.size(), header);
  return std::string(reinterpret_cast<const char*>(header), length) + std::string(body);
}

// A command frame's body.
std::string_view Body(std::string_view frame) {
  const bool long_frame = !frame.empty() && (frame[0] & zmtp::kLong) != 0;
  return frame.substr(
      std::min(frame.size(), long_frame ? zmtp::kLongHeaderBytes : zmtp::kShortHeaderBytes));
}

CurveSession MakeSession() {
  RestartRandomness();
  auto server = ServerLoad::Create({}, 0, LogSink::Discard());
  Recorder recorder;
  zmtp::ServerReader reader(FuzzServerKeys(), server->Connect("fuzz"), &recorder);
  CurveSession session{"", testing::CurveClient(ClientPair(), ServerPair().public_key,
                                                testing::CurveKeyPair::FromSeed(3))};
  const auto send = [&](std::string_view bytes) {
    session.prefix.append(bytes);
    while (!bytes.empty()) {
      const std::span<uint8_t> buffer = reader.Buffer();
      const size_t n = std::min(buffer.size(), bytes.size());
      std::copy_n(bytes.begin(), n, buffer.begin());
      bytes.remove_prefix(n);
      if (!reader.Received(n).ok()) Fail("the reader refused the fuzz client's handshake");
    }
  };
  std::string greeting = zmtp::ServerGreeting(zmtp::Mechanism::kCurve);
  greeting[32] = 0;  // As a client.
  send(greeting);
  send(CommandFrame(session.client.Hello()));
  if (recorder.sent.size() != 2 || !session.client.Welcome(Body(recorder.sent[1])).ok()) {
    Fail("no WELCOME that opens");
  }
  send(CommandFrame(session.client.Initiate()));
  if (recorder.sent.size() != 3 || !session.client.Ready(Body(recorder.sent[2])).ok() ||
      !reader.handshake_done()) {
    Fail("no READY that opens");
  }
  return session;
}

}  // namespace

void UseDeterministicRandomness() {
  // libsodium asks for this before sodium_init(); where a library has
  // called that already, an implementation that needs no stirring takes
  // over all the same.
  randombytes_set_implementation(&deterministic);
  if (sodium_init() < 0) Fail("libsodium does not start");
}

void RestartRandomness() { draws = 0; }

std::shared_ptr<const zmtp::CurveServerKeys> FuzzServerKeys() {
  static const std::shared_ptr<const zmtp::CurveServerKeys> keys = [] {
    auto keys = std::make_shared<zmtp::CurveServerKeys>();
    keys->public_key = ServerPair().public_key;
    keys->secret_key = ServerPair().secret_key;
    keys->authorized.insert(ClientPair().public_key);
    return std::shared_ptr<const zmtp::CurveServerKeys>(std::move(keys));
  }();
  return keys;
}

const CurveSession& HandshakenSession() {
  static const CurveSession session = MakeSession();
  return session;
}

std::string Record(uint8_t frame_flags, uint8_t box_flags, std::string_view data, bool last) {
  std::string record(4, '\0');
  record[0] = static_cast<char>(frame_flags & ~kRecordWide);
  record[1] = static_cast<char>(box_flags);
  std::string padded(data);
  size_t length = padded.size();
  if (length > 0xFFFF) {
    // In 32-byte units, the data made up with zeros to a whole one.
    record[0] = static_cast<char>(record[0] | kRecordWide);
    length = (length + 31) / 32;
    padded.resize(length * 32, '\0');
  }
  record[2] = static_cast<char>(length >> 8);
  record[3] = static_cast<char>(length & 0xFF);
  if (last) {
    // The zeros at its end need not travel.
    const size_t kept = padded.find_last_not_of('\0');
    padded.resize(kept == std::string::npos ? 0 : kept + 1);
  }
  return record + padded;
}

std::string SealRecords(std::string_view records, testing::CurveClient client, size_t max_bytes) {
  std::string out;
  uint64_t last_nonce = client.next_nonce();
  while (records.size() >= 4 && out.size() < max_bytes) {
    const auto* head = reinterpret_cast<const uint8_t*>(records.data());
    size_t length = (size_t{head[2]} << 8) | head[3];
    if (head[0] & kRecordWide) length *= 32;
    records.remove_prefix(4);
    std::string data(records.substr(0, std::min(length, records.size())));
    records.remove_prefix(data.size());
    data.resize(length, '\0');
    const uint64_t nonce = (head[0] & kRecordReplay) ? last_nonce : client.next_nonce();
    std::string sealed = client.Seal(head[1], data, nonce);
    last_nonce = nonce;
    if (head[0] & kRecordCorrupt) sealed[sealed.size() / 2] ^= 0x20;
    uint8_t header[zmtp::kLongHeaderBytes];
    const size_t header_bytes =
        zmtp::EncodeFrameHeader(head[0] & (zmtp::kMore | zmtp::kCommand), sealed.size(), header);
    out.append(reinterpret_cast<const char*>(header), header_bytes);
    out += sealed;
  }
  return out;
}

}  // namespace rill::fuzz
