#include "transport/server_connection.h"

#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/zmtp/protocol.h"

namespace rill {
namespace {

// Frames up to this size are copied beside their header: one write
// instead of two.
constexpr size_t kCopyBelow = 4096;
// iovecs per writev.
constexpr int kMaxIovecs = 64;
// A read into the staging buffer takes at most this much.
constexpr size_t kStagedReadBytes = size_t{16} << 10;

}  // namespace

ServerConnection::ServerConnection(int fd, uint64_t id, std::string name, bool local,
                                   pid_t peer_pid, std::shared_ptr<ConnectionLoad> load,
                                   std::shared_ptr<const zmtp::CurveServerKeys> curve,
                                   const ConnectionEvents* events)
    : id_(id),
      name_(std::move(name)),
      local_(local),
      load_(load),
      events_(events),
      opened_(absl::Now()),
      fd_(fd),
      shm_peer_(peer_pid > 0 ? std::make_unique<ShmPeer>(peer_pid) : nullptr),
      reader_(std::move(curve), std::move(load), this),
      last_input_(opened_) {}

ServerConnection::~ServerConnection() { Close(); }

absl::Status ServerConnection::Read(size_t budget, int64_t messages, bool* more) {
  *more = false;
  size_t total = 0;
  const int64_t first = requests_;
  for (;;) {
    const std::span<uint8_t> buffer = reader_.Buffer();
    // Small reads into the staging buffer (a frame's own memory takes what
    // comes): one read holds at most a few thousand tiny messages.
    const size_t want =
        reader_.direct() ? buffer.size() : std::min(buffer.size(), kStagedReadBytes);
    const ssize_t n = recv(fd_, buffer.data(), want, MSG_DONTWAIT);
    if (n == 0) return absl::CancelledError("the peer closed the connection");
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return absl::OkStatus();
      if (errno == EINTR) continue;
      return absl::CancelledError(absl::StrCat("the connection failed: ", std::strerror(errno)));
    }
    last_input_ = absl::Now();
    RETURN_IF_ERROR(reader_.Received(static_cast<size_t>(n)));
    total += static_cast<size_t>(n);
    if (total >= budget || requests_ - first >= messages) {
      *more = true;
      return absl::OkStatus();
    }
  }
}

void ServerConnection::SendHandshake(std::string bytes) {
  absl::MutexLock lock(&out_mu_);
  if (closed_) return;
  const bool was_empty = output_.empty();
  queued_bytes_ += static_cast<int64_t>(bytes.size());
  output_.emplace_back().owned = std::move(bytes);
  Queued(was_empty);
}

void ServerConnection::Pong(std::string context) {
  absl::MutexLock lock(&out_mu_);
  // A peer that pings without reading gets one PONG, not one per PING.
  if (closed_ || pong_queued_) return;
  const bool was_empty = output_.empty();
  std::vector<zmq::message_t> frames;
  frames.emplace_back(zmtp::CommandBody("PONG", context));
  const size_t first = output_.size();
  Encode(frames, zmtp::kCommand);
  for (size_t i = first; i < output_.size(); ++i) output_[i].pong = true;
  pong_queued_ = output_.size() > first;
  Queued(was_empty);
}

void ServerConnection::HandshakeDone() { events_->handshake_done(id_); }

void ServerConnection::Message(zmtp::ReceivedMessage message) {
  ++requests_;
  events_->message(id_, std::move(message));
}

void ServerConnection::Refused(const RpcHeader& header, absl::Status why) {
  ++requests_;
  events_->refused(id_, header, std::move(why), load_->TakeRefusal());
}

void ServerConnection::Send(std::vector<zmq::message_t> frames, ConnectionLoad::Ticket ticket) {
  absl::MutexLock lock(&out_mu_);
  if (closed_) return;
  const bool was_empty = output_.empty();
  Encode(frames);
  // On the chunk that ends the reply, even one its frames were merged into
  // (never one that holds another reply's ticket or a PONG).
  if (ticket && !output_.empty() && !output_.back().ticket && !output_.back().pong) {
    output_.back().ticket = std::move(ticket);
  }
  Queued(was_empty);
}

void ServerConnection::Queued(bool was_empty) {
  if (was_empty) output_moved_ = absl::Now();
  peak_output_bytes_ = std::max(peak_output_bytes_, queued_bytes_);
  // Only the first writer writes; later ones queue behind it.
  if (was_empty) WriteQueued();
  UpdateWatch();
}

void ServerConnection::UpdateWatch() {
  const bool input = queued_bytes_ <= load_->limits().max_output_bytes;
  const bool output = !output_.empty();
  if (input == watch_input_ && output == watch_output_) return;
  watch_input_ = input;
  watch_output_ = output;
  events_->watch(id_, fd_, input, output);
}

