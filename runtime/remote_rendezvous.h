// RemoteRendezvous: one step's rendezvous on one task of a cluster. Values
// for this task's devices stay here; values for another task are pushed to
// it (the sender pushes, so a transfer costs no extra round trip); values
// pushed here by other tasks wait for their receivers.
#ifndef RILL_RUNTIME_REMOTE_RENDEZVOUS_H_
#define RILL_RUNTIME_REMOTE_RENDEZVOUS_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"
#include "kernels/rendezvous.h"
#include "runtime/local_rendezvous.h"

namespace rill {

// Sends `value` under `key` of step `step_id` to the task named `dst_task`
// ("/job:worker/replica:0/task:1"); `done` reports whether it arrived.
using PushTensorFn =
    std::function<void(const std::string& dst_task, uint64_t step_id, std::string key, Tensor value,
                       std::function<void(absl::Status)> done)>;

// "/job:J/replica:R/task:T" of a full device name.
absl::StatusOr<std::string> TaskOfDevice(std::string_view device);

// Thread safety: all methods may be called concurrently.
class RemoteRendezvous final : public Rendezvous,
                               public std::enable_shared_from_this<RemoteRendezvous> {
 public:
  RemoteRendezvous(std::string task, uint64_t step_id, PushTensorFn push);

  // A key for another task is pushed there; a failed push aborts the step
  // here with the transport's error.
  absl::Status Send(std::string_view key, const Tensor& value) override;
  void RecvAsync(std::string_view key, DoneCallback done) override;
  void StartAbort(const absl::Status& status) override;

  // A value another task pushed here.
  absl::Status Deliver(std::string_view key, const Tensor& value);

 private:
  const std::string task_;
  const uint64_t step_id_;
  const PushTensorFn push_;
  LocalRendezvous local_;
};

// The live steps of one task, by step id. A push may arrive before the
// RunGraph that receives it, so either creates the step.
// Thread safety: all methods may be called concurrently.
class StepRendezvousTable {
 public:
  StepRendezvousTable(std::string task, PushTensorFn push);

  // The step's rendezvous; nullptr when the step has ended here (a late
  // push for it is dropped).
  std::shared_ptr<RemoteRendezvous> FindOrCreate(uint64_t step_id);
  // Forgets the step, aborting it first when `status` is not OK, and
  // refuses it from now on (the last kRememberEnded steps are kept).
  void End(uint64_t step_id, const absl::Status& status);

  static constexpr size_t kRememberEnded = 4096;

 private:
  const std::string task_;
  const PushTensorFn push_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<RemoteRendezvous>> live_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_set<uint64_t> ended_ ABSL_GUARDED_BY(mu_);
  std::deque<uint64_t> ended_order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_REMOTE_RENDEZVOUS_H_
