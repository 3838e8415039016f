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

absl::Status ServerConnection::Read(size_t budget, bool* more) {
  *more = false;
  size_t total = 0;
  for (;;) {
    const std::span<uint8_t> buffer = reader_.Buffer();
    const ssize_t n = recv(fd_, buffer.data(), buffer.size(), MSG_DONTWAIT);
    if (n == 0) return absl::CancelledError("the peer closed the connection");
    if (n < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return absl::OkStatus();
      if (errno == EINTR) continue;
      return absl::CancelledError(absl::StrCat("the connection failed: ", std::strerror(errno)));
    }
    last_input_ = absl::Now();
    RETURN_IF_ERROR(reader_.Received(static_cast<size_t>(n)));
    total += static_cast<size_t>(n);
    if (total >= budget) {
      *more = true;
      return absl::OkStatus();
    }
  }
}

void ServerConnection::SendHandshake(std::string bytes) {
  std::vector<Chunk> chunks(1);
  chunks[0].owned = std::move(bytes);
  Queue(std::move(chunks), ConnectionLoad::Ticket());
}

void ServerConnection::Message(zmtp::ReceivedMessage message) {
  ++requests_;
  events_->message(id_, std::move(message));
}

void ServerConnection::Refused(const RpcHeader& header, absl::Status why) {
  ++requests_;
  events_->refused(id_, header, std::move(why));
}

void ServerConnection::Send(std::vector<zmq::message_t> frames, ConnectionLoad::Ticket ticket) {
  absl::MutexLock lock(&out_mu_);
  if (closed_) return;
  const bool was_empty = output_.empty();
  const size_t first = output_.size();
  Encode(frames);
  if (ticket && output_.size() > first) output_.back().ticket = std::move(ticket);
  if (was_empty && WriteQueued() && !output_.empty() && !want_output_) {
    want_output_ = true;
    events_->want_output(id_, fd_, true);
  }
}

void ServerConnection::Queue(std::vector<Chunk> chunks, ConnectionLoad::Ticket ticket) {
  absl::MutexLock lock(&out_mu_);
  if (closed_) return;
  const bool was_empty = output_.empty();
  for (Chunk& chunk : chunks) output_.push_back(std::move(chunk));
  if (ticket && !output_.empty()) output_.back().ticket = std::move(ticket);
  if (was_empty && WriteQueued() && !output_.empty() && !want_output_) {
    want_output_ = true;
    events_->want_output(id_, fd_, true);
  }
}

void ServerConnection::Encode(std::vector<zmq::message_t>& frames) {
  zmtp::CurveServer* curve = reader_.curve();
  for (size_t i = 0; i < frames.size(); ++i) {
    zmq::message_t& frame = frames[i];
    const uint8_t flags = i + 1 < frames.size() ? zmtp::kMore : 0;
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
      output_.push_back(std::move(chunk));
      continue;
    }
    const size_t header_bytes = zmtp::EncodeFrameHeader(flags, frame.size(), header);
    if (frame.size() < kCopyBelow && !output_.empty() && output_.back().borrowed.size() == 0 &&
        !output_.back().ticket) {
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
    size_t written = static_cast<size_t>(n);
    while (written > 0) {
      Chunk& front = output_.front();
      const size_t left = front.size() - front.offset;
      if (written < left) {
        front.offset += written;
        break;
      }
      written -= left;
      output_.pop_front();  // Gives its ticket back.
    }
  }
  return true;
}

void ServerConnection::Flush() {
  absl::MutexLock lock(&out_mu_);
  if (closed_) return;
  WriteQueued();
  if (output_.empty() && want_output_) {
    want_output_ = false;
    events_->want_output(id_, fd_, false);
  }
}

bool ServerConnection::has_output() {
  absl::MutexLock lock(&out_mu_);
  return !output_.empty();
}

void ServerConnection::Close() {
  std::deque<Chunk> dropped;
  {
    absl::MutexLock lock(&out_mu_);
    if (closed_) return;
    WriteQueued();
    closed_ = true;
    dropped.swap(output_);
    ::close(fd_);
  }
  // The tickets go back outside the lock.
}

}  // namespace rill
