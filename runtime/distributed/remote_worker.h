// RemoteWorker: another task's worker, reached over RPC. Cancelling a
// RunGraph call sends that task an AbortStep for the call's step.
#ifndef RILL_RUNTIME_DISTRIBUTED_REMOTE_WORKER_H_
#define RILL_RUNTIME_DISTRIBUTED_REMOTE_WORKER_H_

#include <cstdint>
#include <string>

#include "runtime/distributed/channel_cache.h"
#include "runtime/session/worker_interface.h"
#include "transport/rpc.h"

namespace rill {

// Thread safety: all methods may be called concurrently.
class RemoteWorker final : public WorkerInterface {
 public:
  // `client` talks to `task` ("/job:J/replica:0/task:T") and must outlive
  // this; its callbacks must run on its I/O thread (inline_callbacks).
  // `channels` (outliving this too) tells RegisterGraph where the peers
  // of the task's partitions listen.
  RemoteWorker(std::string task, RpcClient* client, const ChannelCache* channels)
      : task_(std::move(task)), client_(client), channels_(channels) {}

  bool in_process() const override { return false; }
  void ListDevices(absl::Time deadline,
                   std::function<void(absl::StatusOr<std::vector<std::string>>)> done) override;
  void RegisterGraph(const RegisterGraphRequest& request, absl::Time deadline,
                     std::function<void(absl::StatusOr<GraphRegistration>)> done) override;
  void DeregisterGraph(const std::string& graph_handle) override;
  void RunGraph(RunGraphCall* call, std::function<void(absl::Status)> done) override;

 private:
  // The transport's failures name an address; this says which task.
  absl::Status Annotate(absl::Status status) const;
  // This task's clock against ours, from a traced RunGraph sent at
  // `sent_micros` and answered at `answered_micros` (our clock).
  TaskClock ClockOf(const RunGraphReply& reply, int64_t sent_micros, int64_t answered_micros) const;
  void AbortStep(uint64_t step_id, const absl::Status& status);

  const std::string task_;
  RpcClient* const client_;
  const ChannelCache* const channels_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_REMOTE_WORKER_H_
