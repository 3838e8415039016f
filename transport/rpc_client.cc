// The client: callers queue calls; one I/O thread owns the DEALER sockets
// (tcp, and ipc once the peer's "_hello" says it is on this machine),
// matches replies to calls by request id, and fails calls at their
// deadline or when the peer falls silent. Async callbacks run on a
// callback thread so that they may block or call again.
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <deque>
#include <future>
#include <optional>
#include <set>
#include <thread>
#include <unordered_map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/rpc.h"
#include "transport/rpc_internal.h"
#include "transport/wire.h"

namespace rill {
namespace {

using rpc_internal::Wakeup;

constexpr int kReceiveBatch = 64;

// What the I/O thread hands back for a call: the reply's frames are decoded
// by whoever receives this, off the I/O thread.
struct Completion {
  absl::Status status;
  RpcHeader header;
  std::vector<zmq::message_t> frames;  // [header, tensors...] when status is OK.
};
using Finish = std::function<void(Completion)>;

absl::StatusOr<RpcMessage> DecodeReply(Completion completion, const std::string& method,
                                       const std::string& address) {
  if (!completion.status.ok()) return completion.status;
  absl::StatusOr<std::vector<Tensor>> tensors =
      DecodeTensors(completion.header, completion.frames, 1);
  if (!tensors.ok()) {
    return absl::InternalError(absl::StrFormat("reply to %s from %s is malformed: %s", method,
                                               address, tensors.status().message()));
  }
  return RpcMessage{std::move(*completion.header.mutable_body()), *std::move(tensors)};
}

}  // namespace

class RpcClient::Impl {
 public:
  explicit Impl(const RpcClientOptions& options)
      : options_(options), tcp_(context_, zmq::socket_type::dealer) {}

  ~Impl() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    if (wakeup_ != nullptr) wakeup_->Signal();
    if (io_thread_.joinable()) io_thread_.join();
    callbacks_.reset();  // Runs the CANCELLED callbacks the I/O thread queued.
  }

