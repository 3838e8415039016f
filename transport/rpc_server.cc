// The server: one socket thread owns the ROUTER (ZeroMQ sockets are not
// thread-safe) and answers the built-in methods; handlers run on worker
// threads (or on the socket thread, for inline methods) and post their
// replies to an outbox, which sends them itself while the socket thread
// waits, or queues them for it. Every call holds a ticket against its
// connection's limits until ZeroMQ has written its reply; a socket monitor
// counts the connections.
#include <ifaddrs.h>
#include <netdb.h>
#include <poll.h>
#include <unistd.h>
#include <zmq.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/ipc_directory.h"
#include "transport/rpc.h"
#include "transport/rpc_internal.h"
#include "transport/wire.h"

namespace rill {
namespace {

using rpc_internal::Wakeup;

// Messages read per wakeup before the outbox gets a turn.
constexpr int kReceiveBatch = 64;

// Where replies go. The socket thread owns the ROUTER except while it
// waits in poll (on the socket's ZMQ_FD, not the socket); then another
// thread may send a reply itself under send_mu(). A reply that finds the
// socket busy waits in a queue for the socket thread, woken through an
// eventfd. Shared with the RpcDone callbacks, which may outlive the
// server. Thread safety: Post from any thread.
class Outbox {
 public:
  Outbox(std::unique_ptr<Wakeup> wakeup, zmq::socket_t* router)
      : wakeup_(std::move(wakeup)), router_(router) {}

  // Called by the socket thread before it polls.
  void SetSocketThread() { socket_thread_ = std::this_thread::get_id(); }
  // Held by the socket thread whenever it uses the router.
  absl::Mutex& send_mu() ABSL_LOCK_RETURNED(send_mu_) { return send_mu_; }

  void Post(std::vector<zmq::message_t> frames) {
    // The socket thread itself sends what it posted once its handler
    // returns (TakeQueued).
    const bool on_socket_thread = std::this_thread::get_id() == socket_thread_;
    if (!on_socket_thread && send_mu_.TryLock()) {
      bool input = false;
      const bool open = router_ != nullptr;
      if (open) {
        rpc_internal::SendFrames(*router_, frames);
        input = rpc_internal::HasInput(*router_);
      }
      send_mu_.Unlock();
      if (input) wakeup_->Signal();
      return;
    }
    bool was_empty;
    {
      absl::MutexLock lock(&mu_);
      if (closed_) return;
      was_empty = queue_.empty();
      queue_.push_back(std::move(frames));
    }
    if (was_empty && !on_socket_thread) wakeup_->Signal();
  }
  std::vector<std::vector<zmq::message_t>> Take() {
    wakeup_->Drain();
    return TakeQueued();
  }
  // As Take, for the socket thread after a handler ran on it.
  std::vector<std::vector<zmq::message_t>> TakeQueued() {
    std::vector<std::vector<zmq::message_t>> taken;
    absl::MutexLock lock(&mu_);
    taken.swap(queue_);
    return taken;
  }
  // Later posts are dropped; wakes the socket thread to see `stopping`.
  void Close() {
    {
      absl::MutexLock lock(&send_mu_);
      router_ = nullptr;
    }
    {
      absl::MutexLock lock(&mu_);
      closed_ = true;
      queue_.clear();
    }
    wakeup_->Signal();
  }
  int fd() const { return wakeup_->fd(); }

