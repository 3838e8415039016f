#include "transport/zmtp/server_reader.h"

#include <algorithm>
#include <cstring>
#include <new>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/io/coded_stream.h"
#include "graph/allocator.h"
#include "graph/status_macros.h"
#include "transport/rate_limited_log.h"
#include "transport/zmtp/header_census.h"

namespace rill::zmtp {
namespace {

constexpr size_t kStagingBytes = size_t{64} << 10;

uint8_t* AllocateBlock(size_t bytes) {
  return static_cast<uint8_t*>(
      ::operator new(std::max<size_t>(bytes, 1), std::align_val_t(kTensorAlignment), std::nothrow));
}

void FreeBlock(uint8_t* block) {
  if (block != nullptr) ::operator delete(block, std::align_val_t(kTensorAlignment));
}

// The method and request id from the first bytes of a serialized header
// (fields 1 and 2 come first); false when they do not parse that far.
bool ReadHeaderPrefix(std::string_view prefix, RpcHeader* header) {
  google::protobuf::io::CodedInputStream input(reinterpret_cast<const uint8_t*>(prefix.data()),
                                               static_cast<int>(prefix.size()));
  header->Clear();
  bool has_id = false;
  for (;;) {
    const uint32_t tag = input.ReadTag();
    if (tag == 0) return has_id;
    const int field = static_cast<int>(tag >> 3);
    const int wire_type = static_cast<int>(tag & 7);
    if (field == 1 && wire_type == 2) {
      std::string method;
      uint32_t length = 0;
      if (!input.ReadVarint32(&length) || length > 256 || !input.ReadString(&method, length)) {
        return has_id;
      }
      header->set_method(method);
    } else if (field == 2 && wire_type == 0) {
      uint64_t id = 0;
      if (!input.ReadVarint64(&id)) return has_id;
      header->set_request_id(id);
      has_id = true;
    } else {
      return has_id;
    }
  }
}

std::string CommandFrame(std::string_view body) {
  uint8_t header[kLongHeaderBytes];
  const size_t length = EncodeFrameHeader(kCommand, body.size(), header);
  std::string frame(reinterpret_cast<const char*>(header), length);
  frame.append(body);
  return frame;
}

}  // namespace

void ServerReader::Sink::Pong(std::string context) {
  SendHandshake(CommandFrame(CommandBody("PONG", context)));
}

ServerReader::ServerReader(std::shared_ptr<const CurveServerKeys> curve,
                           std::shared_ptr<ConnectionLoad> load, Sink* sink)
    : load_(std::move(load)), sink_(sink), staging_(new uint8_t[kStagingBytes]) {
  if (curve != nullptr) curve_ = std::make_unique<CurveServer>(std::move(curve));
  sink_->SendHandshake(ServerGreeting(curve_ != nullptr ? Mechanism::kCurve : Mechanism::kNull));
}

ServerReader::~ServerReader() { FreeBlock(block_); }

const std::string& ServerReader::client_key() const {
  static const std::string* const kNone = new std::string();
  return curve_ != nullptr ? curve_->client_key() : *kNone;
}

bool ServerReader::mid_message() const {
  return phase_ != Phase::kMessages || in_message_ || stage_ == Stage::kFrameBody ||
         staged_end_ > staged_begin_;
}

std::span<uint8_t> ServerReader::Buffer() {
  direct_ = stage_ == Stage::kFrameBody && body_ != nullptr && body_keep_ == frame_size_ &&
            staged_begin_ == staged_end_ && frame_size_ - body_filled_ >= kDirectBytes;
  if (direct_) return {body_ + body_filled_, static_cast<size_t>(frame_size_ - body_filled_)};
  if (staged_begin_ > 0) {
    std::memmove(staging_.get(), staging_.get() + staged_begin_, staged_end_ - staged_begin_);
    staged_end_ -= staged_begin_;
    staged_begin_ = 0;
  }
  return {staging_.get() + staged_end_, kStagingBytes - staged_end_};
}

absl::Status ServerReader::Received(size_t n) {
  if (n == 0) return absl::OkStatus();
  if (direct_) {
    // Straight into the frame's memory.
    body_filled_ += n;
    offset_ += n;
    if (body_filled_ == frame_size_) {
      stage_ = Stage::kFrameHeader;
      RETURN_IF_ERROR(OnFrameBody());
    }
    return absl::OkStatus();
  }
  staged_end_ += n;
  return Consume();
}

absl::Status ServerReader::Consume() {
  for (;;) {
    const uint8_t* staged = staging_.get() + staged_begin_;
    const size_t available = staged_end_ - staged_begin_;
    if (phase_ == Phase::kGreeting) {
      if (available < kGreetingBytes) return absl::OkStatus();
      const Mechanism mechanism = curve_ != nullptr ? Mechanism::kCurve : Mechanism::kNull;
      if (absl::Status bad = CheckGreeting(
              std::string_view(reinterpret_cast<const char*>(staged), kGreetingBytes), mechanism);
          !bad.ok()) {
        return Violation(std::string(bad.message()));
      }
      staged_begin_ += kGreetingBytes;
      offset_ += kGreetingBytes;
      phase_ = Phase::kHandshake;
      // NULL: each side sends READY as soon as the greetings agree.
      if (curve_ == nullptr) {
        sink_->SendHandshake(CommandFrame(CommandBody("READY", ServerReadyProperties())));
      }
      continue;
    }
    if (stage_ == Stage::kFrameHeader) {
      if (available < kShortHeaderBytes) return absl::OkStatus();
      const uint8_t flags = staged[0];
      if (flags & ~(kMore | kLong | kCommand)) {
        frame_start_ = offset_;
        return Violation(absl::StrFormat("a frame whose flags 0x%02x set reserved bits", flags));
      }
      uint64_t size = staged[1];
      size_t header_bytes = kShortHeaderBytes;
      if (flags & kLong) {
        if (available < kLongHeaderBytes) return absl::OkStatus();
        size = ReadBigEndian64(staged + 1);
        header_bytes = kLongHeaderBytes;
      }
      frame_start_ = offset_;
      staged_begin_ += header_bytes;
      offset_ += header_bytes;
      RETURN_IF_ERROR(OnFrameHeader(flags, size));
      continue;
    }
    const size_t take =
        static_cast<size_t>(std::min<uint64_t>(available, frame_size_ - body_filled_));
    if (body_ != nullptr && body_filled_ < body_keep_) {
      std::memcpy(body_ + body_filled_, staged,
                  static_cast<size_t>(std::min<uint64_t>(take, body_keep_ - body_filled_)));
    }
    body_filled_ += take;
    staged_begin_ += take;
    offset_ += take;
    if (body_filled_ < frame_size_) return absl::OkStatus();
    stage_ = Stage::kFrameHeader;
    RETURN_IF_ERROR(OnFrameBody());
  }
}

absl::Status ServerReader::OnFrameHeader(uint8_t flags, uint64_t size) {
  frame_flags_ = flags;
  frame_size_ = size;
  body_filled_ = 0;
  body_keep_ = 0;
  body_ = nullptr;
  stage_ = Stage::kFrameBody;
  const bool command = (flags & kCommand) != 0;
  if (phase_ == Phase::kHandshake || (!in_message_ && command && curve_ == nullptr)) {
    if (!command) return Violation("a message frame before the handshake ended");
    if (flags & kMore) return Violation("a command frame marked as followed by more");
    if (size > kMaxCommandBytes) {
      return Violation(
          absl::StrFormat("a command frame of %d bytes (at most %d)", size, kMaxCommandBytes));
    }
    role_ = Role::kCommand;
  } else if (!in_message_) {
    // A message's first frame: its header.
    in_message_ = true;
    role_ = Role::kHeader;
    if (curve_ != nullptr && size < CurveServer::kMessageOverhead) {
      return Violation(
          absl::StrFormat("a CURVE frame of %d bytes, too short to be a MESSAGE", size));
    }
    absl::StatusOr<ConnectionLoad::Ticket> ticket =
        size > (uint64_t{1} << 62) ? absl::ResourceExhaustedError("a frame of 2^62 bytes or more")
                                   : load_->Reserve(static_cast<int64_t>(size));
    if (!ticket.ok()) {
      // Too large to keep: enough is read for the refusal to name its
      // caller (not under CURVE, where the frame is sealed whole).
      if (curve_ != nullptr) {
        return Violation(absl::StrFormat("a message whose header frame has %d bytes: %s", size,
                                         ticket.status().message()));
      }
      role_ = Role::kHeaderPrefix;
      Refuse([&] {
        return absl::Status(ticket.status().code(),
                            absl::StrFormat("a request whose header has %d bytes: %s", size,
                                            ticket.status().message()));
      });
    } else {
      ticket_ = *std::move(ticket);
    }
  } else if (curve_ != nullptr) {
    // Sealed frames carry their flags inside: only the declared count and
    // sizes say where the message ends, and a frame that breaks them ends
    // the connection.
    const uint64_t declared = header_.tensors(static_cast<int>(next_tensor_)).bytes();
    if (size < CurveServer::kMessageOverhead || size - CurveServer::kMessageOverhead != declared) {
      return Violation(absl::StrFormat(
          "CURVE frame %d of a '%s' message has %d bytes; its header declares %d bytes of data",
          next_tensor_ + 1, Method(), size, declared));
    }
    role_ = skipping_ ? Role::kSkipped : Role::kTensor;
  } else {
    RETURN_IF_ERROR(OnNullFrameHeader(flags, size));
  }
  const size_t keep = role_ == Role::kHeaderPrefix
                          ? static_cast<size_t>(std::min<uint64_t>(size, kHeaderPrefixBytes))
                          : static_cast<size_t>(size);
  if (role_ != Role::kSkipped && keep > 0) {
    // A CURVE tensor's data is opened in place: the block starts early
    // enough that it lands on an aligned address.
    const size_t lead = role_ == Role::kTensor && curve_ != nullptr
                            ? kTensorAlignment - CurveServer::kMessageOverhead
                            : 0;
    block_ = AllocateBlock(lead + keep);
    if (block_ == nullptr) {
      return Violation(absl::StrFormat("cannot allocate %d bytes for a frame", keep));
    }
    body_ = block_ + lead;
    body_keep_ = keep;
  }
  if (size == 0) {
    stage_ = Stage::kFrameHeader;
    return OnFrameBody();
  }
  return absl::OkStatus();
}

absl::Status ServerReader::OnNullFrameHeader(uint8_t flags, uint64_t size) {
  if (flags & kCommand) return Violation("a command frame inside a message");
  role_ = Role::kSkipped;
  if (next_tensor_ >= tensor_count()) {
    if (next_tensor_ - tensor_count() >= static_cast<size_t>(kMaxUndeclaredFrames)) {
      return Violation(absl::StrFormat(
          "more than %d frames past the %d tensors the header of a '%s' message declares",
          kMaxUndeclaredFrames, tensor_count(), Method()));
    }
    Refuse([&] {
      return absl::InvalidArgumentError(
          absl::StrFormat("the header of a '%s' request declares %d tensors and more frames follow",
                          Method(), tensor_count()));
    });
    return absl::OkStatus();
  }
  // A header refused unparsed says how many frames follow, not their sizes.
  if (!header_parsed_) return absl::OkStatus();
  const uint64_t declared = header_.tensors(static_cast<int>(next_tensor_)).bytes();
  if (size != declared) {
    Refuse([&] {
      return absl::InvalidArgumentError(absl::StrFormat(
          "frame %d (tensor %d) of a '%s' request has %d bytes; its header declares %d",
          next_tensor_ + 1, next_tensor_, Method(), size, declared));
    });
  }
  if (!skipping_) role_ = Role::kTensor;
  return absl::OkStatus();
}

std::string ServerReader::Method() const { return PeerText(header_.method()); }

absl::StatusOr<uint8_t> ServerReader::OpenFrame(uint8_t* body, size_t size, uint8_t flags) {
  if (curve_ == nullptr) return flags;
  absl::StatusOr<uint8_t> inner = curve_->Open(body, size);
  if (!inner.ok()) return Violation(std::string(inner.status().message()));
  return *inner;
}

absl::Status ServerReader::OnFrameBody() {
  uint8_t* const block = block_;
  block_ = nullptr;
  struct Free {
    uint8_t* block;
    ~Free() { FreeBlock(block); }
  } free_block{block};
  const bool more = (frame_flags_ & kMore) != 0;
  switch (role_) {
    case Role::kCommand:
      return OnHandshakeCommand(
          std::string_view(reinterpret_cast<const char*>(body_), frame_size_));
    case Role::kHeader: {
      ASSIGN_OR_RETURN(const uint8_t flags, OpenFrame(body_, frame_size_, frame_flags_));
      const size_t lead = curve_ != nullptr ? CurveServer::kMessageOverhead : 0;
      return OnHeader(
          flags, std::string_view(reinterpret_cast<const char*>(body_) + lead, frame_size_ - lead));
    }
    case Role::kHeaderPrefix: {
      // The method and request id come first in a serialized header; a
      // prefix that does not parse leaves the message without a reply.
      const size_t kept = static_cast<size_t>(std::min<uint64_t>(frame_size_, kHeaderPrefixBytes));
      discarded_ =
          !ReadHeaderPrefix(std::string_view(reinterpret_cast<const char*>(body_), kept), &header_);
      return AfterFrame(more);
    }
    case Role::kTensor: {
      ASSIGN_OR_RETURN(const uint8_t flags, OpenFrame(body_, frame_size_, frame_flags_));
      const size_t bytes = header_.tensors(static_cast<int>(next_tensor_)).bytes();
      if (bytes == 0) {
        frames_.emplace_back();
      } else {
        uint8_t* data = curve_ != nullptr ? body_ + CurveServer::kMessageOverhead : body_;
        frames_.emplace_back(
            data, bytes, [](void*, void* hint) { FreeBlock(static_cast<uint8_t*>(hint)); }, block);
        free_block.block = nullptr;
      }
      ++next_tensor_;
      return AfterFrame(curve_ != nullptr ? (flags & kMore) != 0 : more);
    }
    case Role::kSkipped:
      ++next_tensor_;
      return AfterFrame(more);
  }
  return absl::OkStatus();
}

absl::Status ServerReader::AfterFrame(bool more) {
  if (curve_ != nullptr) {
    const bool last = next_tensor_ == tensor_count();
    if (!skipping_ && more == last) {
      return Violation(absl::StrFormat("CURVE frame %d of a '%s' message has the wrong MORE flag",
                                       next_tensor_, Method()));
    }
    if (last) FinishMessage();
    return absl::OkStatus();
  }
  if (more) return absl::OkStatus();
  if (next_tensor_ < tensor_count()) {
    Refuse([&] {
      return absl::InvalidArgumentError(absl::StrFormat(
          "the header of a '%s' request declares %d tensors but %d frames follow it", Method(),
          tensor_count(), next_tensor_));
    });
  }
  FinishMessage();
  return absl::OkStatus();
}

absl::Status ServerReader::OnHandshakeCommand(std::string_view body) {
  absl::StatusOr<Command> command = ParseCommand(body);
  if (!command.ok()) return Violation(std::string(command.status().message()));
  if (command->name == "ERROR") {
    // Its reason: a length byte, then that many bytes (RFC 23).
    std::string_view reason;
    if (!command->data.empty()) {
      reason = command->data.substr(1, static_cast<uint8_t>(command->data[0]));
    }
    return Violation(absl::StrFormat("the peer sent ERROR '%s'", PeerText(reason)));
  }
  if (phase_ == Phase::kMessages) {
    // ZMTP 3.1's heartbeat: PING (a TTL, then a context) is answered PONG.
    if (command->name == "PING" && command->data.size() >= 2 && command->data.size() <= 18) {
      sink_->Pong(std::string(command->data.substr(2)));
      return absl::OkStatus();
    }
    if (command->name == "PONG") return absl::OkStatus();
    return Violation(absl::StrFormat("unexpected command '%s'", PeerText(command->name)));
  }
  if (curve_ == nullptr) {
    if (command->name != "READY") {
      return Violation(
          absl::StrFormat("expected READY, got command '%s'", PeerText(command->name)));
    }
    absl::StatusOr<std::map<std::string, std::string>> properties = ParseProperties(command->data);
    if (!properties.ok()) return Violation(std::string(properties.status().message()));
    if (absl::Status type = CheckPeerSocketType(*properties); !type.ok()) {
      return Violation(std::string(type.message()));
    }
    phase_ = Phase::kMessages;
    sink_->HandshakeDone();
    return absl::OkStatus();
  }
  if (command->name == "HELLO") {
    absl::StatusOr<std::string> welcome = curve_->Hello(body);
    if (!welcome.ok()) return Violation(std::string(welcome.status().message()));
    sink_->SendHandshake(CommandFrame(*welcome));
    return absl::OkStatus();
  }
  if (command->name == "INITIATE") {
    std::map<std::string, std::string> properties;
    absl::StatusOr<std::string> ready = curve_->Initiate(body, &properties);
    if (absl::IsPermissionDenied(ready.status())) {
      // ZAP's "400": the client learns it is not authorized.
      sink_->SendHandshake(CommandFrame(ErrorBody("400")));
      return Violation(std::string(ready.status().message()));
    }
    if (!ready.ok()) return Violation(std::string(ready.status().message()));
    if (absl::Status type = CheckPeerSocketType(properties); !type.ok()) {
      return Violation(std::string(type.message()));
    }
    sink_->SendHandshake(CommandFrame(*ready));
    phase_ = Phase::kMessages;
    sink_->HandshakeDone();
    return absl::OkStatus();
  }
  return Violation(absl::StrFormat("unexpected command '%s' in the CURVE handshake",
                                   PeerText(command->name)));
}

absl::Status ServerReader::OnHeader(uint8_t flags, std::string_view bytes) {
  const bool more = (flags & kMore) != 0;
  if (flags & kCommand) {
    in_message_ = false;
    ticket_ = ConnectionLoad::Ticket();
    return OnSealedCommand(bytes);
  }
  if (!ParseHeader(bytes) && discarded_) {
    if (curve_ != nullptr) {
      return Violation(
          absl::StrFormat("a message's first frame (%d bytes) is not a request", bytes.size()));
    }
    // Without a request id there is no one to answer: dropped.
    return AfterFrame(more);
  }
  const size_t count = tensor_count();
  if (curve_ != nullptr && (!header_parsed_ || more != (count > 0))) {
    // Sealed frames are found by their declared sizes.
    return Violation(
        header_parsed_
            ? absl::StrFormat("the header of a '%s' message declares %d tensors but its frame says %s",
                              Method(), count, count > 0 ? "it is the last" : "more frames follow")
            : absl::StrFormat("a '%s' message refused unread: %s", Method(), refusal_.message()));
  }
  next_tensor_ = 0;
  if (curve_ != nullptr) {
    if (count == 0) FinishMessage();
    return absl::OkStatus();
  }
  return AfterFrame(more);
}

absl::Status ServerReader::OnSealedCommand(std::string_view bytes) {
  // Only the heartbeat's; a PING's TTL and context, as in the clear.
  absl::StatusOr<Command> command = ParseCommand(bytes);
  if (command.ok() && command->name == "PING" && command->data.size() >= 2 &&
      command->data.size() <= 18) {
    sink_->Pong(std::string(command->data.substr(2)));
    return absl::OkStatus();
  }
  if (command.ok() && command->name == "PONG") return absl::OkStatus();
  return Violation("an unexpected command inside a CURVE MESSAGE");
}

bool ServerReader::ParseHeader(std::string_view bytes) {
  const HeaderCensus census = CountHeader(bytes);
  if (!census.well_formed) {
    discarded_ = true;
    skipping_ = true;
    return false;
  }
  const ConnectionLimitOptions& limits = load_->limits();
  declared_tensors_ = census.tensors;
  absl::Status refusal;
  if (census.tensors > limits.max_tensors_per_message) {
    refusal = absl::ResourceExhaustedError(absl::StrFormat(
        "a '%s' request declares %d tensors, more than the %d one message may "
        "(max_tensors_per_message)",
        PeerText(census.method), census.tensors, limits.max_tensors_per_message));
  } else if (census.max_dims > limits.max_tensor_dims) {
    refusal = absl::InvalidArgumentError(absl::StrFormat(
        "a '%s' request declares a tensor of %d dimensions, more than the %d a shape may have "
        "(max_tensor_dims)",
        PeerText(census.method), census.max_dims, limits.max_tensor_dims));
  } else if (ticket_) {
    refusal = ticket_.Grow(census.ParsedBytes());
  }
  if (!refusal.ok()) {
    // Answered by its request id; what it declares is never parsed.
    header_.set_method(std::string(census.method.substr(0, kHeaderPrefixBytes)));
    header_.set_request_id(census.request_id);
    discarded_ = !census.has_request_id;
    Refuse([&] { return std::move(refusal); });
    return false;
  }
  if (bytes.size() > static_cast<size_t>(INT32_MAX) ||
      !header_.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())) ||
      header_.is_reply()) {
    header_ = RpcHeader();
    declared_tensors_ = 0;
    discarded_ = true;
    skipping_ = true;
    return false;
  }
  header_parsed_ = true;
  declared_tensors_ = header_.tensors_size();
  // Saturating: 2^64 - 1 bytes declared a few times must not wrap to a
  // small total.
  uint64_t total = 0;
  for (int i = 0; i < header_.tensors_size(); ++i) {
    const uint64_t bytes = header_.tensors(i).bytes();
    if (bytes > MaxTensorBytes()) {
      Refuse([&] {
        return absl::ResourceExhaustedError(absl::StrFormat(
            "tensor %d of a '%s' request has %d bytes, over this process's limit of %d per tensor "
            "(max_tensor_bytes)",
            i, Method(), bytes, MaxTensorBytes()));
      });
    }
    total = bytes > UINT64_MAX - total ? UINT64_MAX : total + bytes;
  }
  if (!skipping_ && total > 0) {
    absl::Status grown = total > (uint64_t{1} << 62)
                             ? absl::ResourceExhaustedError("tensors of 2^62 bytes or more")
                             : ticket_.Grow(static_cast<int64_t>(total));
    if (!grown.ok()) Refuse([&] { return std::move(grown); });
  }
  return true;
}

void ServerReader::FinishMessage() {
  if (discarded_) {
    ticket_ = ConnectionLoad::Ticket();
  } else if (skipping_) {
    ticket_ = ConnectionLoad::Ticket();
    sink_->Refused(header_, std::move(refusal_));
  } else {
    sink_->Message({std::move(header_), std::move(frames_), std::move(ticket_)});
  }
  header_ = RpcHeader();
  header_parsed_ = false;
  declared_tensors_ = 0;
  frames_ = std::vector<zmq::message_t>();
  refusal_ = absl::OkStatus();
  skipping_ = false;
  discarded_ = false;
  in_message_ = false;
  next_tensor_ = 0;
}

absl::Status ServerReader::Violation(std::string_view what) const {
  return absl::InvalidArgumentError(absl::StrFormat("byte %d: %s", frame_start_, what));
}

}  // namespace rill::zmtp
