// The server: one socket thread owns the listening sockets and reads every
// connection (epoll); it answers the built-in methods and hands calls to
// worker threads, or runs inline methods itself. Replies are written by
// whichever thread makes them when the socket takes them, else by the
// socket thread once it is writable. The server speaks ZMTP itself (its
// clients are ZeroMQ DEALERs) so that it sees every frame as it arrives and
// keeps nothing a message's header did not declare or a limit does not
// allow; CURVE is spoken the same way.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "transport/connection_limits.h"
#include "transport/connection_table.h"
#include "transport/handshake_budget.h"
#include "transport/host_address.h"
#include "transport/rate_limited_log.h"
#include "transport/ipc_directory.h"
#include "transport/listen_socket.h"
#include "transport/rpc.h"
#include "transport/rpc_internal.h"
#include "transport/server_connection.h"
#include "transport/wire.h"
#include "transport/zmtp/curve_server.h"

namespace rill {
namespace {

using rpc_internal::Wakeup;

constexpr uint64_t kTcpListener = 1;
constexpr uint64_t kIpcListener = 2;
constexpr uint64_t kWakeupId = 3;
constexpr uint64_t kFirstConnection = 16;
// Bytes and messages read from one connection per turn, so that one fast
// sender does not hold the others back: a megabyte of six-byte messages
// would be 175,000 of them.
constexpr size_t kReadBudget = size_t{1} << 20;
constexpr int64_t kReadMessages = 256;

std::vector<zmq::message_t> ReplyFrames(RpcHeader header, const absl::Status& status,
                                        RpcMessage reply, ConnectionLoad::Ticket& ticket) {
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
  frames.reserve(tensor_frames.size() + 1);
  frames.push_back(EncodeHeader(header));
  int64_t bytes = static_cast<int64_t>(frames[0].size());
  for (zmq::message_t& frame : tensor_frames) {
    bytes += static_cast<int64_t>(frame.size());
    frames.push_back(std::move(frame));
  }
  ticket.Add(bytes);
  return frames;
}

}  // namespace

class RpcServer::Impl {
 public:
  explicit Impl(const RpcServerOptions& options)
      : options_(options),
        log_(OrDefault(options.log)),
        workers_(std::in_place, std::max(options.handler_threads, 1)) {
    events_.message = [this](uint64_t id, zmtp::ReceivedMessage message) {
      OnMessage(id, std::move(message));
    };
    events_.refused = [this](uint64_t id, const RpcHeader& header, absl::Status why,
                             ConnectionLoad::Ticket ticket) {
      if (std::shared_ptr<ServerConnection> connection = connections_->Find(id)) {
        ReleaseSharedTensors(header, connection->shm_peer());
      }
      if (ticket) Reply(id, header, why, {}, std::move(ticket));
    };
    events_.handshake_done = [this](uint64_t id) { connections_->HandshakeDone(id); };
    events_.watch = [this](uint64_t id, int fd, bool input, bool output) {
      epoll_event event{};
      event.events = (input ? EPOLLIN : 0u) | (output ? EPOLLOUT : 0u);
      event.data.u64 = id;
      epoll_ctl(epoll_fd_, EPOLL_CTL_MOD, fd, &event);
    };
  }

  ~Impl() {
    stopping_.store(true, std::memory_order_release);  // Read by workers and the socket thread.
    if (wakeup_ != nullptr) wakeup_->Signal();
    if (socket_thread_.joinable()) socket_thread_.join();
    // The socket thread closed every connection: replies still to come
    // are dropped.
    workers_.reset();  // Runs the queued tasks, which see stopping_ and skip.
    connections_.reset();
    for (int fd : {tcp_fd_, ipc_fd_, epoll_fd_}) {
      if (fd >= 0) close(fd);
    }
    if (!ipc_directory_.empty()) {
      unlink((ipc_directory_ + "/rpc.sock").c_str());
      rmdir(ipc_directory_.c_str());
    }
  }