 private:
  const std::unique_ptr<Wakeup> wakeup_;
  std::thread::id socket_thread_;  // Written before the socket thread polls.
  absl::Mutex send_mu_;
  zmq::socket_t* router_ ABSL_GUARDED_BY(send_mu_);  // Null once closed.
  absl::Mutex mu_;
  std::vector<std::vector<zmq::message_t>> queue_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
};

std::vector<zmq::message_t> ReplyFrames(const std::string& identity, RpcHeader header,
                                        const absl::Status& status, RpcMessage reply,
                                        PeerLimits::Ticket ticket) {
  header.set_is_reply(true);
  header.clear_method();
  header.clear_body();
  header.clear_tensors();
  header.clear_timeout_micros();
  std::vector<zmq::message_t> tensor_frames;
  absl::Status result = status;
  if (result.ok()) {
    absl::StatusOr<std::vector<zmq::message_t>> encoded = EncodeTensors(reply.tensors, &header);
    if (encoded.ok()) {
      tensor_frames = *std::move(encoded);
      header.set_body(std::move(reply.body));
    } else {
      result = absl::InternalError(
          absl::StrFormat("reply cannot be sent: %s", encoded.status().message()));
      header.clear_tensors();
    }
  }
  header.set_status_code(static_cast<int>(result.code()));
  header.set_status_message(std::string(result.message()));
  std::vector<zmq::message_t> frames;
  frames.reserve(tensor_frames.size() + 2);
  frames.emplace_back(identity.data(), identity.size());
  frames.push_back(EncodeHeader(header));
  for (zmq::message_t& frame : tensor_frames) frames.push_back(std::move(frame));
  ticket.AddBytes(FrameBytes(frames));
  AttachTicket(frames, std::move(ticket));
  return frames;
}

// The addresses of this machine's interfaces, as ZeroMQ writes a peer's
// ("127.0.0.1", "::1").
absl::flat_hash_set<std::string> LocalAddresses() {
  absl::flat_hash_set<std::string> addresses;
  ifaddrs* interfaces = nullptr;
  if (getifaddrs(&interfaces) != 0) return addresses;
  for (ifaddrs* i = interfaces; i != nullptr; i = i->ifa_next) {
    if (i->ifa_addr == nullptr) continue;
    const int family = i->ifa_addr->sa_family;
    if (family != AF_INET && family != AF_INET6) continue;
    char host[NI_MAXHOST];
    const socklen_t size = family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
    if (getnameinfo(i->ifa_addr, size, host, sizeof(host), nullptr, 0, NI_NUMERICHOST) == 0) {
      addresses.insert(host);
    }
  }
  freeifaddrs(interfaces);
  return addresses;
}

// A message property, or "" when ZeroMQ has none (an ipc peer's address).
std::string MessageProperty(const zmq::message_t& frame, const char* name) {
  const char* value = zmq_msg_gets(frame.handle(), name);
  return value == nullptr ? std::string() : std::string(value);
}

}  // namespace

class RpcServer::Impl {
 public:
  explicit Impl(const RpcServerOptions& options)
      : limit_options_(options.limits),
        log_(options.log),
        router_(context_, zmq::socket_type::router),
        monitor_(context_, zmq::socket_type::pair),
        workers_(std::in_place, std::max(options.handler_threads, 1)) {}

  ~Impl() {
    stopping_.store(true, std::memory_order_release);  // Read by workers and the socket thread.
    if (outbox_ != nullptr) outbox_->Close();
    if (socket_thread_.joinable()) socket_thread_.join();
    workers_.reset();  // Runs the queued tasks, which see stopping_ and skip.
    // Monitoring stops before its socket closes: libzmq leaks an event it
    // fails to send (one with a long endpoint, an ipc path, is allocated).
    zmq_socket_monitor(router_.handle(), nullptr, 0);
    monitor_.close();
    router_.close();
    if (!ipc_directory_.empty()) {
      unlink((ipc_directory_ + "/rpc.sock").c_str());
      rmdir(ipc_directory_.c_str());
    }
  }

