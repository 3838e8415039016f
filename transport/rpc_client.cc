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
#include <poll.h>
#include <sys/resource.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <future>
#include <optional>
#include <thread>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/handshake_monitor.h"
#include "transport/rpc.h"
#include "transport/rpc_client_calls.h"
#include "transport/rpc_client_loop.h"
#include "transport/rpc_internal.h"
#include "transport/rpc_sync_sockets.h"
#include "transport/wire.h"

namespace rill {
namespace {

using rpc_internal::CallTable;
using rpc_internal::Completion;
using rpc_internal::DecodeReply;
using rpc_internal::Finish;
using rpc_internal::Outgoing;
using rpc_internal::Pending;

constexpr int kReceiveBatch = 64;

}  // namespace

class RpcClient::Impl final : public rpc_internal::ClientLoop::Member {
 public:
  Impl(const RpcClientOptions& options, rpc_internal::ClientLoop* loop)
      : options_(options),
        loop_(loop),
        tcp_(loop->context(), zmq::socket_type::dealer),
        shm_(options.shm_min_bytes, options.shm_capacity),
        sync_(loop->context(), options, &shm_) {}

  ~Impl() override {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    // The last turn fails what is outstanding with CANCELLED; its
    // callbacks run before this returns.
    loop_->Stop(this);
    if (callbacks_ != nullptr) callbacks_->WaitUntilIdle();
  }

