#include "transport/peer_limits.h"

#include <sys/socket.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_format.h"

namespace rill {

PeerLimits::Ticket& PeerLimits::Ticket::operator=(Ticket&& other) noexcept {
  if (this != &other) {
    if (limits_ != nullptr) limits_->Release(peer_, bytes_, refusal_);
    limits_ = std::move(other.limits_);
    peer_ = std::move(other.peer_);
    bytes_ = other.bytes_;
    refusal_ = other.refusal_;
    other.limits_ = nullptr;
  }
  return *this;
}

PeerLimits::Ticket::~Ticket() {
  if (limits_ != nullptr) limits_->Release(peer_, bytes_, refusal_);
}

void PeerLimits::Ticket::AddBytes(int64_t bytes) {
  if (limits_ == nullptr || refusal_) return;
  limits_->Add(peer_, bytes);
  bytes_ += bytes;
}

std::shared_ptr<PeerLimits> PeerLimits::Create(const PeerLimitOptions& options, int port,
                                               std::FILE* log) {
  return std::shared_ptr<PeerLimits>(new PeerLimits(options, port, log));
}

PeerLimits::Admission PeerLimits::Admit(const std::string& peer, const std::string& peer_name,
                                        int64_t bytes) {
  Admission admission;
  admission.ticket.limits_ = shared_from_this();
  admission.ticket.peer_ = peer;
  absl::MutexLock lock(&mu_);
  PeerLoad& load = loads_[peer];
  if (!peer_name.empty()) load.name = peer_name;
  if (load.calls == 0 ||
      (load.calls < options_.max_calls_per_peer && load.bytes < options_.max_bytes_per_peer)) {
    ++load.calls;
    load.bytes += bytes;
    admission.ticket.bytes_ = bytes;
    return admission;
  }
  ++load.refused;
  if (!load.over) {
    load.over = true;
    absl::FPrintF(log_,
                  "rpc server :%d: connection %s holds %d calls (%d bytes) whose replies it has "
                  "not read; limits %d calls, %d bytes: refusing its calls until it reads them\n",
                  port_, load.name, load.calls, load.bytes, options_.max_calls_per_peer,
                  options_.max_bytes_per_peer);
    std::fflush(log_);
  }
  admission.refusal = absl::ResourceExhaustedError(absl::StrFormat(
      "the server at port %d holds %d calls (%d bytes) from this connection whose replies it "
      "has not read; the limits per connection are %d calls and %d bytes",
      port_, load.calls, load.bytes, options_.max_calls_per_peer, options_.max_bytes_per_peer));
  if (load.refusals < kMaxQueuedRefusals) {
    ++load.refusals;
    admission.ticket.refusal_ = true;
  } else {
    admission.ticket.limits_ = nullptr;
  }
  return admission;
}

void PeerLimits::Add(const std::string& peer, int64_t bytes) {
  absl::MutexLock lock(&mu_);
  loads_[peer].bytes += bytes;
}

void PeerLimits::Release(const std::string& peer, int64_t bytes, bool refusal) {
  absl::MutexLock lock(&mu_);
  auto it = loads_.find(peer);
  if (it == loads_.end()) return;
  PeerLoad& load = it->second;
  if (refusal) {
    --load.refusals;
  } else {
    --load.calls;
    load.bytes -= bytes;
  }
  if (load.over && load.calls < options_.max_calls_per_peer &&
      load.bytes < options_.max_bytes_per_peer) {
    load.over = false;
    absl::FPrintF(log_,
                  "rpc server :%d: connection %s is under its limits again (%d calls refused)\n",
                  port_, load.name, load.refused);
    std::fflush(log_);
    load.refused = 0;
  }
  if (load.calls == 0 && load.refusals == 0) loads_.erase(it);
}

std::pair<int64_t, int64_t> PeerLimits::Held(const std::string& peer) {
  absl::MutexLock lock(&mu_);
  auto it = loads_.find(peer);
  if (it == loads_.end()) return {0, 0};
  return {it->second.calls, it->second.bytes};
}

void ConnectionCap::Accepted(int fd) {
  if (static_cast<int>(open_.size()) < max_) {
    open_.insert(fd);
    return;
  }
  waiting_.push_back(fd);
  if (refused_++ == 0) {
    absl::FPrintF(log_,
                  "rpc server :%d: %d connections open, the limit: refusing the calls of new ones "
                  "until one closes\n",
                  port_, static_cast<int>(open_.size()));
    std::fflush(log_);
  }
  if (static_cast<int>(waiting_.size()) > kMaxWaiting) {
    // ZeroMQ sees the connection end and closes the descriptor itself.
    shutdown(waiting_.front(), SHUT_RDWR);
    waiting_.pop_front();
  }
}

void ConnectionCap::Disconnected(int fd) {
  if (open_.erase(fd) > 0) {
    if (!waiting_.empty()) {
      open_.insert(waiting_.front());
      waiting_.pop_front();
    }
  } else {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), fd), waiting_.end());
  }
  if (waiting_.empty() && refused_ > 0) {
    absl::FPrintF(log_, "rpc server :%d: every connection is served again (%d were over the cap)\n",
                  port_, refused_);
    std::fflush(log_);
    refused_ = 0;
  }
}

absl::Status ConnectionCap::Check(int fd) const {
  if (std::find(waiting_.begin(), waiting_.end(), fd) == waiting_.end()) return absl::OkStatus();
  return absl::ResourceExhaustedError(absl::StrFormat(
      "the server at port %d serves at most %d connections at once and has %d open; try again "
      "when one closes",
      port_, max_, static_cast<int>(open_.size())));
}

void AttachTicket(std::vector<zmq::message_t>& frames, PeerLimits::Ticket ticket) {
  if (frames.empty() || !ticket) return;
  // The frame moves to the heap first: a small frame's bytes live inside
  // the message object.
  struct Holder {
    zmq::message_t frame;
    PeerLimits::Ticket ticket;
  };
  auto* holder = new Holder{std::move(frames.back()), std::move(ticket)};
  frames.back() = zmq::message_t(
      holder->frame.data(), holder->frame.size(),
      [](void*, void* hint) { delete static_cast<Holder*>(hint); }, holder);
}

int64_t FrameBytes(const std::vector<zmq::message_t>& frames) {
  int64_t bytes = 0;
  for (const zmq::message_t& frame : frames) bytes += static_cast<int64_t>(frame.size());
  return bytes;
}

}  // namespace rill
