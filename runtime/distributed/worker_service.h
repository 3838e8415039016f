// WorkerService: a task's worker as RPC methods, for masters and other
// workers on the network: requests are parsed, handed to the Worker, and
// its answers serialized.
#ifndef RILL_RUNTIME_DISTRIBUTED_WORKER_SERVICE_H_
#define RILL_RUNTIME_DISTRIBUTED_WORKER_SERVICE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/synchronization/mutex.h"
#include "graph/log_sink.h"
#include "runtime/distributed/channel_cache.h"
#include "runtime/exec/remote_rendezvous.h"
#include "runtime/session/worker.h"
#include "transport/rpc.h"

namespace rill {

// How a worker pushes tensors to the other tasks: their PushTensor
// method, through `channels` (which must outlive every step).
PushTensorFn PushOverRpc(ChannelCache* channels);

// Thread safety: the methods' handlers may run concurrently.
class WorkerService {
 public:
  // `worker` and `channels` (where its pushes go) must outlive the
  // service; `log` (null: stderr) hears of steps ended for a closed
  // connection.
  WorkerService(Worker* worker, ChannelCache* channels, LogSink* log = nullptr)
      : worker_(worker), channels_(channels), log_(log) {}
  // CancelRunning, with CANCELLED.
  ~WorkerService();

  // Cancels the steps that RunGraph calls still run, and waits for them
  // to end; returns how many. A step may wait for a peer that will never
  // push (its master died mid-step); cancelled, it ends and frees what it
  // holds. For a server that stops: its transport must have stopped.
  int CancelRunning(const absl::Status& status);

  // Cancels the steps of the RunGraph calls that came on `connection`,
  // which closed: their replies could not reach anyone, and their master
  // may have died mid-step, leaving them to wait for tensors that never
  // come. They end at once and free their executors and the tensors they
  // received. Returns how many; does not wait for them to end.
  // The task that pushed tensors on `connection` may have died, and may
  // come back as a new process: this task's pushes to it go over a new
  // client (ChannelCache::Reconnect), which finds the new process's ipc
  // endpoint and shared memory.
  int ConnectionClosed(uint64_t connection);

  // GetStatus, RegisterGraph, RunGraph, DeregisterGraph, PushTensor,
  // AbortStep (cluster_rpc.proto). Each calls `done` once; malformed
  // requests get INVALID_ARGUMENT.
  std::vector<RpcMethod> Methods();

 private:
  void GetStatus(RpcMessage request, RpcDone done);
  void RegisterGraph(RpcMessage request, RpcDone done);
  void RunGraph(RpcMessage request, RpcDone done);
  void DeregisterGraph(RpcMessage request, RpcDone done);
  void PushTensor(RpcMessage request, RpcDone done);
  void AbortStep(RpcMessage request, RpcDone done);

  struct Run;

  // Remembers which task pushes on `connection` (the source of `key`).
  void NotePusher(uint64_t connection, std::string_view key);

  Worker* const worker_;
  ChannelCache* const channels_;
  LogSink* const log_;
  absl::Mutex mu_;
  absl::flat_hash_set<std::shared_ptr<Run>> running_ ABSL_GUARDED_BY(mu_);
  // The task that pushed tensors on each open connection, by connection.
  absl::Mutex pushers_mu_;
  absl::flat_hash_map<uint64_t, std::string> pushers_ ABSL_GUARDED_BY(pushers_mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_WORKER_SERVICE_H_
