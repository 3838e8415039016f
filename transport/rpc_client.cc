// The client: the process's I/O thread (rpc_client_loop.h, shared by
// every client) watches its DEALER sockets (tcp, and ipc once the peer's
// "_hello" says it is on this machine), matches replies to calls by
// request id, and fails calls at their deadline or when the peer falls
// silent. Call sends on the caller's thread while the I/O thread is busy
// elsewhere (the sockets are shared under io_mu_), else queues the call
// for it. Async callbacks run in order on the shared callback threads so
// that they may call again (or on the I/O thread, with inline_callbacks).
// CallSync, once the path is settled, sends and waits on a DEALER of its
// own (rpc_sync_sockets.h); the calls in flight are kept in a CallTable
// (rpc_client_calls.h). A server that refuses this client's handshake
// fails its calls at once with the reason (handshake_monitor.h).
#include <sys/resource.h>
#include <zmq.h>

#include <algorithm>
#include <future>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/rpc_client_impl.h"
#include "transport/wire.h"

namespace rill {

using rpc_internal::DecodeReply;

RpcClient::Impl::~Impl() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  // The last turn fails what is outstanding with CANCELLED; its
  // callbacks run before this returns.
  loop_->Stop(this);
  if (callbacks_ != nullptr) callbacks_->WaitUntilIdle();
}

absl::Status RpcClient::Impl::Connect() {
  RETURN_IF_ERROR(rpc_internal::CheckHostPort(options_.address, "peer address"));
  callbacks_ = loop_->NewCallbackQueue();
  rpc_internal::ConfigureClientSocket(tcp_, options_);
  ASSIGN_OR_RETURN(handshakes_,
                   rpc_internal::HandshakeMonitor::Start(loop_->context(), tcp_, options_.address,
                                                         options_.curve != nullptr));
  try {
    tcp_.connect("tcp://" + options_.address);
  } catch (const zmq::error_t& e) {
    return absl::InvalidArgumentError(
        absl::StrFormat("cannot connect to %s: %s", options_.address, e.what()));
  }
  local_host_id_ = rpc_internal::LocalHostId();
  absl::MutexLock lock(&io_mu_);
  RETURN_IF_ERROR(loop_->Watch(this, tcp_.get(zmq::sockopt::fd)));
  watched_.push_back(tcp_.get(zmq::sockopt::fd));
  if (absl::Status watched = loop_->Watch(this, handshakes_->fd()); !watched.ok()) {
    UnwatchAll();
    return watched;
  }
  watched_.push_back(handshakes_->fd());
  if (options_.prefer_ipc) hello_id_ = SendControl("_hello");
  {
    absl::MutexLock queue_lock(&mu_);
    io_running_ = true;
  }
  loop_->Start(this);
  return absl::OkStatus();
}

void RpcClient::Impl::Call(const std::string& method, RpcMessage request, absl::Time deadline,
                           RpcDone done) {
  auto deliver = [done = std::move(done), method,
                  address = options_.address](Completion completion) {
    absl::StatusOr<RpcMessage> reply = DecodeReply(std::move(completion), method, address);
    if (reply.ok()) {
      done(absl::OkStatus(), *std::move(reply));
    } else {
      done(reply.status(), {});
    }
  };
  if (options_.inline_callbacks) return Enqueue(method, std::move(request), deadline, deliver);
  Finish finish = [callbacks = callbacks_, deliver = std::move(deliver)](Completion completion) {
    auto shared = std::make_shared<Completion>(std::move(completion));
    callbacks->Schedule([shared, deliver] { deliver(std::move(*shared)); });
  };
  Enqueue(method, std::move(request), deadline, std::move(finish));
}

absl::StatusOr<RpcMessage> RpcClient::Impl::CallSync(const std::string& method, RpcMessage request,
                                                     absl::Time deadline) {
  // Until the first handshake succeeds and the peer's _hello settles the
  // path, calls keep the I/O thread's order (the hello first), which
  // also fails them if the server refuses this client.
  if (path_settled_.load(std::memory_order_acquire)) {
    if (std::optional<absl::StatusOr<RpcMessage>> reply =
            sync_.TryCall(method, request, deadline)) {
      return *std::move(reply);
    }
  }
  auto promise = std::make_shared<std::promise<Completion>>();
  std::future<Completion> future = promise->get_future();
  Enqueue(method, std::move(request), deadline,
          [promise](Completion completion) { promise->set_value(std::move(completion)); });
  return DecodeReply(future.get(), method, options_.address);
}

