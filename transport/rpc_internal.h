// Pieces the RPC server and client share: a small worker pool, an eventfd
// that wakes a socket thread from other threads, socket setup, and the
// identity of this machine.
#ifndef RILL_TRANSPORT_RPC_INTERNAL_H_
#define RILL_TRANSPORT_RPC_INTERNAL_H_

#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <deque>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "transport/curve.h"
#include "transport/proto/rpc.pb.h"
#include "transport/rpc.h"
#include "zmq.hpp"
#include "zmq_addon.hpp"

namespace rill::rpc_internal {

// Runs tasks on a fixed set of threads. The destructor runs every task
// scheduled before or during it, then joins. Thread safety: Schedule may
// be called from any thread, including from a task.
class WorkQueue {
 public:
  explicit WorkQueue(int threads) {
    for (int i = 0; i < threads; ++i) threads_.emplace_back([this] { Loop(); });
  }
  ~WorkQueue() {
    {
      absl::MutexLock lock(&mu_);
      stopping_ = true;
    }
    for (std::thread& thread : threads_) thread.join();
  }
  WorkQueue(const WorkQueue&) = delete;
  WorkQueue& operator=(const WorkQueue&) = delete;

  void Schedule(std::function<void()> task) {
    absl::MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }

 private:
  void Loop() {
    for (;;) {
      std::function<void()> task;
      {
        absl::MutexLock lock(&mu_);
        mu_.Await(absl::Condition(this, &WorkQueue::HasWorkOrStopping));
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }

  bool HasWorkOrStopping() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || !tasks_.empty();
  }

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

// An eventfd that a socket thread polls beside its sockets. Thread safety:
// Signal from any thread; Drain from the polling thread.
class Wakeup {
 public:
  static absl::StatusOr<std::unique_ptr<Wakeup>> Create() {
    const int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (fd < 0) {
      return absl::ResourceExhaustedError(
          absl::StrFormat("cannot create an eventfd: %s", std::strerror(errno)));
    }
    return std::unique_ptr<Wakeup>(new Wakeup(fd));
  }
  ~Wakeup() { close(fd_); }
  Wakeup(const Wakeup&) = delete;
  Wakeup& operator=(const Wakeup&) = delete;

  void Signal() {
    const uint64_t one = 1;
    // Only fails when the counter would overflow, and then it is set anyway.
    [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
  }
  void Drain() {
    uint64_t count;
    [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof(count));
  }
  int fd() const { return fd_; }

 private:
  explicit Wakeup(int fd) : fd_(fd) {}
  const int fd_;
};

// Boot id and host name: equal only for processes on the same machine
// (and the same boot, so that a stale endpoint file is never trusted).
inline std::string LocalHostId() {
  std::string boot_id;
  std::ifstream file("/proc/sys/kernel/random/boot_id");
  std::getline(file, boot_id);
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return boot_id + "/" + host;
}

// INVALID_ARGUMENT unless `host_port` is "HOST:PORT" with a port in
// [0, 65535].
inline absl::Status CheckHostPort(std::string_view host_port, std::string_view what) {
  const size_t colon = host_port.rfind(':');
  const std::string_view port =
      colon == std::string_view::npos ? std::string_view() : host_port.substr(colon + 1);
  bool valid = colon != std::string_view::npos && colon > 0 && !port.empty() && port.size() <= 5;
  for (char c : port) valid = valid && c >= '0' && c <= '9';
  if (valid && std::stoi(std::string(port)) <= 65535) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrFormat("%s '%s' is not HOST:PORT", what, host_port));
}

// Options every rill socket gets: a closed socket drops what it has not
// sent, outgoing messages are never dropped for a full queue (the callers'
// deadlines bound them), and a frame over `max_message_bytes` disconnects
// the peer.
inline void ConfigureSocket(zmq::socket_t& socket, int64_t max_message_bytes) {
  socket.set(zmq::sockopt::linger, 0);
  socket.set(zmq::sockopt::sndhwm, 0);
  socket.set(zmq::sockopt::maxmsgsize, max_message_bytes);
}

// A client's socket: ConfigureSocket, and CURVE when the options have keys.
inline void ConfigureClientSocket(zmq::socket_t& socket, const RpcClientOptions& options) {
  ConfigureSocket(socket, options.max_message_bytes);
  if (options.curve != nullptr) UseCurveAsClient(socket, *options.curve);
}

// Sends a multipart message without blocking. False when ZeroMQ refused it.
inline bool SendFrames(zmq::socket_t& socket, std::vector<zmq::message_t>& frames) {
  try {
    for (size_t i = 0; i < frames.size(); ++i) {
      const zmq::send_flags flags = i + 1 < frames.size()
                                        ? zmq::send_flags::sndmore | zmq::send_flags::dontwait
                                        : zmq::send_flags::dontwait;
      if (!socket.send(frames[i], flags)) return false;
    }
  } catch (const zmq::error_t&) {
    return false;
  }
  return true;
}

// Receives one multipart message if one is waiting; false otherwise.
inline bool ReceiveFrames(zmq::socket_t& socket, std::vector<zmq::message_t>* frames) {
  frames->clear();
  try {
    return zmq::recv_multipart(socket, std::back_inserter(*frames), zmq::recv_flags::dontwait)
        .has_value();
  } catch (const zmq::error_t&) {
    return false;
  }
}

// Whether `socket` holds a message. Another thread polls the socket's
// ZMQ_FD; sending on the socket may consume the notification that would
// have woken it, so a sender checks this and wakes it itself.
inline bool HasInput(zmq::socket_t& socket) {
  try {
    return (socket.get(zmq::sockopt::events) & ZMQ_POLLIN) != 0;
  } catch (const zmq::error_t&) {
    return true;  // Let the polling thread look.
  }
}

// A reply's status as the handler produced it; codes from a newer peer
// that absl does not know read as UNKNOWN.
inline absl::Status StatusFromReply(const RpcHeader& header) {
  const int code = header.status_code();
  if (code == 0) return absl::OkStatus();
  if (code < 0 || code > static_cast<int>(absl::StatusCode::kUnauthenticated)) {
    return absl::UnknownError(header.status_message());
  }
  return absl::Status(static_cast<absl::StatusCode>(code), header.status_message());
}

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_RPC_INTERNAL_H_
