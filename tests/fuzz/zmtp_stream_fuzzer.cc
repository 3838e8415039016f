// What a peer sends a server's socket, byte by byte: the ZMTP greeting and
// handshake, then frames of any size, count and flags, read by the
// server's own reader (ServerReader) under small limits. The first byte
// chooses NULL or CURVE, whether a valid handshake comes first (so that
// mutations reach the messages), under CURVE whether the rest is sealed by
// the target (so that mutations get past the boxes), and how the stream is
// cut into reads. Invariants: no message before the handshake ends; a
// message delivered has exactly the frames its header declares, each of
// the declared size and aligned; the connection never holds more than its
// limit; everything held is given back; and the outcome does not depend on
// how the stream was cut.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "graph/allocator.h"
#include "tests/fuzz/fuzz_util.h"
#include "tests/fuzz/zmtp_curve.h"
#include "transport/connection_limits.h"
#include "transport/wire.h"
#include "transport/zmtp/protocol.h"
#include "transport/zmtp/server_reader.h"

namespace {

using namespace rill;

constexpr int64_t kConnectionLimit = int64_t{1} << 20;
// The sealed mode's stream stops growing here: past the connection's
// limit, short of what slows each run.
constexpr size_t kMaxSealedBytes = size_t{3} << 19;

// The first byte of an input.
constexpr uint8_t kValidHandshake = 0x01;
// Bits 1-4: log2 of the size of each read.
constexpr uint8_t kCurve = 0x20;
// With kCurve and kValidHandshake: the rest is records to seal
// (tests/fuzz/zmtp_curve.h).
constexpr uint8_t kSealed = 0x40;
constexpr uint8_t kUnevenReads = 0x80;

class Sink : public zmtp::ServerReader::Sink {
 public:
  void SendHandshake(std::string bytes) override { sent += bytes.size(); }
  void Pong(std::string context) override {
    fuzz::Check(handshake_done, "a PONG before the handshake ended");
    outcome += "p" + context;
  }
  void HandshakeDone() override {
    fuzz::Check(!handshake_done, "the handshake ends twice");
    handshake_done = true;
  }
  void Message(zmtp::ReceivedMessage message) override {
    fuzz::Check(handshake_done, "a message before the handshake ended");
    const RpcHeader& header = message.header;
    fuzz::Check(message.tensor_frames.size() == static_cast<size_t>(header.tensors_size()),
                "a message with another frame count than its header declares");
    for (size_t i = 0; i < message.tensor_frames.size(); ++i) {
      const zmq::message_t& frame = message.tensor_frames[i];
      fuzz::Check(frame.size() == header.tensors(static_cast<int>(i)).bytes(),
                  "a frame of another size than its header declares");
      fuzz::Check(
          frame.size() == 0 || reinterpret_cast<uintptr_t>(frame.data()) % kTensorAlignment == 0,
          "a tensor frame that is not aligned");
    }
    absl::StatusOr<std::vector<Tensor>> tensors = DecodeTensors(header, message.tensor_frames, 0);
    if (tensors.ok()) {
      for (const Tensor& tensor : *tensors) (void)fuzz::TouchElements(tensor);
    }
    outcome += "m" + header.method();
  }
  void Refused(const RpcHeader& header, absl::Status why) override {
    fuzz::Check(handshake_done, "a refusal before the handshake ended");
    outcome += "r" + header.method() + std::string(why.message());
  }
  size_t sent = 0;
  bool handshake_done = false;
  std::string outcome;
};

// The stream fed in reads of the sizes `cut` gives to a NULL reader, or a
// CURVE one; what happened.
std::string Feed(std::string_view stream, bool curve, const std::function<size_t(size_t)>& cut) {
  auto server = ServerLoad::Create(
      {.max_bytes_per_connection = kConnectionLimit, .max_buffered_bytes = 4 * kConnectionLimit}, 0,
      LogSink::Discard());
  auto load = server->Connect("fuzz");
  Sink sink;
  absl::Status status;
  {
    // The same short-term key and cookie for every reader.
    if (curve) fuzz::RestartRandomness();
    zmtp::ServerReader reader(curve ? fuzz::FuzzServerKeys() : nullptr, load, &sink);
    for (size_t read = 0; !stream.empty() && status.ok(); ++read) {
      const std::span<uint8_t> buffer = reader.Buffer();
      fuzz::Check(!buffer.empty(), "the reader offers no room");
      const size_t n = std::min({stream.size(), buffer.size(), std::max<size_t>(cut(read), 1)});
      std::memcpy(buffer.data(), stream.data(), n);
      stream.remove_prefix(n);
      status = reader.Received(n);
      fuzz::Check(load->bytes() <= kConnectionLimit, "the connection holds more than its limit");
    }
  }
  fuzz::Check(load->bytes() == 0 && server->buffered() == 0,
              "bytes still held after the messages and the reader are gone");
  return sink.outcome + "|" + std::string(status.message());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rill::fuzz::Initialize(size_t{1} << 20);
  rill::fuzz::UseDeterministicRandomness();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  if (size == 0) return 0;
  const uint8_t options = data[0];
  const bool curve = (options & kCurve) != 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::string stream;
  if (curve && (options & kValidHandshake)) {
    const fuzz::CurveSession& session = fuzz::HandshakenSession();
    stream = session.prefix;
    if (options & kSealed) {
      stream += fuzz::SealRecords(rest, session.client, kMaxSealedBytes);
    } else {
      stream.append(rest);
    }
  } else {
    if (options & kValidHandshake) {
      stream = zmtp::ServerGreeting(zmtp::Mechanism::kNull);
      const std::string ready = zmtp::CommandBody(
          "READY", zmtp::EncodeProperties({{"Socket-Type", "DEALER"}, {"Identity", ""}}));
      uint8_t header[zmtp::kLongHeaderBytes];
      const size_t length = zmtp::EncodeFrameHeader(zmtp::kCommand, ready.size(), header);
      stream.append(reinterpret_cast<const char*>(header), length);
      stream += ready;
    }
    stream.append(rest);
  }
  const size_t piece = size_t{1} << ((options >> 1) & 15);
  const std::string whole = Feed(stream, curve, [](size_t) { return size_t{1} << 30; });
  const std::string cut = Feed(stream, curve, [&](size_t read) {
    return (options & kUnevenReads) ? (read * 7919 + 1) % (2 * piece) + 1 : piece;
  });
  fuzz::Check(whole == cut, "the outcome depends on how the stream is cut into reads");
  return 0;
}