void RpcClient::Impl::SendOrHold(Outgoing call) {
  if (calls_.MustHold(call)) {
    calls_.Hold(std::move(call));
  } else {
    Send(std::move(call));
  }
}

void RpcClient::Impl::ReleaseHeld(absl::Time now) {
  for (Outgoing& call : calls_.TakeExpiredHeld(now)) {
    Complete(std::move(call.finish), {DeadlineExceeded(call.method, now, call.deadline), {}, {}});
  }
  while (std::optional<Outgoing> call = calls_.TakeReleasable()) Send(*std::move(call));
}

void RpcClient::Impl::Enqueue(const std::string& method, RpcMessage request, absl::Time deadline,
                              Finish finish) {
  Outgoing call{method, {}, {}, deadline, std::move(finish), shm_.arena(), {}};
  absl::StatusOr<std::vector<zmq::message_t>> frames =
      EncodeTensors(request.tensors, &call.header, call.shm.get());
  if (!frames.ok()) {
    return call.finish(
        {absl::InvalidArgumentError(absl::StrFormat("call %s to %s: %s", method, options_.address,
                                                    frames.status().message())),
         {},
         {}});
  }
  call.tensor_frames = *std::move(frames);
  if (UsesSharedMemory(call.header)) {
    call.tensors = std::move(request.tensors);  // To send as frames if ipc goes away.
  } else {
    call.shm.reset();
  }
  call.header.set_body(std::move(request.body));
  if (TrySendHere(call)) return;
  bool was_empty;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) {
      return call.finish({Cancelled(method), {}, {}});
    }
    was_empty = queue_.empty();
    queue_.push_back(std::move(call));
  }
  if (was_empty) loop_->Wake(this);
}

bool RpcClient::Impl::TrySendHere(Outgoing& call) {
  if (!io_mu_.TryLock()) return false;
  bool sent = false;
  bool wake = false;
  std::vector<std::pair<Finish, Completion>> failed;  // This call's, if it failed at once.
  {
    absl::MutexLock lock(&mu_);
    sent = io_running_ && !stopping_ && queue_.empty();
  }
  if (sent) {
    const size_t before = completed_.size();
    SendOrHold(std::move(call));
    failed.assign(std::make_move_iterator(completed_.begin() + static_cast<ptrdiff_t>(before)),
                  std::make_move_iterator(completed_.end()));
    completed_.erase(completed_.begin() + static_cast<ptrdiff_t>(before), completed_.end());
    wake = NextWake(absl::Now()) < planned_wake_ || rpc_internal::HasInput(active_socket());
  }
  io_mu_.Unlock();
  for (auto& [finish, completion] : failed) finish(std::move(completion));
  if (wake) loop_->Wake(this);
  return sent;
}

void RpcClient::Impl::RunCompleted() {
  std::vector<std::pair<Finish, Completion>> completed;
  {
    absl::MutexLock lock(&io_mu_);
    completed.swap(completed_);
  }
  for (auto& [finish, completion] : completed) finish(std::move(completion));
}

absl::Status RpcClient::Impl::Cancelled(const std::string& method) const {
  return absl::CancelledError(
      absl::StrFormat("call %s to %s cancelled: the client is closing", method, options_.address));
}

std::vector<zmq::message_t> RpcClient::Impl::TakeFrames(Outgoing& call) {
  std::vector<zmq::message_t> frames;
  frames.reserve(call.tensor_frames.size() + 1);
  frames.push_back(EncodeHeader(call.header));
  for (zmq::message_t& frame : call.tensor_frames) frames.push_back(std::move(frame));
  call.tensor_frames.clear();
  return frames;
}

void RpcClient::Impl::Unshare(Outgoing& call) {
  call.shm->Unsend(call.header);
  call.shm.reset();
  // The same tensors encoded once already, so this succeeds.
  if (absl::StatusOr<std::vector<zmq::message_t>> frames =
          EncodeTensors(call.tensors, &call.header);
      frames.ok()) {
    call.tensor_frames = *std::move(frames);
  }
}