  absl::Status Connect() {
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

  void Call(const std::string& method, RpcMessage request, absl::Time deadline, RpcDone done) {
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

  absl::StatusOr<RpcMessage> CallSync(const std::string& method, RpcMessage request,
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

  std::string transport() const {
    return using_ipc_.load(std::memory_order_acquire) ? "ipc" : "tcp";  // Set by the I/O thread.
  }
  const std::string& address() const { return options_.address; }
  bool shared_memory() const { return shm_.arena() != nullptr; }

 private:
  // Sends `call`, or holds it while kMaxLargeInFlight large calls are out
  // (in order: a held call is never overtaken by a later large one).
  void SendOrHold(Outgoing call) {
    if (calls_.MustHold(call)) {
      calls_.Hold(std::move(call));
    } else {
      Send(std::move(call));
    }
  }

  // Sends held calls while there is room, and fails those past their
  // deadline.
  void ReleaseHeld(absl::Time now) {
    for (Outgoing& call : calls_.TakeExpiredHeld(now)) {
      Complete(std::move(call.finish), {DeadlineExceeded(call.method, now, call.deadline), {}, {}});
    }
    while (std::optional<Outgoing> call = calls_.TakeReleasable()) Send(*std::move(call));
  }

  void Enqueue(const std::string& method, RpcMessage request, absl::Time deadline, Finish finish) {
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

  // Sends `call` on this thread when the I/O thread is not using the
  // sockets (it is not in this client's turn) and no queued call would be
  // overtaken:
  // this saves the I/O thread's wake. Wakes it only when it must act
  // sooner than it planned (an earlier deadline) or when this send took in
  // a reply it would not otherwise notice. False: queue it instead.
  bool TrySendHere(Outgoing& call) {
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

  void Complete(Finish finish, Completion completion) ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_) {
    completed_.emplace_back(std::move(finish), std::move(completion));
  }

  // Runs the finishes recorded under io_mu_, after it is released: a
  // callback may call again.
  void RunCompleted() ABSL_LOCKS_EXCLUDED(io_mu_) {
    std::vector<std::pair<Finish, Completion>> completed;
    {
      absl::MutexLock lock(&io_mu_);
      completed.swap(completed_);
    }
    for (auto& [finish, completion] : completed) finish(std::move(completion));
  }

  absl::Status Cancelled(const std::string& method) const {
    return absl::CancelledError(absl::StrFormat("call %s to %s cancelled: the client is closing",
                                                method, options_.address));
  }

  zmq::socket_t& active_socket() { return ipc_.has_value() ? *ipc_ : tcp_; }

  // One turn on the process's I/O thread, which holds io_mu_ for it: what
  // a caller queued is sent, what arrived is matched to its call, and
  // what is overdue fails. The turn after the stop cancels everything.
  absl::Time Turn() override {
    std::vector<Outgoing> taken;
    bool stopping = false;
    absl::Time next = absl::InfiniteFuture();
    {
      absl::MutexLock lock(&io_mu_);
      {
        absl::MutexLock queue_lock(&mu_);
        stopping = stopping_;
        if (stopping) io_running_ = false;
        taken.assign(std::make_move_iterator(queue_.begin()),
                     std::make_move_iterator(queue_.end()));
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

  void UnwatchAll() ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_) {
    for (int fd : watched_) loop_->Unwatch(fd);
    watched_.clear();
  }

  // When the I/O thread must next act: the next deadline, ping or
  // heartbeat timeout, and at least every heartbeat_interval, so that a
  // call sent by another thread (TrySendHere) never needs to wake it for
  // its heartbeats.
  absl::Time NextWake(absl::Time now) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_) {
    absl::Time next = calls_.NextDeadline(now + options_.heartbeat_interval);
    if (!calls_.empty()) {
      next = std::min(next, last_heard_ + options_.heartbeat_timeout);
      next = std::min(next, std::max(last_heard_, last_ping_) + options_.heartbeat_interval);
    }
    return next;
  }

  // The header's frame, then the tensors' (taken from `call`).
  static std::vector<zmq::message_t> TakeFrames(Outgoing& call) {
    std::vector<zmq::message_t> frames;
    frames.reserve(call.tensor_frames.size() + 1);
    frames.push_back(EncodeHeader(call.header));
    for (zmq::message_t& frame : call.tensor_frames) frames.push_back(std::move(frame));
    call.tensor_frames.clear();
    return frames;
  }

  // For a call that will not go by ipc: its blocks go back to the arena (no
  // peer saw them) and its tensors are encoded as frames.
  static void Unshare(Outgoing& call) {
    call.shm->Unsend(call.header);
    call.shm.reset();
    // The same tensors encoded once already, so this succeeds.
    if (absl::StatusOr<std::vector<zmq::message_t>> frames =
            EncodeTensors(call.tensors, &call.header);
        frames.ok()) {
      call.tensor_frames = *std::move(frames);
    }
  }

  // Asks the ipc peer to map this client's new arena, with a one-byte block: tensors go through
  // it only once the peer could, so that one that cannot (in another pid namespace, without
  // /proc access to this process, refusing shared memory) still gets them all, as frames.
  // Tried again each turn until the ipc connection takes it.
  void ProbeSharedMemory() ABSL_EXCLUSIVE_LOCKS_REQUIRED(io_mu_) {
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

  // Sends a transport method ("_ping", "_hello") that no caller waits for.
  uint64_t SendControl(const std::string& method) {
    RpcHeader header;
    header.set_method(method);
    header.set_request_id(++last_id_);
    std::vector<zmq::message_t> frames;
    frames.push_back(EncodeHeader(header));
    rpc_internal::SendFrames(method == "_hello" ? tcp_ : active_socket(), frames);
    return last_id_;
  }

  void Send(Outgoing call) {
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

  // True when it stopped at kReceiveBatch messages (more may wait).
  bool ReceiveAll(zmq::socket_t& socket) {
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

  // A refusal fails every call, held or in flight: the server drops them
  // unread. A success settles the path unless a _hello is still out.
  void OnHandshake() {
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

  absl::Status Refused(const std::string& method) const {
    const absl::Status& refusal = handshakes_->refusal();
    return absl::Status(refusal.code(), absl::StrFormat("call %s: %s", method, refusal.message()));
  }

  void OnHello(const RpcHeader& header) {
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

  absl::Status DeadlineExceeded(const std::string& method, absl::Time start,
                                absl::Time deadline) const {
    return rpc_internal::CallDeadlineExceeded(method, options_.address, start, deadline);
  }

  void ExpireDeadlines(absl::Time now) {
    for (Pending& call : calls_.TakeExpired(now)) {
      Complete(std::move(call.finish),
               {DeadlineExceeded(call.method, call.start, call.deadline), {}, {}});
    }
  }

  // Back to tcp, which reaches whoever serves the address now, and asks
  // that server for its ipc endpoint again.
  void LeaveIpc() {
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

  void CheckHeartbeat(absl::Time now) {
    if (calls_.empty()) return;
    const absl::Duration silence = now - last_heard_;
    if (silence >= options_.heartbeat_timeout) {
      for (Pending& call : calls_.TakeAll()) {
        Complete(std::move(call.finish),
                 {absl::UnavailableError(absl::StrFormat(
                      "call %s: peer %s stopped answering (no reply for %s)", call.method,
                      options_.address, absl::FormatDuration(silence))),
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

  // Constant after Connect.
  const RpcClientOptions options_;
  rpc_internal::ClientLoop* const loop_;
  std::string local_host_id_;
  std::shared_ptr<rpc_internal::CallbackQueue> callbacks_;

  absl::Mutex mu_;  // Taken after io_mu_ when both are.
  std::deque<Outgoing> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool io_running_ ABSL_GUARDED_BY(mu_) = false;  // Between the hello and the stop.

  std::atomic<bool> using_ipc_{false};

  // The sockets and the calls in flight: the I/O thread's in this client's
  // turn, and a caller's while it holds io_mu_.
  absl::Mutex io_mu_;
  zmq::socket_t tcp_ ABSL_GUARDED_BY(io_mu_);
  std::optional<zmq::socket_t> ipc_ ABSL_GUARDED_BY(io_mu_);
  // tcp_'s; declared after it, so that it goes first.
  std::unique_ptr<rpc_internal::HandshakeMonitor> handshakes_ ABSL_GUARDED_BY(io_mu_);
  uint64_t last_id_ ABSL_GUARDED_BY(io_mu_) = 0;
  uint64_t hello_id_ ABSL_GUARDED_BY(io_mu_) = 0;  // 0: no hello outstanding.
  bool shm_probe_wanted_ ABSL_GUARDED_BY(io_mu_) = false;
  uint64_t shm_probe_id_ ABSL_GUARDED_BY(io_mu_) = 0;  // 0: no probe outstanding.
  CallTable calls_ ABSL_GUARDED_BY(io_mu_);
  absl::Time last_heard_ ABSL_GUARDED_BY(io_mu_);
  absl::Time last_ping_ ABSL_GUARDED_BY(io_mu_);
  absl::Time planned_wake_ ABSL_GUARDED_BY(io_mu_);   // When the next turn comes unasked.
  std::vector<int> watched_ ABSL_GUARDED_BY(io_mu_);  // Descriptors the loop watches.
  // Finishes to run once io_mu_ is released.
  std::vector<std::pair<Finish, Completion>> completed_ ABSL_GUARDED_BY(io_mu_);

  // Where large tensors go while the path is ipc; before sync_, which uses it.
  ShmArenaSlot shm_;
  // CallSync's sockets.
  rpc_internal::SyncSockets sync_;
  // False while a _hello is out (calls then go through the I/O thread).
  std::atomic<bool> path_settled_{false};
};

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