  absl::Status Start() {
    const std::string& address = options_.bind_address;
    if (!address.starts_with("tcp://")) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bind address '%s' does not start with tcp://", address));
    }
    if (options_.curve != nullptr) {
      ASSIGN_OR_RETURN(curve_, zmtp::CurveServerKeys::FromZ85(*options_.curve));
    } else if (!options_.insecure && !IsLoopbackHost(address.substr(6))) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "refusing to serve %s without CURVE keys: anyone who reaches it could read and change "
          "every variable and read every tensor on the wire. Give the cluster keys "
          "(--curve_keys DIR, made by `rill keygen`), or say the network is trusted (--insecure)",
          address.substr(6)));
    }
    LimitProtobufLogs();
    limits_ = options_.limits;
    const int file_limit = rpc_internal::RaiseFileLimit();
    // Descriptors beyond the connections: listeners, epoll, this process's
    // own clients, files.
    const int reserved = std::min(256, file_limit / 4);
    if (limits_.max_connections > file_limit - reserved) {
      limits_.max_connections = std::max(1, file_limit - reserved);
      log_->Log(
          "rpc server: serving at most %d connections at once, not %d: this process may open %d "
          "files (ulimit -n)",
          limits_.max_connections, options_.limits.max_connections, file_limit);
    }
    ASSIGN_OR_RETURN(wakeup_, Wakeup::Create());
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("cannot create an epoll instance: %s", std::strerror(errno)));
    }
    ASSIGN_OR_RETURN(tcp_fd_, rpc_internal::ListenTcp(address.substr(6)));
    port_ = rpc_internal::BoundPort(tcp_fd_);
    load_ = ServerLoad::Create(limits_, port_, log_);
    connections_.emplace(load_, [this](const ServerConnection& closing) {
      epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, closing.fd(), nullptr);
      Closed(closing.id());
    });
    local_addresses_ = rpc_internal::LocalAddresses();
    HelloReply hello;
    hello.set_host_id(rpc_internal::LocalHostId());
    if (options_.bind_ipc) {
      ASSIGN_OR_RETURN(ipc_directory_,
                       rpc_internal::MakeIpcDirectory(rpc_internal::IpcBaseDirectory()));
      ASSIGN_OR_RETURN(ipc_fd_, rpc_internal::ListenIpc(ipc_directory_ + "/rpc.sock"));
      ipc_endpoint_ = "ipc://" + ipc_directory_ + "/rpc.sock";
      hello.set_ipc_endpoint(ipc_endpoint_);
    }
    local_hello_ = hello.SerializeAsString();
    Watch(tcp_fd_, kTcpListener, EPOLLIN);
    if (ipc_fd_ >= 0) Watch(ipc_fd_, kIpcListener, EPOLLIN);
    Watch(wakeup_->fd(), kWakeupId, EPOLLIN);
    try {
      socket_thread_ = std::thread([this] { SocketLoop(); });
    } catch (const std::system_error& e) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("cannot start the server's socket thread: %s", e.what()));
    }
    return absl::OkStatus();
  }

  absl::Status Serve(std::vector<RpcMethod> methods, RpcConnectionClosed closed) {
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
    closed_ = std::move(closed);
    // Release: the socket thread reads the table (and closed_) through
    // this pointer.
    served_.store(methods_.get(), std::memory_order_release);
    return absl::OkStatus();
  }

  int port() const { return port_; }
  const std::string& ipc_endpoint() const { return ipc_endpoint_; }

 private:
  struct Request {
    std::shared_ptr<ServerConnection> connection;
    RpcHeader header;
    absl::StatusOr<std::vector<Tensor>> tensors;
    absl::Time deadline;
    ConnectionLoad::Ticket ticket;
  };

  bool stopping() const { return stopping_.load(std::memory_order_acquire); }

  void Watch(int fd, uint64_t id, uint32_t events) {
    epoll_event event{};
    event.events = events;
    event.data.u64 = id;
    epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &event);
  }

  void SocketLoop() {
    constexpr int kMaxEvents = 256;
    epoll_event events[kMaxEvents];
    std::vector<uint64_t> more;  // Connections that stopped at their read budget.
    absl::Time next_check = absl::Now();
    while (!stopping()) {
      const absl::Time now = absl::Now();
      int timeout = 0;
      if (more.empty()) {
        timeout = static_cast<int>(
            std::clamp(absl::ToInt64Milliseconds(next_check - now), int64_t{0}, int64_t{1000}));
      }
      const int n = epoll_wait(epoll_fd_, events, kMaxEvents, timeout);
      std::vector<uint64_t> ready;
      ready.swap(more);
      for (int i = 0; i < n; ++i) {
        const uint64_t id = events[i].data.u64;
        if (id == kTcpListener || id == kIpcListener) {
          Accept(id == kTcpListener ? tcp_fd_ : ipc_fd_, id == kIpcListener);
        } else if (id == kWakeupId) {
          wakeup_->Drain();
        } else {
          std::shared_ptr<ServerConnection> connection = connections_->Find(id);
          if (connection == nullptr) continue;
          if (events[i].events & EPOLLOUT) connection->Flush();
          if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) ready.push_back(id);
        }
      }
      for (uint64_t id : ready) {
        std::shared_ptr<ServerConnection> connection = connections_->Find(id);
        // One whose output is over its cap is read once its peer reads.
        if (connection == nullptr || connection->reading_paused()) continue;
        bool again = false;
        absl::Status status = connection->Read(kReadBudget, kReadMessages, &again);
        if (!status.ok()) {
          connections_->Drop(id, status);
        } else if (again) {
          more.push_back(id);
        }
      }
      if (absl::Now() >= next_check) {
        connections_->Check(absl::Now());
        next_check = absl::Now() + std::clamp(std::min(limits_.idle_timeout,
                                                       limits_.handshake_timeout) / 4,
                                              absl::Milliseconds(50), absl::Seconds(1));
      }
      if (accept_paused_ && absl::Now() >= accept_resume_) {
        accept_paused_ = false;
        Watch(tcp_fd_, kTcpListener, EPOLLIN);
        if (ipc_fd_ >= 0) Watch(ipc_fd_, kIpcListener, EPOLLIN);
      }
    }
    connections_->CloseAll();
  }

  void Accept(int listener, bool ipc) {
    for (;;) {
      sockaddr_storage address{};
      socklen_t length = sizeof(address);
      const int fd = accept4(listener, reinterpret_cast<sockaddr*>(&address), &length,
                             SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR || errno == ECONNABORTED) continue;
        if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
          // Out of descriptors: a connection that has not finished its
          // handshake makes room; without one, stop listening for a moment
          // rather than spin on a connection that cannot be taken.
          const int error = errno;
          if (connections_->CloseOneInHandshake(error)) continue;
          load_->log().Log(
              "rpc server :%d: cannot accept a connection (%s, %d open): pausing new "
              "connections for 100 ms",
              port_, std::strerror(error), static_cast<int>(connections_->size()));
          epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, tcp_fd_, nullptr);
          if (ipc_fd_ >= 0) epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, ipc_fd_, nullptr);
          accept_paused_ = true;
          accept_resume_ = absl::Now() + absl::Milliseconds(100);
        }
        return;
      }
      rpc_internal::PeerName peer{"ipc", true, "ipc"};
      // The kernel names an ipc peer's process: the one whose shared
      // memory its messages may name.
      pid_t peer_pid = 0;
      if (ipc) {
        ucred credentials{};
        socklen_t size = sizeof(credentials);
        if (options_.accept_shared_memory &&
            getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &credentials, &size) == 0) {
          peer_pid = credentials.pid;
        }
      } else {
        const int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        peer = rpc_internal::NamePeer(address, local_addresses_);
        if (curve_ != nullptr && !handshake_budget_.Take(peer.host, absl::Now())) {
          // Its handshake would cost crypto this source has used up.
          ::close(fd);
          load_->log().Log(
              "rpc server :%d: closed a connection from %s: over %d CURVE handshakes a second "
              "from that address (handshakes_per_source)",
              port_, peer.host, limits_.handshakes_per_source);
          continue;
        }
      }
      const uint64_t id = next_id_++;
      auto connection =
          std::make_shared<ServerConnection>(fd, id, peer.address, peer.local, peer_pid,
                                             load_->Connect(peer.address), curve_, &events_);
      Watch(fd, id, EPOLLIN);
      connections_->Add(std::move(connection));
    }
  }

  // What `_hello` tells a connection: this machine's id and ipc endpoint
  // only to a peer on this machine, which may use them.
  std::string HelloFor(const ServerConnection& connection) const {
    return connection.local() ? local_hello_ : std::string();
  }

  void Reply(uint64_t id, const RpcHeader& request, const absl::Status& status, RpcMessage reply,
             ConnectionLoad::Ticket ticket) {
    std::shared_ptr<ServerConnection> connection = connections_->Find(id);
    if (connection == nullptr) return;
    std::vector<zmq::message_t> frames = ReplyFrames(request, status, std::move(reply), ticket);
    connection->Send(std::move(frames), std::move(ticket));
  }

  // Runs on the socket thread: admits the call against its connection's
  // limits, answers what needs no handler, hands the rest to a worker.
  void OnMessage(uint64_t id, zmtp::ReceivedMessage message) {
    std::shared_ptr<ServerConnection> connection = connections_->Find(id);
    if (connection == nullptr) return;
    // Decoded first, so that a message refused or dropped below gives its
    // shared-memory blocks back to the sender as its tensors go.
    absl::StatusOr<std::vector<Tensor>> tensors =
        DecodeTensors(message.header, message.tensor_frames, 0, connection->shm_peer());
    ConnectionLoad::Admission admission = connection->load().AdmitCall(std::move(message.ticket));
    if (!admission.ticket) return;  // It does not even read its refusals.
    ConnectionLoad::Ticket& ticket = admission.ticket;
    RpcHeader& header = message.header;
    if (!admission.refusal.ok()) return Reply(id, header, admission.refusal, {}, std::move(ticket));
    if (connection->over_cap()) {
      return Reply(id, header,
                   absl::ResourceExhaustedError(absl::StrFormat(
                       "the server at port %d serves at most %d connections at once and has %d "
                       "open, none idle for %s; try again when one closes",
                       port_, limits_.max_connections, connections_->served(),
                       absl::FormatDuration(limits_.idle_timeout))),
                   {}, std::move(ticket));
    }
    const std::string& method = header.method();
    if (method == "_ping") return Reply(id, header, absl::OkStatus(), {}, std::move(ticket));
    if (method == "_hello") {
      return Reply(id, header, absl::OkStatus(), {HelloFor(*connection), {}}, std::move(ticket));
    }
    // Its one-byte block, decoded above, says whether this server maps the
    // client's arena.
    if (method == "_shm_probe") return Reply(id, header, tensors.status(), {}, std::move(ticket));
    // Acquire: pairs with the release in Serve.
    const MethodTable* table = served_.load(std::memory_order_acquire);
    if (table == nullptr) {
      return Reply(id, header, absl::UnavailableError("the server is still starting"), {},
                   std::move(ticket));
    }
    const auto found = table->find(method);
    if (found == table->end()) {
      return Reply(id, header,
                   absl::UnimplementedError(absl::StrFormat(
                       "unknown method '%s' on the server at port %d", PeerText(method), port_)),
                   {}, std::move(ticket));
    }
    const RpcMethod* handler = &found->second;
    auto request = std::make_shared<Request>();
    request->connection = std::move(connection);
    request->header = std::move(header);
    request->tensors = std::move(tensors);
    request->ticket = std::move(ticket);
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
    std::shared_ptr<ServerConnection> connection = std::move(request.connection);
    RpcHeader header = std::move(request.header);
    // Shared: an RpcDone is copyable. One never called gives the ticket
    // back when the last copy goes.
    auto ticket = std::make_shared<ConnectionLoad::Ticket>(std::move(request.ticket));
    RpcDone reply = [connection, header, ticket](absl::Status status, RpcMessage message) {
      std::vector<zmq::message_t> frames = ReplyFrames(header, status, std::move(message), *ticket);
      connection->Send(std::move(frames), std::move(*ticket));
    };
    if (!request.tensors.ok()) {
      return reply(
          absl::InvalidArgumentError(absl::StrFormat("request for '%s': %s", header.method(),
                                                     request.tensors.status().message())),
          {});
    }
    RpcMessage message{header.body(), *std::move(request.tensors), connection->id()};
    method.handler(std::move(message), std::move(reply));
  }

  // Runs on the socket thread as a connection closes: its inline calls
  // were handed over already, so the service may end what they run. On a
  // worker, since ending a step may take a while.
  void Closed(uint64_t id) {
    // Acquire: pairs with the release in Serve, which set closed_.
    if (served_.load(std::memory_order_acquire) == nullptr || !closed_) return;
    workers_->Schedule([this, id] {
      if (!stopping()) closed_(id);
    });
  }

  using MethodTable = absl::flat_hash_map<std::string, RpcMethod>;
  // Set once by Serve; immutable afterwards.
  absl::Mutex serve_mu_;
  std::unique_ptr<MethodTable> methods_ ABSL_GUARDED_BY(serve_mu_);
  std::atomic<const MethodTable*> served_{nullptr};
  RpcConnectionClosed closed_;  // Set with methods_; read after served_.
  // Constant after Start.
  const RpcServerOptions options_;
  ConnectionLimitOptions limits_;  // options_.limits, fitted to the file limit.
  LogSink* const log_;
  std::shared_ptr<const zmtp::CurveServerKeys> curve_;
  std::shared_ptr<ServerLoad> load_;
  ConnectionEvents events_;
  std::unique_ptr<Wakeup> wakeup_;
  int epoll_fd_ = -1;
  int tcp_fd_ = -1;
  int ipc_fd_ = -1;
  int port_ = 0;
  std::string ipc_directory_;
  std::string ipc_endpoint_;
  std::string local_hello_;
  absl::flat_hash_set<std::string> local_addresses_;

  // The socket thread's (made in Start).
  std::optional<ConnectionTable> connections_;
  uint64_t next_id_ = kFirstConnection;
  bool accept_paused_ = false;
  HandshakeBudget handshake_budget_{options_.limits.handshakes_per_source};
  absl::Time accept_resume_;

  std::atomic<bool> stopping_{false};
  std::optional<rpc_internal::WorkQueue> workers_;
  std::thread socket_thread_;
};

absl::StatusOr<std::unique_ptr<RpcServer>> RpcServer::Start(const RpcServerOptions& options,
                                                            std::vector<RpcMethod> methods,
                                                            RpcConnectionClosed closed) {
  auto impl = std::make_unique<Impl>(options);
  if (!methods.empty()) RETURN_IF_ERROR(impl->Serve(std::move(methods), std::move(closed)));
  RETURN_IF_ERROR(impl->Start());
  return std::unique_ptr<RpcServer>(new RpcServer(std::move(impl)));
}

absl::Status RpcServer::Serve(std::vector<RpcMethod> methods, RpcConnectionClosed closed) {
  return impl_->Serve(std::move(methods), std::move(closed));
}

RpcServer::RpcServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
RpcServer::~RpcServer() = default;

int RpcServer::port() const { return impl_->port(); }
std::string RpcServer::ipc_endpoint() const { return impl_->ipc_endpoint(); }

}  // namespace rill