void RpcClient::Impl::Send(Outgoing call) {
  const bool large = rpc_internal::IsLarge(call);
  const absl::Time now = absl::Now();
  if (!handshakes_->refusal().ok()) {
    return Complete(std::move(call.finish), {Refused(call.method), {}, {}});
  }
  if (now >= call.deadline) {
    return Complete(std::move(call.finish),
                    {DeadlineExceeded(call.method, now, call.deadline), {}, {}});
  }
  call.header.set_method(call.method);
  call.header.set_request_id(++last_id_);
  if (call.deadline != absl::InfiniteFuture()) {
    call.header.set_timeout_micros(
        std::max<int64_t>(1, absl::ToInt64Microseconds(call.deadline - now)));
  }
  // Only the ipc peer can map this client's shared memory.
  if (call.shm != nullptr && !ipc_.has_value()) Unshare(call);
  std::vector<zmq::message_t> frames = TakeFrames(call);
  bool sent = rpc_internal::SendFrames(active_socket(), frames);
  // The ipc socket queues only on a live connection, so while its server
  // is gone (killed, perhaps restarted at the same address with another
  // ipc socket) it refuses a message before taking any part of it, and
  // the message goes by tcp, which reaches whoever serves the address.
  if (!sent && ipc_.has_value()) {
    if (call.shm != nullptr) {
      Unshare(call);
      frames = TakeFrames(call);
    }
    sent = rpc_internal::SendFrames(tcp_, frames);
  }
  if (!sent) {
    const int error = zmq_errno();
    // A refused connection is gone, so tcp takes nothing: the monitor
    // has the refusal already, though this thread may not have read it.
    if (handshakes_->Read()) OnHandshake();
    if (!handshakes_->refusal().ok()) {
      return Complete(std::move(call.finish), {Refused(call.method), {}, {}});
    }
    return Complete(std::move(call.finish),
                    {absl::UnavailableError(
                         absl::StrFormat("call %s to %s: the message could not be queued: %s",
                                         call.method, options_.address, zmq_strerror(error))),
                     {},
                     {}});
  }
  // Silence is only counted while someone waits.
  if (calls_.empty()) last_heard_ = now;
  calls_.Add(last_id_,
             Pending{std::move(call.method), now, call.deadline, std::move(call.finish), large});
}

absl::Status RpcClient::Impl::DeadlineExceeded(const std::string& method, absl::Time start,
                                               absl::Time deadline) const {
  return rpc_internal::CallDeadlineExceeded(method, options_.address, start, deadline);
}

absl::StatusOr<std::unique_ptr<RpcClient>> RpcClient::Connect(const RpcClientOptions& options) {
  ASSIGN_OR_RETURN(rpc_internal::ClientLoop * loop, rpc_internal::ClientLoop::Get());
  std::unique_ptr<Impl> impl;
  try {
    impl = std::make_unique<Impl>(options, loop);
  } catch (const zmq::error_t& e) {
    rlimit files{};
    getrlimit(RLIMIT_NOFILE, &files);
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot open a connection to %s: %s (this process may open %d files: ulimit -n)",
        options.address, e.what(), static_cast<int64_t>(files.rlim_cur)));
  }
  RETURN_IF_ERROR(impl->Connect());
  return std::unique_ptr<RpcClient>(new RpcClient(std::move(impl)));
}

RpcClient::RpcClient(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RpcClient::~RpcClient() = default;

void RpcClient::Call(const std::string& method, RpcMessage request, absl::Time deadline,
                     RpcDone done) {
  impl_->Call(method, std::move(request), deadline, std::move(done));
}

absl::StatusOr<RpcMessage> RpcClient::CallSync(const std::string& method, RpcMessage request,
                                               absl::Time deadline) {
  return impl_->CallSync(method, std::move(request), deadline);
}

std::string RpcClient::transport() const { return impl_->transport(); }
bool RpcClient::shared_memory() const { return impl_->shared_memory(); }
const std::string& RpcClient::address() const { return impl_->address(); }

}  // namespace rill