void ServerConnection::Encode(std::vector<zmq::message_t>& frames, uint8_t last_flags) {
  zmtp::CurveServer* curve = reader_.curve();
  for (size_t i = 0; i < frames.size(); ++i) {
    zmq::message_t& frame = frames[i];
    const uint8_t flags = i + 1 < frames.size() ? zmtp::kMore : last_flags;
    uint8_t header[zmtp::kLongHeaderBytes];
    if (curve != nullptr) {
      // One MESSAGE frame per frame; its flags travel inside the box.
      const size_t box = zmtp::CurveServer::kMessageOverhead + frame.size();
      const size_t header_bytes = zmtp::EncodeFrameHeader(0, box, header);
      Chunk chunk;
      chunk.owned.resize(header_bytes + box);
      auto* out = reinterpret_cast<uint8_t*>(chunk.owned.data());
      std::memcpy(out, header, header_bytes);
      if (frame.size() > 0) {
        std::memcpy(out + header_bytes + zmtp::CurveServer::kMessageOverhead, frame.data(),
                    frame.size());
      }
      curve->Seal(flags, out + header_bytes, frame.size());
      queued_bytes_ += static_cast<int64_t>(chunk.owned.size());
      output_.push_back(std::move(chunk));
      continue;
    }
    const size_t header_bytes = zmtp::EncodeFrameHeader(flags, frame.size(), header);
    queued_bytes_ += static_cast<int64_t>(header_bytes + frame.size());
    if (frame.size() < kCopyBelow && !output_.empty() && output_.back().borrowed.size() == 0 &&
        !output_.back().ticket && !output_.back().pong) {
      // Beside the chunk before it, which is ours and not yet a reply's end.
      output_.back().owned.append(reinterpret_cast<const char*>(header), header_bytes);
      output_.back().owned.append(frame.data<char>(), frame.size());
      continue;
    }
    Chunk head;
    head.owned.assign(reinterpret_cast<const char*>(header), header_bytes);
    if (frame.size() < kCopyBelow) {
      head.owned.append(frame.data<char>(), frame.size());
      output_.push_back(std::move(head));
      continue;
    }
    output_.push_back(std::move(head));
    Chunk body;
    body.borrowed = std::move(frame);
    output_.push_back(std::move(body));
  }
}

bool ServerConnection::WriteQueued() {
  while (!output_.empty()) {
    iovec iov[kMaxIovecs];
    int count = 0;
    for (auto it = output_.begin(); it != output_.end() && count < kMaxIovecs; ++it, ++count) {
      iov[count].iov_base = const_cast<char*>(it->data()) + it->offset;
      iov[count].iov_len = it->size() - it->offset;
    }
    msghdr message{};
    message.msg_iov = iov;
    message.msg_iovlen = static_cast<size_t>(count);
    const ssize_t n = sendmsg(fd_, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK;
    }
    if (n > 0) output_moved_ = absl::Now();
    queued_bytes_ -= n;
    size_t written = static_cast<size_t>(n);
    while (written > 0) {
      Chunk& front = output_.front();
      const size_t left = front.size() - front.offset;
      if (written < left) {
        front.offset += written;
        break;
      }
      written -= left;
      if (front.pong) pong_queued_ = false;
      output_.pop_front();  // Gives its ticket back.
    }
  }
  return true;
}

void ServerConnection::Flush() {
  absl::MutexLock lock(&out_mu_);
  if (closed_) return;
  WriteQueued();
  UpdateWatch();
}

bool ServerConnection::has_output() {
  absl::MutexLock lock(&out_mu_);
  return !output_.empty();
}

absl::Time ServerConnection::output_stalled_since() {
  absl::MutexLock lock(&out_mu_);
  return output_.empty() ? absl::InfiniteFuture() : output_moved_;
}

bool ServerConnection::reading_paused() {
  absl::MutexLock lock(&out_mu_);
  return !watch_input_;
}

int64_t ServerConnection::peak_output_bytes() {
  absl::MutexLock lock(&out_mu_);
  return peak_output_bytes_;
}

void ServerConnection::ResetOnClose() {
  const linger reset{.l_onoff = 1, .l_linger = 0};
  setsockopt(fd_, SOL_SOCKET, SO_LINGER, &reset, sizeof(reset));
}

void ServerConnection::Close() {
  std::deque<Chunk> dropped;
  {
    absl::MutexLock lock(&out_mu_);
    if (closed_) return;
    WriteQueued();
    closed_ = true;
    dropped.swap(output_);
    queued_bytes_ = 0;
    ::close(fd_);
  }
  // The tickets go back outside the lock.
}

}  // namespace rill
