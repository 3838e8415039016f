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
// watch, which any thread that queues or writes output may call.
struct ConnectionEvents {
  std::function<void(uint64_t id, zmtp::ReceivedMessage message)> message;
  // A message the reader refused, with the place of its refusal reply
  // (none: it is dropped unanswered, the peer not reading its refusals).
  std::function<void(uint64_t id, const RpcHeader& header, absl::Status why,
                     ConnectionLoad::Ticket ticket)>
      refused;
  // The handshake is over.
  std::function<void(uint64_t id)> handshake_done;
  // What the socket should be watched for changed: `input` unless the
  // queued output is over max_output_bytes (the peer reads first),
  // `output` while output is queued that the socket would not take.
  // Called under the connection's output lock.
  std::function<void(uint64_t id, int fd, bool input, bool output)> watch;
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

  // Reads what the socket holds, up to about `budget` bytes or `messages`
  // messages; sets `more` when it stopped at either. Errors: the peer
  // closed (CANCELLED) or broke the protocol or a limit (INVALID_ARGUMENT
  // saying how); the connection must then be closed.
  absl::Status Read(size_t budget, int64_t messages, bool* more);
  // Queues a reply's frames, then writes what the socket takes now. The
  // ticket is given back once the last byte is written, or at Close.
  void Send(std::vector<zmq::message_t> frames, ConnectionLoad::Ticket ticket);
  // Queues a PONG for a PING's `context`, unless one is queued already.
  void Pong(std::string context) override;
  // Writes queued output the socket takes now (it became writable).
  void Flush();
  // Writes what the socket takes at once (an ERROR the peer should read),
  // then closes it and drops what is queued. Idempotent.
  void Close();
  // Makes Close reset the connection: what the kernel still holds for a
  // peer that does not read is freed at once, and the peer learns of the
  // close without reading first.
  void ResetOnClose();

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
  // Since when queued output has not moved (InfiniteFuture when none is
  // queued): a peer that does not read holds no place for long.
  absl::Time output_stalled_since();
  // Its output is over max_output_bytes: its input waits.
  bool reading_paused();
  // The most output it ever had queued, in bytes.
  int64_t peak_output_bytes();
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
    bool pong = false;              // Holds the one queued PONG (never merged into).
    size_t size() const { return owned.empty() ? borrowed.size() : owned.size(); }
    const char* data() const {
      return owned.empty() ? static_cast<const char*>(borrowed.data()) : owned.data();
    }
  };

  void SendHandshake(std::string bytes) override;
  void HandshakeDone() override;
  void Message(zmtp::ReceivedMessage message) override;
  void Refused(const RpcHeader& header, absl::Status why) override;

  // Appends `frames` as chunks: plain, or sealed under CURVE. `flags`
  // are the last frame's (kCommand for a PONG).
  void Encode(std::vector<zmq::message_t>& frames, uint8_t flags = 0)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);
  // Writes until the queue is empty or the socket is full; false when
  // the socket failed (the reader will see it too).
  bool WriteQueued() ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);
  // After output was queued (into an empty queue: `was_empty`): writes
  // what the socket takes, and watches the socket for what it needs now.
  void Queued(bool was_empty) ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);
  void UpdateWatch() ABSL_EXCLUSIVE_LOCKS_REQUIRED(out_mu_);

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
  int64_t queued_bytes_ ABSL_GUARDED_BY(out_mu_) = 0;  // Of output_, not yet written.
  int64_t peak_output_bytes_ ABSL_GUARDED_BY(out_mu_) = 0;
  absl::Time output_moved_ ABSL_GUARDED_BY(out_mu_);  // When output was queued into an empty queue, or written.
  bool pong_queued_ ABSL_GUARDED_BY(out_mu_) = false;
  // What the socket is watched for.
  bool watch_input_ ABSL_GUARDED_BY(out_mu_) = true;
  bool watch_output_ ABSL_GUARDED_BY(out_mu_) = false;

  // The socket thread's.
  zmtp::ServerReader reader_;
  absl::Time last_input_;
  int64_t requests_ = 0;
  bool over_cap_ = false;
};

}  // namespace rill

#endif  // RILL_TRANSPORT_SERVER_CONNECTION_H_
