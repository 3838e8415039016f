// The RPC client's record of its calls: what a finished call hands back,
// the calls its I/O thread has sent or holds back, and the limit on large
// transfers in flight that CallSync shares.
#ifndef RILL_TRANSPORT_RPC_CLIENT_CALLS_H_
#define RILL_TRANSPORT_RPC_CLIENT_CALLS_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "transport/proto/rpc.pb.h"
#include "transport/rpc.h"
#include "transport/shm_arena.h"
#include "zmq.hpp"

namespace rill::rpc_internal {

// What the I/O thread hands back for a call: the reply's frames are decoded
// by whoever receives this, off the I/O thread.
struct Completion {
  absl::Status status;
  RpcHeader header;
  std::vector<zmq::message_t> frames;  // [header, tensors...] when status is OK.
};
using Finish = std::function<void(Completion)>;

// The reply a completion carries, or its error; INTERNAL naming the method
// and the peer when the reply's tensor frames are malformed.
absl::StatusOr<RpcMessage> DecodeReply(Completion completion, const std::string& method,
                                       const std::string& address);

// DEADLINE_EXCEEDED for a call to `address` that started at `start`.
absl::Status CallDeadlineExceeded(const std::string& method, const std::string& address,
                                  absl::Time start, absl::Time deadline);

// Big transfers go one or two at a time: more of them in flight on one
// connection only slows each down (2-4x measured on 2 cores).
inline constexpr size_t kLargeBytes = size_t{256} << 10;
inline constexpr int kMaxLargeInFlight = 2;

// A call on its way to the socket.
struct Outgoing {
  std::string method;
  RpcHeader header;  // body and tensor metadata filled in.
  std::vector<zmq::message_t> tensor_frames;
  absl::Time deadline;
  Finish finish;
  // The arena some of its tensors wait in (kept while it is sent), and the
  // tensors, encoded again as frames if the call cannot go by ipc.
  std::shared_ptr<ShmArena> shm;
  std::vector<Tensor> tensors;
};

// A call sent and waiting for its reply.
struct Pending {
  std::string method;
  absl::Time start;
  absl::Time deadline;
  Finish finish;
  bool large = false;
};

// Whether `call` carries kLargeBytes or more of tensors.
bool IsLarge(const Outgoing& call);

// The calls of one connection: those in flight, by request id and by
// deadline, and the large calls held back while kMaxLargeInFlight large
// ones are in flight (in order: a held call is never overtaken by a later
// large one). Thread safety: none; the client guards it with its io_mu_.
class CallTable {
 public:
  // No call in flight (held calls do not count).
  bool empty() const { return pending_.empty(); }
  void Add(uint64_t id, Pending call);
  // The call in flight with `id`, removed; nullopt for a ping's reply or
  // a call that already failed.
  std::optional<Pending> Take(uint64_t id);
  // The calls in flight whose deadline is at or before `now`, removed,
  // earliest deadline first.
  std::vector<Pending> TakeExpired(absl::Time now);
  // Every call in flight, removed.
  std::vector<Pending> TakeAll();

  // Whether `call` must wait for room among the large calls in flight.
  bool MustHold(const Outgoing& call) const;
  void Hold(Outgoing call);
  // The held calls whose deadline is at or before `now`, removed.
  std::vector<Outgoing> TakeExpiredHeld(absl::Time now);
  // The first held call when there is room for it, removed.
  std::optional<Outgoing> TakeReleasable();
  // Every held call, removed, in order.
  std::vector<Outgoing> TakeAllHeld();

  // The earliest of `bound` and the deadlines of the calls in flight and
  // held.
  absl::Time NextDeadline(absl::Time bound) const;

 private:
  int LargeInFlight() const;

  std::unordered_map<uint64_t, Pending> pending_;
  std::set<std::pair<absl::Time, uint64_t>> deadlines_;
  std::deque<Outgoing> held_;
};

}  // namespace rill::rpc_internal

#endif  // RILL_TRANSPORT_RPC_CLIENT_CALLS_H_