  absl::Status Start(const RpcServerOptions& options) {
    const std::string& address = options.bind_address;
    if (!address.starts_with("tcp://")) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bind address '%s' does not start with tcp://", address));
    }
    RETURN_IF_ERROR(
        rpc_internal::CheckHostPort(std::string_view(address).substr(6), "bind address"));
    ASSIGN_OR_RETURN(std::unique_ptr<Wakeup> wakeup, Wakeup::Create());
    outbox_ = std::make_shared<Outbox>(std::move(wakeup), &router_);
    rpc_internal::ConfigureSocket(router_, options.max_message_bytes);
    if (options.curve != nullptr) {
      ASSIGN_OR_RETURN(authenticator_, CurveAuthenticator::Start(context_, *options.curve));
      UseCurveAsServer(router_, *options.curve);
    }
    const std::string monitor_endpoint =
        absl::StrFormat("inproc://rpc-server-monitor-%p", static_cast<void*>(this));
    if (zmq_socket_monitor(router_.handle(), monitor_endpoint.c_str(),
                           ZMQ_EVENT_ACCEPTED | ZMQ_EVENT_DISCONNECTED) != 0) {
      return absl::InternalError(
          absl::StrFormat("cannot monitor the server's socket: %s", zmq_strerror(zmq_errno())));
    }
    monitor_.connect(monitor_endpoint);
    try {
      router_.bind(address);
    } catch (const zmq::error_t& e) {
      const std::string message = absl::StrFormat("cannot bind %s: %s", address, e.what());
      return e.num() == EADDRINUSE || e.num() == EADDRNOTAVAIL || e.num() == EACCES
                 ? absl::UnavailableError(message)
                 : absl::InvalidArgumentError(message);
    }
    const std::string endpoint = router_.get(zmq::sockopt::last_endpoint);
    port_ = std::atoi(endpoint.substr(endpoint.rfind(':') + 1).c_str());
    peer_limits_ = PeerLimits::Create(limit_options_, port_, log_);
    connections_.emplace(limit_options_.max_connections, port_, log_);
    local_addresses_ = LocalAddresses();
    HelloReply hello;
    hello.set_host_id(rpc_internal::LocalHostId());
    if (options.bind_ipc) {
      ASSIGN_OR_RETURN(ipc_directory_,
                       rpc_internal::MakeIpcDirectory(rpc_internal::IpcBaseDirectory()));
      ipc_endpoint_ = "ipc://" + ipc_directory_ + "/rpc.sock";
      try {
        router_.bind(ipc_endpoint_);
      } catch (const zmq::error_t& e) {
        return absl::UnavailableError(
            absl::StrFormat("cannot bind %s: %s", ipc_endpoint_, e.what()));
      }
      hello.set_ipc_endpoint(ipc_endpoint_);
    }
    local_hello_ = hello.SerializeAsString();
    socket_thread_ = std::thread([this] { SocketLoop(); });
    return absl::OkStatus();
  }