  absl::Status Connect() {
    RETURN_IF_ERROR(rpc_internal::CheckHostPort(options_.address, "peer address"));
    ASSIGN_OR_RETURN(wakeup_, Wakeup::Create());
    rpc_internal::ConfigureSocket(tcp_, options_.max_message_bytes);
    try {
      tcp_.connect("tcp://" + options_.address);
    } catch (const zmq::error_t& e) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cannot connect to %s: %s", options_.address, e.what()));
    }
    local_host_id_ = rpc_internal::LocalHostId();
    io_thread_ = std::thread([this] { IoLoop(); });
    return absl::OkStatus();
  }

  void Call(const std::string& method, RpcMessage request, absl::Time deadline, RpcDone done) {
    rpc_internal::WorkQueue* callbacks = &*callbacks_;
    std::string address = options_.address;
    Finish finish = [callbacks, done, method, address](Completion completion) {
      auto shared = std::make_shared<Completion>(std::move(completion));
      callbacks->Schedule([shared, done, method, address] {
        absl::StatusOr<RpcMessage> reply = DecodeReply(std::move(*shared), method, address);
        if (reply.ok()) {
          done(absl::OkStatus(), *std::move(reply));
        } else {
          done(reply.status(), {});
        }
      });
    };
    Enqueue(method, std::move(request), deadline, std::move(finish));
  }

  absl::StatusOr<RpcMessage> CallSync(const std::string& method, RpcMessage request,
                                      absl::Time deadline) {
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

 private:
  struct Outgoing {
    std::string method;
    RpcHeader header;  // body and tensor metadata filled in.
    std::vector<zmq::message_t> tensor_frames;
    absl::Time deadline;
    Finish finish;
  };
  struct Pending {
    std::string method;
    absl::Time start;
    absl::Time deadline;
    Finish finish;
    bool large = false;
  };

  // Big transfers go one or two at a time: more of them in flight on one
  // connection only slows each down (2-4x measured on 2 cores).
  static constexpr size_t kLargeBytes = size_t{256} << 10;
  static constexpr int kMaxLargeInFlight = 2;

  static bool IsLarge(const Outgoing& call) {
    size_t bytes = 0;
    for (const zmq::message_t& frame : call.tensor_frames) bytes += frame.size();
    return bytes >= kLargeBytes;
  }

  int LargeInFlight() const {
    int large = 0;
    for (const auto& [id, call] : pending_) large += call.large ? 1 : 0;
    return large;
  }

  // Sends `call`, or holds it while kMaxLargeInFlight large calls are out
  // (in order: a held call is never overtaken by a later large one).
  void SendOrHold(Outgoing call) {
    if (IsLarge(call) && (!held_.empty() || LargeInFlight() >= kMaxLargeInFlight)) {
      held_.push_back(std::move(call));
    } else {
      Send(std::move(call));
    }
  }

  // Sends held calls while there is room, and fails those past their
  // deadline.
  void ReleaseHeld(absl::Time now) {
    for (auto it = held_.begin(); it != held_.end();) {
      if (it->deadline > now) {
        ++it;
        continue;
      }
      it->finish({DeadlineExceeded(it->method, now, it->deadline), {}, {}});
      it = held_.erase(it);
    }
    while (!held_.empty() && LargeInFlight() < kMaxLargeInFlight) {
      Outgoing call = std::move(held_.front());
      held_.pop_front();
      Send(std::move(call));
    }
  }

  void Enqueue(const std::string& method, RpcMessage request, absl::Time deadline, Finish finish) {
    Outgoing call{method, {}, {}, deadline, std::move(finish)};
    absl::StatusOr<std::vector<zmq::message_t>> frames =
        EncodeTensors(request.tensors, &call.header);
    if (!frames.ok()) {
      return call.finish(
          {absl::InvalidArgumentError(absl::StrFormat("call %s to %s: %s", method, options_.address,
                                                      frames.status().message())),
           {},
           {}});
    }
    call.tensor_frames = *std::move(frames);
    call.header.set_body(std::move(request.body));
    bool was_empty;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) {
        return call.finish({Cancelled(method), {}, {}});
      }
      was_empty = queue_.empty();
      queue_.push_back(std::move(call));
    }
    if (was_empty) wakeup_->Signal();
  }

  absl::Status Cancelled(const std::string& method) const {
    return absl::CancelledError(absl::StrFormat("call %s to %s cancelled: the client is closing",
                                                method, options_.address));
  }

  zmq::socket_t& active_socket() { return ipc_.has_value() ? *ipc_ : tcp_; }

  void IoLoop() {
    if (options_.prefer_ipc) hello_id_ = SendControl("_hello");
    std::vector<Outgoing> taken;
    for (;;) {
      zmq_pollitem_t items[3] = {{nullptr, wakeup_->fd(), ZMQ_POLLIN, 0},
                                 {tcp_.handle(), 0, ZMQ_POLLIN, 0},
                                 {ipc_.has_value() ? ipc_->handle() : nullptr, 0, ZMQ_POLLIN, 0}};
      zmq_poll(items, ipc_.has_value() ? 3 : 2, PollTimeoutMillis(absl::Now()));
      if (items[0].revents & ZMQ_POLLIN) {
        wakeup_->Drain();
        bool stopping;
        {
          absl::MutexLock lock(&mu_);
          stopping = stopping_;
          taken.assign(std::make_move_iterator(queue_.begin()),
                       std::make_move_iterator(queue_.end()));
          queue_.clear();
        }
        if (stopping) {
          for (Outgoing& call : taken) call.finish({Cancelled(call.method), {}, {}});
          for (Outgoing& call : held_) call.finish({Cancelled(call.method), {}, {}});
          held_.clear();
          break;
        }
        for (Outgoing& call : taken) SendOrHold(std::move(call));
        taken.clear();
      }
      if (items[1].revents & ZMQ_POLLIN) ReceiveAll(tcp_);
      if (ipc_.has_value() && (items[2].revents & ZMQ_POLLIN)) ReceiveAll(*ipc_);
      const absl::Time now = absl::Now();
      ExpireDeadlines(now);
      CheckHeartbeat(now);
      ReleaseHeld(now);
    }
    for (auto& [id, call] : pending_) call.finish({Cancelled(call.method), {}, {}});
    pending_.clear();
  }

  // The longest the I/O thread may sleep: until the next deadline, ping or
  // heartbeat timeout (-1: until woken).
  long PollTimeoutMillis(absl::Time now) const {
    absl::Time next = absl::InfiniteFuture();
    if (!deadlines_.empty()) next = deadlines_.begin()->first;
    for (const Outgoing& call : held_) next = std::min(next, call.deadline);
    if (!pending_.empty()) {
      next = std::min(next, last_heard_ + options_.heartbeat_timeout);
      next = std::min(next, std::max(last_heard_, last_ping_) + options_.heartbeat_interval);
    }
    if (next == absl::InfiniteFuture()) return -1;
    return static_cast<long>(std::max(0.0, std::ceil(absl::ToDoubleMilliseconds(next - now))));
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
    const bool large = IsLarge(call);
    const absl::Time now = absl::Now();
    if (now >= call.deadline) {
      return call.finish({DeadlineExceeded(call.method, now, call.deadline), {}, {}});
    }
    call.header.set_method(call.method);
    call.header.set_request_id(++last_id_);
    if (call.deadline != absl::InfiniteFuture()) {
      call.header.set_timeout_micros(
          std::max<int64_t>(1, absl::ToInt64Microseconds(call.deadline - now)));
    }
    std::vector<zmq::message_t> frames;
    frames.reserve(call.tensor_frames.size() + 1);
    frames.push_back(EncodeHeader(call.header));
    for (zmq::message_t& frame : call.tensor_frames) frames.push_back(std::move(frame));
    if (!rpc_internal::SendFrames(active_socket(), frames)) {
      return call.finish({absl::UnavailableError(absl::StrFormat(
                              "call %s to %s: the message could not be queued: %s", call.method,
                              options_.address, zmq_strerror(zmq_errno()))),
                          {},
                          {}});
    }
    // Silence is only counted while someone waits.
    if (pending_.empty()) last_heard_ = now;
    deadlines_.emplace(call.deadline, last_id_);
    pending_.emplace(last_id_, Pending{std::move(call.method), now, call.deadline,
                                       std::move(call.finish), large});
  }

  void ReceiveAll(zmq::socket_t& socket) {
    std::vector<zmq::message_t> frames;
    for (int i = 0; i < kReceiveBatch && rpc_internal::ReceiveFrames(socket, &frames); ++i) {
      last_heard_ = absl::Now();
      if (frames.empty()) continue;
      absl::StatusOr<RpcHeader> header = DecodeHeader(frames[0]);
      if (!header.ok() || !header->is_reply()) continue;
      if (header->request_id() == hello_id_) {
        OnHello(*header);
        continue;
      }
      auto it = pending_.find(header->request_id());
      if (it == pending_.end()) continue;  // A ping, or a call that already failed.
      Pending call = std::move(it->second);
      pending_.erase(it);
      deadlines_.erase({call.deadline, header->request_id()});
      absl::Status status = rpc_internal::StatusFromReply(*header);
      call.finish({std::move(status), *std::move(header), std::move(frames)});
      frames = std::vector<zmq::message_t>();
    }
  }

  void OnHello(const RpcHeader& header) {
    hello_id_ = 0;
    HelloReply hello;
    if (!rpc_internal::StatusFromReply(header).ok() || !hello.ParseFromString(header.body()) ||
        hello.host_id() != local_host_id_ || hello.ipc_endpoint().empty()) {
      return;
    }
    zmq::socket_t ipc(context_, zmq::socket_type::dealer);
    rpc_internal::ConfigureSocket(ipc, options_.max_message_bytes);
    try {
      ipc.connect(hello.ipc_endpoint());
    } catch (const zmq::error_t&) {
      return;  // Stay on tcp.
    }
    ipc_.emplace(std::move(ipc));
    using_ipc_.store(true, std::memory_order_release);
  }

  absl::Status DeadlineExceeded(const std::string& method, absl::Time start,
                                absl::Time deadline) const {
    return absl::DeadlineExceededError(
        absl::StrFormat("call %s to %s: no reply within %d ms", method, options_.address,
                        absl::ToInt64Milliseconds(deadline - start)));
  }

  void ExpireDeadlines(absl::Time now) {
    while (!deadlines_.empty() && deadlines_.begin()->first <= now) {
      const uint64_t id = deadlines_.begin()->second;
      deadlines_.erase(deadlines_.begin());
      auto it = pending_.find(id);
      Pending call = std::move(it->second);
      pending_.erase(it);
      call.finish({DeadlineExceeded(call.method, call.start, call.deadline), {}, {}});
    }
  }

  void CheckHeartbeat(absl::Time now) {
    if (pending_.empty()) return;
    const absl::Duration silence = now - last_heard_;
    if (silence >= options_.heartbeat_timeout) {
      std::unordered_map<uint64_t, Pending> failed;
      failed.swap(pending_);
      deadlines_.clear();
      for (auto& [id, call] : failed) {
        call.finish({absl::UnavailableError(absl::StrFormat(
                         "call %s: peer %s stopped answering (no reply for %s)", call.method,
                         options_.address, absl::FormatDuration(silence))),
                     {},
                     {}});
      }
      // The peer may have restarted with another ipc endpoint: ask again.
      if (ipc_.has_value()) {
        ipc_.reset();
        using_ipc_.store(false, std::memory_order_release);
        if (options_.prefer_ipc) hello_id_ = SendControl("_hello");
      }
      return;
    }
    if (silence >= options_.heartbeat_interval && now - last_ping_ >= options_.heartbeat_interval) {
      SendControl("_ping");
      last_ping_ = now;
    }
  }

  // Constant after Connect.
  const RpcClientOptions options_;
  std::string local_host_id_;
  std::unique_ptr<Wakeup> wakeup_;

  absl::Mutex mu_;
  std::deque<Outgoing> queue_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::atomic<bool> using_ipc_{false};
  std::optional<rpc_internal::WorkQueue> callbacks_{std::in_place, 1};

  // Owned by the I/O thread once it runs.
  zmq::context_t context_;
  zmq::socket_t tcp_;
  std::optional<zmq::socket_t> ipc_;
  uint64_t last_id_ = 0;
  uint64_t hello_id_ = 0;  // 0: no hello outstanding.
  std::unordered_map<uint64_t, Pending> pending_;
  std::set<std::pair<absl::Time, uint64_t>> deadlines_;
  std::deque<Outgoing> held_;  // Large calls waiting for room.
  absl::Time last_heard_;
  absl::Time last_ping_;
  std::thread io_thread_;
};

absl::StatusOr<std::unique_ptr<RpcClient>> RpcClient::Connect(const RpcClientOptions& options) {
  auto impl = std::make_unique<Impl>(options);
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
const std::string& RpcClient::address() const { return impl_->address(); }

}  // namespace rill
