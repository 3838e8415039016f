// The input of one server connection, taken as its bytes arrive: the ZMTP
// greeting and handshake (NULL or CURVE), then rill's messages, each frame
// counted and sized against what the message's header declares and against
// the connection's limits before any of it is kept. A message that breaks
// them is read to its end without being kept and refused (or, without a
// readable request id, dropped); what leaves no way to stay in step with
// the peer (a broken handshake, too many undeclared frames, a CURVE frame
// out of order) ends the connection.
#ifndef RILL_TRANSPORT_ZMTP_SERVER_READER_H_
#define RILL_TRANSPORT_ZMTP_SERVER_READER_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "transport/connection_limits.h"
#include "transport/proto/rpc.pb.h"
#include "transport/zmtp/curve_server.h"
#include "transport/zmtp/protocol.h"
#include "zmq.hpp"

namespace rill::zmtp {

// A message received whole: its header and one frame per tensor the header
// declares, each in memory aligned for any dtype, and the ticket that
// holds its bytes against the connection's limits.
struct ReceivedMessage {
  RpcHeader header;
  std::vector<zmq::message_t> tensor_frames;
  ConnectionLoad::Ticket ticket;
};

// Thread safety: none; the connection's socket thread owns it.
class ServerReader {
 public:
  // What the reader asks of its connection.
  class Sink {
   public:
    virtual ~Sink() = default;
    // Handshake bytes for the peer, in order (the greeting, READY,
    // WELCOME, ERROR).
    virtual void SendHandshake(std::string bytes) = 0;
    // A PING asks for a PONG with `context` (sealed under CURVE). A peer
    // that never reads may make many: a connection keeps at most one
    // queued. By default, a PONG in the clear through SendHandshake.
    virtual void Pong(std::string context);
    // The handshake is over; messages follow.
    virtual void HandshakeDone() = 0;
    virtual void Message(ReceivedMessage message) = 0;
    // A message that would pass a limit was read without being kept: its
    // caller is told why.
    virtual void Refused(const RpcHeader& header, absl::Status why) = 0;
  };

  // With `curve` the connection speaks CURVE, else NULL. Counts what it
  // keeps in `load`. Sends the greeting at once.
  ServerReader(std::shared_ptr<const CurveServerKeys> curve, std::shared_ptr<ConnectionLoad> load,
               Sink* sink);
  ~ServerReader();
  ServerReader(const ServerReader&) = delete;
  ServerReader& operator=(const ServerReader&) = delete;

  // Where the next bytes received should go: never empty. A large frame's
  // body is read straight into its own memory.
  std::span<uint8_t> Buffer();
  // The last Buffer() was a frame's own memory, not the staging buffer.
  bool direct() const { return direct_; }
  // `n` bytes were written at the start of the last Buffer(). Errors: a violation
  // of the protocol or a limit that allows no answer, naming the byte
  // offset in the stream; the connection must then close.
  absl::Status Received(size_t n);

  bool handshake_done() const { return phase_ == Phase::kMessages; }
  // Part of a message (or of the handshake) has arrived, not all of it.
  bool mid_message() const;
  // The CURVE state for sealing replies; null without CURVE.
  CurveServer* curve() { return curve_.get(); }
  const std::string& client_key() const;

  // Frames of more than this many bytes are read straight into their
  // memory; smaller ones go through the staging buffer.
  static constexpr size_t kDirectBytes = size_t{32} << 10;
  // A handshake command longer than this ends the connection.
  static constexpr size_t kMaxCommandBytes = size_t{64} << 10;
  // Frames past those a message's header declares that are read (and
  // dropped) before the connection ends.
  static constexpr int kMaxUndeclaredFrames = 64;
  // Of a header frame too large to keep, the bytes read for its method and
  // request id (the fields that come first), so that the refusal reaches
  // its caller.
  static constexpr size_t kHeaderPrefixBytes = 512;