  absl::Status Serve(std::vector<RpcMethod> methods) {
    auto table = std::make_unique<MethodTable>();
    for (RpcMethod& method : methods) {
      std::string name = method.name;
      if (name.empty() || name.starts_with('_')) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "method name '%s': names are non-empty and those starting with '_' are the "
            "transport's",
            name));
      }
      if (table->contains(name)) {
        return absl::InvalidArgumentError(absl::StrFormat("method '%s' is named twice", name));
      }
      table->emplace(std::move(name), std::move(method));
    }
    absl::MutexLock lock(&serve_mu_);
    if (methods_ != nullptr) return absl::FailedPreconditionError("the server is serving already");
    methods_ = std::move(table);
    // Release: the socket thread reads the table through this pointer.
    served_.store(methods_.get(), std::memory_order_release);
    return absl::OkStatus();
  }

  int port() const { return port_; }
  const std::string& ipc_endpoint() const { return ipc_endpoint_; }

 private:
  struct Request {
    std::string identity;
    RpcHeader header;
    std::vector<zmq::message_t> frames;  // [header, tensors...]
    absl::Time deadline;
    PeerLimits::Ticket ticket;
  };

  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  void SocketLoop() {
    const int router_fd = router_.get(zmq::sockopt::fd);
    const int monitor_fd = monitor_.get(zmq::sockopt::fd);
    std::vector<zmq::message_t> frames;
    const auto send = [this](std::vector<std::vector<zmq::message_t>> replies) {
      for (std::vector<zmq::message_t>& reply : replies) rpc_internal::SendFrames(router_, reply);
    };
    outbox_->SetSocketThread();
    bool more = false;  // The router may hold more than one batch.
    while (!stopping()) {
      pollfd fds[3] = {
          {router_fd, POLLIN, 0}, {outbox_->fd(), POLLIN, 0}, {monitor_fd, POLLIN, 0}};
      poll(fds, 3, more ? 0 : -1);  // EINTR only; the turn below is harmless.
      // Before the messages: a connection's ACCEPTED comes before its first.
      CountConnections();
      absl::MutexLock lock(&outbox_->send_mu());
      if (fds[1].revents & POLLIN) send(outbox_->Take());
      // Every turn, not only when ZMQ_FD fired: another thread's send may
      // have taken in its notification.
      int i = 0;
      for (; i < kReceiveBatch && rpc_internal::ReceiveFrames(router_, &frames); ++i) {
        OnMessage(std::move(frames));
        frames = std::vector<zmq::message_t>();
        send(outbox_->TakeQueued());
      }
      more = i == kReceiveBatch;
    }
  }

  void SendNow(const std::string& identity, const RpcHeader& request, const absl::Status& status,
               RpcMessage reply, PeerLimits::Ticket ticket) {
    std::vector<zmq::message_t> frames =
        ReplyFrames(identity, request, status, std::move(reply), std::move(ticket));
    rpc_internal::SendFrames(router_, frames);
  }

  // The monitor's events: [event (uint16) and value (uint32), endpoint].
  void CountConnections() {
    std::vector<zmq::message_t> event;
    while (rpc_internal::ReceiveFrames(monitor_, &event)) {
      if (event.empty() || event[0].size() < 6) continue;
      uint16_t kind;
      int32_t fd;
      std::memcpy(&kind, event[0].data(), sizeof(kind));
      std::memcpy(&fd, event[0].data<char>() + sizeof(kind), sizeof(fd));
      if (kind == ZMQ_EVENT_ACCEPTED) connections_->Accepted(fd);
      if (kind == ZMQ_EVENT_DISCONNECTED) connections_->Disconnected(fd);
    }
  }

  // What `_hello` tells a connection: this machine's id and ipc endpoint
  // only to a peer on this machine, which may use them.
  std::string HelloFor(const zmq::message_t& frame) const {
    const std::string address = MessageProperty(frame, "Peer-Address");
    const bool local = address.empty() || address.starts_with("127.") || address == "::1" ||
                       local_addresses_.contains(address);
    return local ? local_hello_ : std::string();
  }

  // Runs on the socket thread: admits the call against its connection's
  // limits, answers what needs no handler, hands the rest to a worker. A
  // message without a readable request id is dropped.
  void OnMessage(std::vector<zmq::message_t> frames) {
    if (frames.size() < 2) return;
    absl::StatusOr<RpcHeader> header = DecodeHeader(frames[1]);
    if (!header.ok() || header->is_reply()) return;
    std::string identity(frames[0].data<char>(), frames[0].size());
    PeerLimits::Admission admission = peer_limits_->Admit(
        identity, MessageProperty(frames[1], "Peer-Address"), FrameBytes(frames));
    if (!admission.ticket) return;  // It does not even read its refusals.
    PeerLimits::Ticket& ticket = admission.ticket;
    if (!admission.refusal.ok()) {
      return SendNow(identity, *header, admission.refusal, {}, std::move(ticket));
    }
    int fd = -1;
    try {
      fd = frames[1].get(ZMQ_SRCFD);
    } catch (const zmq::error_t&) {
    }
    if (absl::Status refused = connections_->Check(fd); !refused.ok()) {
      return SendNow(identity, *header, refused, {}, std::move(ticket));
    }
    const std::string& method = header->method();
    if (method == "_ping") return SendNow(identity, *header, absl::OkStatus(), {}, std::move(ticket));
    if (method == "_hello") {
      return SendNow(identity, *header, absl::OkStatus(), {HelloFor(frames[1]), {}},
                     std::move(ticket));
    }
    // Acquire: pairs with the release in Serve.
    const MethodTable* table = served_.load(std::memory_order_acquire);
    if (table == nullptr) {
      return SendNow(identity, *header, absl::UnavailableError("the server is still starting"), {},
                     std::move(ticket));
    }
    const auto found = table->find(method);
    if (found == table->end()) {
      return SendNow(identity, *header,
                     absl::UnimplementedError(absl::StrFormat(
                         "unknown method '%s' on the server at port %d", method, port_)),
                     {}, std::move(ticket));
    }
    const RpcMethod* handler = &found->second;
    auto request = std::make_shared<Request>();
    request->identity = std::move(identity);
    request->header = *std::move(header);
    request->ticket = std::move(ticket);
    frames.erase(frames.begin());
    request->frames = std::move(frames);
    request->deadline = request->header.timeout_micros() > 0
                            ? absl::Now() + absl::Microseconds(request->header.timeout_micros())
                            : absl::InfiniteFuture();
    if (handler->runs_inline) return RunHandler(*handler, std::move(*request));
    workers_->Schedule([this, handler, request] { RunHandler(*handler, std::move(*request)); });
  }

  // Runs on a worker, or on the socket thread for inline methods.
  void RunHandler(const RpcMethod& method, Request request) {
    // A caller that has given up would ignore the reply.
    if (stopping() || absl::Now() > request.deadline) return;
    std::shared_ptr<Outbox> outbox = outbox_;
    std::string identity = std::move(request.identity);
    RpcHeader header = std::move(request.header);
    // Shared: an RpcDone is copyable. One never called gives the ticket
    // back when the last copy goes.
    auto ticket = std::make_shared<PeerLimits::Ticket>(std::move(request.ticket));
    RpcDone reply = [outbox, identity, header, ticket](absl::Status status, RpcMessage message) {
      outbox->Post(ReplyFrames(identity, header, status, std::move(message), std::move(*ticket)));
    };
    absl::StatusOr<std::vector<Tensor>> tensors = DecodeTensors(header, request.frames, 1);
    if (!tensors.ok()) {
      return reply(absl::InvalidArgumentError(absl::StrFormat(
                       "request for '%s': %s", header.method(), tensors.status().message())),
                   {});
    }
    RpcMessage message{header.body(), *std::move(tensors)};
    method.handler(std::move(message), std::move(reply));
  }

  using MethodTable = absl::flat_hash_map<std::string, RpcMethod>;
  // Set once by Serve; immutable afterwards.
  absl::Mutex serve_mu_;
  std::unique_ptr<MethodTable> methods_ ABSL_GUARDED_BY(serve_mu_);
  std::atomic<const MethodTable*> served_{nullptr};
  // Constant after Start.
  const PeerLimitOptions limit_options_;
  std::FILE* const log_;
  zmq::context_t context_;
  // Made in context_ and so declared after it.
  std::unique_ptr<CurveAuthenticator> authenticator_;
  zmq::socket_t router_;   // Used by the socket thread once it runs.
  zmq::socket_t monitor_;  // The router's connection events; as router_.
  int port_ = 0;
  std::string ipc_directory_;
  std::string ipc_endpoint_;
  std::string local_hello_;
  absl::flat_hash_set<std::string> local_addresses_;
  std::shared_ptr<Outbox> outbox_;
  std::shared_ptr<PeerLimits> peer_limits_;
  std::optional<ConnectionCap> connections_;  // Used by the socket thread only.

  std::atomic<bool> stopping_{false};
  std::optional<rpc_internal::WorkQueue> workers_;
  std::thread socket_thread_;
};

absl::StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(const RpcServerOptions& options,
                                                            std::vector<RpcMethod> methods) {
  auto impl = std::make_unique<Impl>(options);
  if (!methods.empty()) RETURN_IF_ERROR(impl->Serve(std::move(methods)));
  RETURN_IF_ERROR(impl->Start(options));
  return std::unique_ptr<RpcServer>(new RpcServer(std::move(impl)));
}

absl::Status RpcServer::Serve(std::vector<RpcMethod> methods) {
  return impl_->Serve(std::move(methods));
}

RpcServer::RpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RpcServer::~RpcServer() = default;

int RpcServer::port() const { return impl_->port(); }
std::string RpcServer::ipc_endpoint() const { return impl_->ipc_endpoint(); }

}  // namespace rill
