// One connection an RpcServer accepted: its socket, the reader of its
// input, and its output queue, which replies from any thread join and
// which is written without a copy of the tensors it carries (under CURVE,
// sealed as it is queued).
#ifndef RILL_TRANSPORT_SERVER_CONNECTION_H_
#define RILL_TRANSPORT_SERVER_CONNECTION_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "transport/connection_limits.h"
#include "transport/shm_arena.h"
#include "transport/zmtp/server_reader.h"
#include "zmq.hpp"

namespace rill {

// What a connection tells its server. Called on the socket thread, except
// want_output, which any thread that queues output may call.
struct ConnectionEvents {
  std::function<void(uint64_t id, zmtp::ReceivedMessage message)> message;
  std::function<void(uint64_t id, const RpcHeader& header, absl::Status why)> refused;
  // Output is queued that the socket would not take: write it when the
  // socket is writable (`wanted`), or stop watching (`!wanted`).
  std::function<void(uint64_t id, int fd, bool wanted)> want_output;
};

// Thread safety: Send may be called from any thread; the rest only from
// the server's socket thread.
class ServerConnection : private zmtp::ServerReader::Sink {
 public:
  // Takes `fd` (a connected, non-blocking socket). `name` is the peer's
  // address for logs and refusals; `local` whether it is on this machine;
  // `peer_pid` its process when the kernel names it (an ipc socket), else
  // 0: only then may its messages name its shared memory.
  ServerConnection(int fd, uint64_t id, std::string name, bool local, pid_t peer_pid,
                   std::shared_ptr<ConnectionLoad> load,
                   std::shared_ptr<const zmtp::CurveServerKeys> curve,
                   const ConnectionEvents* events);
  ~ServerConnection() override;
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  // Reads what the socket holds, up to about `budget` bytes; sets `more`
  // when it stopped at the budget. Errors: the peer closed (CANCELLED) or
  // broke the protocol or a limit (INVALID_ARGUMENT saying how); the
  // connection must then be closed.
  absl::Status Read(size_t budget, bool* more);
  // Queues a reply's frames, then writes what the socket takes now. The
  // ticket is given back once the last byte is written, or at Close.
  void Send(std::vector<zmq::message_t> frames, ConnectionLoad::Ticket ticket);
  // Writes queued output the socket takes now (it became writable).
  void Flush();
  // Writes what the socket takes at once (an ERROR the peer should read),
  // then closes it and drops what is queued. Idempotent.
  void Close();

  uint64_t id() const { return id_; }
  int fd() const { return fd_; }
  const std::string& name() const { return name_; }
  bool local() const { return local_; }
  // The peer's shared-memory arenas; null unless the kernel named its process.
  ShmPeer* shm_peer() const { return shm_peer_.get(); }
  ConnectionLoad& load() { return *load_; }
  bool handshake_done() const { return reader_.handshake_done(); }
  // Part of a message (or the handshake) has arrived and the rest has not.
  bool mid_message() const { return reader_.mid_message(); }
  bool has_output();
  absl::Time opened() const { return opened_; }
  // When bytes last arrived.
  absl::Time last_input() const { return last_input_; }
  // Messages received whole (answered or refused).
  int64_t requests() const { return requests_; }
  // Over the server's connection cap: its calls are refused.
  bool over_cap() const { return over_cap_; }
  void set_over_cap(bool over) { over_cap_ = over; }

 private:
  struct Chunk {
    std::string owned;              // Frame headers, small frames, sealed frames.
    zmq::message_t borrowed;        // A tensor's bytes, sent without a copy.
    size_t offset = 0;              // Bytes of it written.
    ConnectionLoad::Ticket ticket;  // On a reply's last chunk.
    size_t size() const { return owned.empty() ? borrowed.size() : owned.size(); }
    const char* data() const {
      return owned.empty() ? static_cast<const char*>(borrowed.data()) : owned.data();
    }
  };

  void SendHandshake(std::string bytes) override;
  void HandshakeDone() override {}
  void Message(zmtp::ReceivedMessage message) override;
  void Refused(const RpcHeader& header, absl::Status why) override;

  // Appends `frames` as chunks: plain, or sealed under CURVE.
  void Encode(std::vector<zmq::message_t>& frames) ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);
  // Writes until the queue is empty or the socket is full; false when
  // the socket failed (the reader will see it too).
  bool WriteQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);
  void Queue(std::vector<Chunk> chunks, ConnectionLoad::Ticket ticket);

  const uint64_t id_;
  const std::string name_;
  const bool local_;
  const std::shared_ptr<ConnectionLoad> load_;
  const ConnectionEvents* const events_;
  const absl::Time opened_;
  const int fd_;
  const std::unique_ptr<ShmPeer> shm_peer_;

  // Before reader_, which sends the greeting as it is made.
  absl::Mutex out_mu_;
  bool closed_ ABSL_GUARDED_BY(out_mu_) = false;
  std::deque<Chunk> output_ ABSL_GUARDED_BY(out_mu_);
  bool want_output_ ABSL_GUARDED_BY(out_mu_) = false;

  // The socket thread's.
  zmtp::ServerReader reader_;
  absl::Time last_input_;
  int64_t requests_ = 0;
  bool over_cap_ = false;
};

}  // namespace rill

#endif  // RILL_TRANSPORT_SERVER_CONNECTION_H_