 private:
  enum class Phase { kGreeting, kHandshake, kMessages };
  enum class Stage { kFrameHeader, kFrameBody };
  // What the frame being received is.
  enum class Role { kCommand, kHeader, kHeaderPrefix, kTensor, kSkipped };

  // Parses what is staged; stops when it needs more bytes.
  absl::Status Consume();
  absl::Status OnFrameHeader(uint8_t flags, uint64_t size);
  absl::Status OnFrameBody();
  absl::Status OnHandshakeCommand(std::string_view body);
  absl::Status OnHeader(uint8_t flags, std::string_view bytes);
  // A command sealed in a CURVE MESSAGE (a heartbeat).
  absl::Status OnSealedCommand(std::string_view bytes);
  // Checks what `bytes` declares against the limits, then parses it into
  // header_; false when the message is refused unparsed (refusal_ says
  // why) or is no header at all (discarded_).
  bool ParseHeader(std::string_view bytes);
  // A frame after the header (NULL): kept, or skipped when it breaks the
  // header's declaration or the message is refused already.
  absl::Status OnNullFrameHeader(uint8_t flags, uint64_t size);
  // After each frame of a message following its header.
  absl::Status AfterFrame(bool more);
  // The message is refused and read on unkept. Only the first reason
  // stays, so only its text is made: `why()` returns it.
  template <typename Why>
  void Refuse(Why why) {
    if (!skipping_) refusal_ = why();
    skipping_ = true;
  }
  // The method named in replies and logs: cut and escaped.
  std::string Method() const;
  // After a message's last frame (or its header, when it has none).
  void FinishMessage();
  absl::Status Violation(std::string_view what) const;
  // The frame's flags and data once opened (CURVE) or as they came.
  absl::StatusOr<uint8_t> OpenFrame(uint8_t* body, size_t size, uint8_t flags);
  size_t tensor_count() const { return static_cast<size_t>(declared_tensors_); }

  const std::shared_ptr<ConnectionLoad> load_;
  Sink* const sink_;
  std::unique_ptr<CurveServer> curve_;  // Null without CURVE.

  std::unique_ptr<uint8_t[]> staging_;
  size_t staged_begin_ = 0;
  size_t staged_end_ = 0;
  uint64_t offset_ = 0;  // Bytes of the stream parsed, for messages.
  bool direct_ = false;  // The last Buffer() was a frame's own memory.

  Phase phase_ = Phase::kGreeting;
  Stage stage_ = Stage::kFrameHeader;
  Role role_ = Role::kCommand;
  uint8_t frame_flags_ = 0;
  uint64_t frame_size_ = 0;
  uint64_t frame_start_ = 0;  // Its header's offset in the stream.
  // The frame's body: in an aligned block of its own (a tensor's is handed
  // on with it), skipped ones nowhere.
  uint8_t* block_ = nullptr;  // Owned while receiving; freed or handed on.
  uint8_t* body_ = nullptr;   // Where the body goes (in block_).
  uint64_t body_keep_ = 0;    // Of the body, the bytes kept (the rest are read and dropped).
  uint64_t body_filled_ = 0;  // Of the body, the bytes received.

  // The message being received. Each gets a fresh header: a cleared one
  // would keep what the last one's tensors took.
  RpcHeader header_;
  bool header_parsed_ = false;  // Else only its method and request id are known.
  int64_t declared_tensors_ = 0;
  bool in_message_ = false;
  size_t next_tensor_ = 0;  // Frames after the header so far.
  bool skipping_ = false;   // Refused or discarded: its frames are read and dropped.
  bool discarded_ = false;  // No readable request id: dropped without a reply.
  absl::Status refusal_;
  ConnectionLoad::Ticket ticket_;
  std::vector<zmq::message_t> frames_;
};

}  // namespace rill::zmtp

#endif  // RILL_TRANSPORT_ZMTP_SERVER_READER_H_
