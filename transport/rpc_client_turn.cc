// RpcClient's turn on the process's I/O thread: replies matched to their
// calls, the path settled (handshake, "_hello", ipc, shared memory), calls
// failed at their deadline or when the peer falls silent.
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "transport/rpc_client_impl.h"
#include "transport/wire.h"

namespace rill {
namespace {

constexpr int kReceiveBatch = 64;

}  // namespace

absl::Time RpcClient::Impl::Turn() {
  std::vector<Outgoing> taken;
  bool stopping = false;
  absl::Time next = absl::InfiniteFuture();
  {
    absl::MutexLock lock(&io_mu_);
    {
      absl::MutexLock queue_lock(&mu_);
      stopping = stopping_;
      if (stopping) io_running_ = false;
      taken.assign(std::make_move_iterator(queue_.begin()), std::make_move_iterator(queue_.end()));
      queue_.clear();
    }
    if (stopping) {
      for (Outgoing& call : taken) {
        Complete(std::move(call.finish), {Cancelled(call.method), {}, {}});
      }
      for (Outgoing& call : calls_.TakeAllHeld()) {
        Complete(std::move(call.finish), {Cancelled(call.method), {}, {}});
      }
      for (Pending& call : calls_.TakeAll()) {
        Complete(std::move(call.finish), {Cancelled(call.method), {}, {}});
      }
      UnwatchAll();
    } else {
      for (Outgoing& call : taken) SendOrHold(std::move(call));
      // Every turn, not only when a descriptor fired: a caller's send
      // may have taken in a reply's notification.
      if (handshakes_->Read()) OnHandshake();
      bool more = ReceiveAll(tcp_);
      if (ipc_.has_value()) more = ReceiveAll(*ipc_) || more;
      ProbeSharedMemory();
      const absl::Time now = absl::Now();
      ExpireDeadlines(now);
      CheckHeartbeat(now);
      ReleaseHeld(now);
      next = more ? now : NextWake(now);
      planned_wake_ = next;
    }
  }
  RunCompleted();
  return next;
}

void RpcClient::Impl::UnwatchAll() {
  for (int fd : watched_) loop_->Unwatch(fd);
  watched_.clear();
}

absl::Time RpcClient::Impl::NextWake(absl::Time now) const {
  absl::Time next = calls_.NextDeadline(now + options_.heartbeat_interval);
  if (!calls_.empty()) {
    next = std::min(next, last_heard_ + options_.heartbeat_timeout);
    next = std::min(next, std::max(last_heard_, last_ping_) + options_.heartbeat_interval);
  }
  return next;
}

void RpcClient::Impl::ProbeSharedMemory() {
  if (!shm_probe_wanted_ || !ipc_.has_value()) return;
  const std::shared_ptr<ShmArena> arena = shm_.opened();
  const uint8_t byte = 1;
  const std::optional<ShmRef> block =
      arena != nullptr ? arena->Place(&byte, sizeof(byte)) : std::nullopt;
  if (!block.has_value()) {
    shm_probe_wanted_ = false;
    return;
  }
  RpcHeader header;
  header.set_method("_shm_probe");
  header.set_request_id(last_id_ + 1);
  TensorMeta* meta = header.add_tensors();
  meta->set_dtype(DT_UINT8);
  meta->mutable_shape()->add_dim()->set_size(1);
  *meta->mutable_shm() = *block;
  std::vector<zmq::message_t> frames;
  frames.push_back(EncodeHeader(header));
  frames.emplace_back();
  if (!rpc_internal::SendFrames(*ipc_, frames)) {
    arena->Unsend(header);
    return;
  }
  shm_probe_id_ = ++last_id_;
  shm_probe_wanted_ = false;
}

uint64_t RpcClient::Impl::SendControl(const std::string& method) {
  RpcHeader header;
  header.set_method(method);
  header.set_request_id(++last_id_);
  std::vector<zmq::message_t> frames;
  frames.push_back(EncodeHeader(header));
  rpc_internal::SendFrames(method == "_hello" ? tcp_ : active_socket(), frames);
  return last_id_;
}

bool RpcClient::Impl::ReceiveAll(zmq::socket_t& socket) {
  std::vector<zmq::message_t> frames;
  int i = 0;
  for (; i < kReceiveBatch && rpc_internal::ReceiveFrames(socket, &frames); ++i) {
    last_heard_ = absl::Now();
    if (frames.empty()) continue;
    absl::StatusOr<RpcHeader> header = DecodeHeader(frames[0]);
    if (!header.ok() || !header->is_reply()) continue;
    if (header->request_id() == hello_id_) {
      OnHello(*header);
      continue;
    }
    if (shm_probe_id_ != 0 && header->request_id() == shm_probe_id_) {
      shm_probe_id_ = 0;
      if (rpc_internal::StatusFromReply(*header).ok()) shm_.Enable();
      continue;
    }
    std::optional<Pending> call = calls_.Take(header->request_id());
    if (!call) continue;  // A ping, or a call that already failed.
    absl::Status status = rpc_internal::StatusFromReply(*header);
    Complete(std::move(call->finish), {std::move(status), *std::move(header), std::move(frames)});
    frames = std::vector<zmq::message_t>();
  }
  return i == kReceiveBatch;
}

void RpcClient::Impl::OnHandshake() {
  if (!handshakes_->refusal().ok()) {
    path_settled_.store(false, std::memory_order_release);
    for (Outgoing& call : calls_.TakeAllHeld()) {
      Complete(std::move(call.finish), {Refused(call.method), {}, {}});
    }
    for (Pending& call : calls_.TakeAll()) {
      Complete(std::move(call.finish), {Refused(call.method), {}, {}});
    }
  } else if (handshakes_->succeeded() && hello_id_ == 0) {
    path_settled_.store(true, std::memory_order_release);
  }
}

absl::Status RpcClient::Impl::Refused(const std::string& method) const {
  const absl::Status& refusal = handshakes_->refusal();
  return absl::Status(refusal.code(), absl::StrFormat("call %s: %s", method, refusal.message()));
}

void RpcClient::Impl::OnHello(const RpcHeader& header) {
  hello_id_ = 0;
  // Settled either way once the handshake succeeded, but only after
  // using_ipc_ when it switches.
  struct Settle {
    std::atomic<bool>* settled;
    bool handshake_succeeded;
    ~Settle() {
      if (handshake_succeeded) settled->store(true, std::memory_order_release);
    }
  } settle{&path_settled_, handshakes_->succeeded()};
  HelloReply hello;
  if (!rpc_internal::StatusFromReply(header).ok() || !hello.ParseFromString(header.body()) ||
      hello.host_id() != local_host_id_ || hello.ipc_endpoint().empty()) {
    return;
  }
  try {
    zmq::socket_t ipc(loop_->context(), zmq::socket_type::dealer);
    rpc_internal::ConfigureClientSocket(ipc, options_);
    ipc.set(zmq::sockopt::immediate, 1);
    ipc.connect(hello.ipc_endpoint());
    if (!loop_->Watch(this, ipc.get(zmq::sockopt::fd)).ok()) return;
    watched_.push_back(ipc.get(zmq::sockopt::fd));
    ipc_.emplace(std::move(ipc));
  } catch (const zmq::error_t&) {
    return;  // Stay on tcp (out of sockets or descriptors, say).
  }
  shm_.Open();
  shm_probe_wanted_ = true;
  sync_.UseIpc(hello.ipc_endpoint());
  using_ipc_.store(true, std::memory_order_release);
}

void RpcClient::Impl::ExpireDeadlines(absl::Time now) {
  for (Pending& call : calls_.TakeExpired(now)) {
    Complete(std::move(call.finish),
             {DeadlineExceeded(call.method, call.start, call.deadline), {}, {}});
  }
}

void RpcClient::Impl::LeaveIpc() {
  const int fd = ipc_->get(zmq::sockopt::fd);
  loop_->Unwatch(fd);
  watched_.erase(std::remove(watched_.begin(), watched_.end(), fd), watched_.end());
  ipc_.reset();
  using_ipc_.store(false, std::memory_order_release);
  sync_.UseTcp();
  shm_.Close();
  shm_probe_wanted_ = false;
  shm_probe_id_ = 0;
  if (options_.prefer_ipc) {
    path_settled_.store(false, std::memory_order_release);
    hello_id_ = SendControl("_hello");
  }
}

void RpcClient::Impl::CheckHeartbeat(absl::Time now) {
  if (calls_.empty()) return;
  const absl::Duration silence = now - last_heard_;
  if (silence >= options_.heartbeat_timeout) {
    for (Pending& call : calls_.TakeAll()) {
      Complete(std::move(call.finish),
               {absl::UnavailableError(
                    absl::StrFormat("call %s: peer %s stopped answering (no reply for %s)",
                                    call.method, options_.address, absl::FormatDuration(silence))),
                {},
                {}});
    }
    // The peer may have restarted with another ipc endpoint: ask again.
    if (ipc_.has_value()) LeaveIpc();
    return;
  }
  if (silence >= options_.heartbeat_interval && now - last_ping_ >= options_.heartbeat_interval) {
    SendControl("_ping");
    last_ping_ = now;
  }
}

}  // namespace rill
