// CallSync's pooled DEALER sockets and the wait loop that applies deadlines
// and heartbeats on the caller's thread.
#include "transport/rpc_sync_sockets.h"

#include <zmq.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "transport/rpc_client_calls.h"
#include "transport/rpc_internal.h"
#include "transport/wire.h"

namespace rill::rpc_internal {

// Holds one of kMaxLargeInFlight slots for a large call, as the I/O thread
// does for its large calls (each path keeps its own count).
class SyncSockets::LargeSlot {
 public:
  LargeSlot(SyncSockets* sockets, bool large) : sockets_(large ? sockets : nullptr) {
    if (sockets_ == nullptr) return;
    absl::MutexLock lock(&sockets_->mu_);
    sockets_->mu_.Await(absl::Condition(
        +[](int* in_flight) { return *in_flight < kMaxLargeInFlight; }, &sockets_->large_calls_));
    ++sockets_->large_calls_;
  }
  ~LargeSlot() {
    if (sockets_ == nullptr) return;
    absl::MutexLock lock(&sockets_->mu_);
    --sockets_->large_calls_;
  }
  LargeSlot(const LargeSlot&) = delete;
  LargeSlot& operator=(const LargeSlot&) = delete;

 private:
  SyncSockets* const sockets_;
};

SyncSockets::SyncSockets(zmq::context_t& context, const RpcClientOptions& options,
                         const ShmArenaSlot* shm)
    : context_(context), options_(options), shm_(shm), endpoint_("tcp://" + options.address) {}

void SyncSockets::UseIpc(const std::string& endpoint) {
  absl::MutexLock lock(&mu_);
  endpoint_ = endpoint;
}

void SyncSockets::UseTcp() {
  absl::MutexLock lock(&mu_);
  endpoint_ = "tcp://" + options_.address;
}

std::optional<absl::StatusOr<RpcMessage>> SyncSockets::TryCall(const std::string& method,
                                                               RpcMessage& request,
                                                               absl::Time deadline) {
  size_t bytes = 0;
  for (const Tensor& tensor : request.tensors) bytes += tensor.TotalBytes();
  LargeSlot slot(this, bytes >= kLargeBytes);
  absl::StatusOr<std::unique_ptr<Socket>> socket = Take();
  if (!socket.ok()) return std::nullopt;
  return CallOn(*std::move(socket), method, std::move(request), deadline);
}

absl::StatusOr<std::unique_ptr<SyncSockets::Socket>> SyncSockets::Take() {
  std::string endpoint;
  {
    absl::MutexLock lock(&mu_);
    endpoint = endpoint_;
    while (!idle_.empty()) {
      std::unique_ptr<Socket> socket = std::move(idle_.back());
      idle_.pop_back();
      // One made before the path changed is closed.
      if (socket->endpoint == endpoint) return socket;
    }
  }
  try {
    auto socket = std::make_unique<Socket>(
        Socket{zmq::socket_t(context_, zmq::socket_type::dealer), endpoint});
    ConfigureClientSocket(socket->socket, options_);
    socket->socket.connect(endpoint);
    return socket;
  } catch (const zmq::error_t& e) {
    // Out of sockets or descriptors, or a bad endpoint: the caller sends
    // another way.
    return absl::UnavailableError(absl::StrFormat("cannot connect to %s: %s", endpoint, e.what()));
  }
}

void SyncSockets::Return(std::unique_ptr<Socket> socket) {
  absl::MutexLock lock(&mu_);
  idle_.push_back(std::move(socket));
}

// The I/O thread's deadline and heartbeat rules, applied on this thread.
absl::StatusOr<RpcMessage> SyncSockets::CallOn(std::unique_ptr<Socket> socket,
                                               const std::string& method, RpcMessage request,
                                               absl::Time deadline) {
  RpcHeader header;
  // Shared memory only on an ipc socket, whose server maps it; held until
  // the call ends.
  const std::shared_ptr<ShmArena> shm =
      socket->endpoint.starts_with("ipc://") ? shm_->arena() : nullptr;
  absl::StatusOr<std::vector<zmq::message_t>> tensor_frames =
      EncodeTensors(request.tensors, &header, shm.get());
  if (!tensor_frames.ok()) {
    Return(std::move(socket));
    return absl::InvalidArgumentError(absl::StrFormat("call %s to %s: %s", method, options_.address,
                                                      tensor_frames.status().message()));
  }
  const absl::Time start = absl::Now();
  if (start >= deadline) {
    Return(std::move(socket));
    return CallDeadlineExceeded(method, options_.address, start, deadline);
  }
  const uint64_t id = next_id_.fetch_add(1, std::memory_order_relaxed);
  header.set_method(method);
  header.set_request_id(id);
  header.set_body(std::move(request.body));
  if (deadline != absl::InfiniteFuture()) {
    header.set_timeout_micros(std::max<int64_t>(1, absl::ToInt64Microseconds(deadline - start)));
  }
  std::vector<zmq::message_t> frames;
  frames.push_back(EncodeHeader(header));
  for (zmq::message_t& frame : *tensor_frames) frames.push_back(std::move(frame));
  if (!SendFrames(socket->socket, frames)) {
    if (shm != nullptr) shm->Unsend(header);
    return absl::UnavailableError(
        absl::StrFormat("call %s to %s: the message could not be "
                        "queued: %s",
                        method, options_.address, zmq_strerror(zmq_errno())));
  }
  absl::Time last_heard = start;
  absl::Time last_ping = start;
  for (;;) {
    const absl::Time now = absl::Now();
    if (now >= deadline) {
      Return(std::move(socket));  // A late reply is ignored by id.
      return CallDeadlineExceeded(method, options_.address, start, deadline);
    }
    if (now - last_heard >= options_.heartbeat_timeout) {
      // A silent ipc peer may have been replaced at the same address by a
      // server with another ipc socket: later calls go by tcp.
      if (socket->endpoint.starts_with("ipc://")) UseTcp();
      return absl::UnavailableError(
          absl::StrFormat("call %s: peer %s stopped answering (no reply for %s)", method,
                          options_.address, absl::FormatDuration(now - last_heard)));
    }
    if (now - std::max(last_heard, last_ping) >= options_.heartbeat_interval) {
      RpcHeader ping;
      ping.set_method("_ping");
      ping.set_request_id(next_id_.fetch_add(1, std::memory_order_relaxed));
      std::vector<zmq::message_t> ping_frames;
      ping_frames.push_back(EncodeHeader(ping));
      SendFrames(socket->socket, ping_frames);
      last_ping = now;
    }
    const absl::Time next =
        std::min({deadline, last_heard + options_.heartbeat_timeout,
                  std::max(last_heard, last_ping) + options_.heartbeat_interval});
    zmq_pollitem_t item = {socket->socket.handle(), 0, ZMQ_POLLIN, 0};
    zmq_poll(&item, 1,
             static_cast<long>(std::max(0.0, std::ceil(absl::ToDoubleMilliseconds(next - now)))));
    std::vector<zmq::message_t> reply;
    while (ReceiveFrames(socket->socket, &reply)) {
      last_heard = absl::Now();
      if (reply.empty()) continue;
      absl::StatusOr<RpcHeader> reply_header = DecodeHeader(reply[0]);
      if (!reply_header.ok() || !reply_header->is_reply() || reply_header->request_id() != id) {
        continue;  // A ping's reply, or a late one to an earlier call.
      }
      Return(std::move(socket));
      absl::Status status = StatusFromReply(*reply_header);
      return DecodeReply({std::move(status), *std::move(reply_header), std::move(reply)}, method,
                         options_.address);
    }
  }
}

}  // namespace rill::rpc_internal
