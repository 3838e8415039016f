// Rendezvous: where a _Send leaves a tensor under a key and the matching
// _Recv picks it up, within one step. Send never blocks; Recv is async.
#ifndef RILL_KERNELS_FRAMEWORK_RENDEZVOUS_H_
#define RILL_KERNELS_FRAMEWORK_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace rill {

// The parts of a rendezvous key. Keys read
// "src_device;src_incarnation;dst_device;tensor_name;frame_id:iter_id",
// the incarnation as 16 hex digits, as TensorFlow writes them.
struct RendezvousKey {
  std::string src_device;
  uint64_t src_incarnation = 0;
  std::string dst_device;
  std::string tensor_name;
  int64_t frame_id = 0;
  int64_t iter_id = 0;

  std::string ToString() const;
  // INVALID_ARGUMENT naming the key and the part that is wrong.
  static absl::StatusOr<RendezvousKey> Parse(std::string_view key);
};

// A key as a _Send or _Recv kernel holds it, prepared once when the kernel
// is built rather than parsed on every step: its text (what identifies it
// in a rendezvous and on the wire) and the task of its destination, which
// decides whether a sent tensor stays in this task.
struct PreparedRendezvousKey {
  std::string text;
  std::string dst_task;  // "/job:J/replica:R/task:T".

  // INVALID_ARGUMENT when the destination device names no task.
  static absl::StatusOr<PreparedRendezvousKey> Prepare(const RendezvousKey& key);
  static absl::StatusOr<PreparedRendezvousKey> Parse(std::string_view text);
};

// Thread safety: all methods may be called concurrently.
class Rendezvous {
 public:
  // Called once with the sent value, or with the abort status.
  using DoneCallback = std::function<void(const absl::Status&, const Tensor&)>;

  virtual ~Rendezvous() = default;

  // Leaves `value` under `key` for one Recv. Never blocks. Fails with the
  // abort status after StartAbort, and with ALREADY_EXISTS (naming the key)
  // when the key was sent before in this rendezvous.
  virtual absl::Status Send(const PreparedRendezvousKey& key, const Tensor& value) = 0;
  // Calls `done` once the value for `key` is there: at once (on this thread)
  // when it already is, else on the thread that sends it or aborts.
  virtual void RecvAsync(const PreparedRendezvousKey& key, DoneCallback done) = 0;
  // Fails every pending and later Recv and Send with `status`. The first
  // status wins. REQUIRES: !status.ok().
  virtual void StartAbort(const absl::Status& status) = 0;
};

}  // namespace rill

#endif  // RILL_KERNELS_FRAMEWORK_RENDEZVOUS_H_
