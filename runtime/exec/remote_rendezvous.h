// RemoteRendezvous: one step's rendezvous on one task of a cluster. Values
// for this task's devices stay here; values for another task are pushed to
// it (the sender pushes, so a transfer costs no extra round trip); values
// pushed here by other tasks wait for their receivers.
#ifndef RILL_RUNTIME_EXEC_REMOTE_RENDEZVOUS_H_
#define RILL_RUNTIME_EXEC_REMOTE_RENDEZVOUS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "graph/tensor.h"
#include "kernels/framework/rendezvous.h"
#include "runtime/exec/local_rendezvous.h"

namespace rill {

// Sends `value` under `key` of step `step_id` to the task named `dst_task`
// ("/job:worker/replica:0/task:1"); `done` reports whether it arrived.
using PushTensorFn =
    std::function<void(const std::string& dst_task, uint64_t step_id, std::string key, Tensor value,
                       std::function<void(absl::Status)> done)>;

// Thread safety: all methods may be called concurrently.
class RemoteRendezvous final : public Rendezvous,
                               public std::enable_shared_from_this<RemoteRendezvous> {
 public:
  // `push` may be null for a task that talks to no other (its graphs never
  // send elsewhere).
  RemoteRendezvous(std::string task, uint64_t step_id, PushTensorFn push);

  // A key for another task is pushed there; a failed push aborts the step
  // here with the transport's error.
  absl::Status Send(const PreparedRendezvousKey& key, const Tensor& value) override;
  void RecvAsync(const PreparedRendezvousKey& key, DoneCallback done) override;
  void StartAbort(const absl::Status& status) override;

  // A value another task pushed here.
  absl::Status Deliver(std::string_view key, const Tensor& value);

 private:
  const std::string task_;
  const uint64_t step_id_;
  const PushTensorFn push_;
  LocalRendezvous local_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_REMOTE_RENDEZVOUS_H_
