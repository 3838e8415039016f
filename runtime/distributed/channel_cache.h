// ChannelCache: one RPC client per peer task of a cluster, made on first
// use and shared by everything on this task that calls that peer (the
// master's RunGraph calls, the worker's tensor pushes).
#ifndef RILL_RUNTIME_DISTRIBUTED_CHANNEL_CACHE_H_
#define RILL_RUNTIME_DISTRIBUTED_CHANNEL_CACHE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/distributed/cluster_spec.h"
#include "transport/rpc.h"

namespace rill {

// Thread safety: all methods may be called concurrently.
class ChannelCache {
 public:
  // Every client is made with `options` (CURVE keys, shared memory) and
  // the task's address.
  explicit ChannelCache(ClusterSpec cluster, RpcClientOptions options = {})
      : cluster_(std::move(cluster)), options_(std::move(options)) {}

  const ClusterSpec& cluster() const { return cluster_; }
  // The client of `task` ("/job:J/replica:0/task:T"); it lives as long as
  // the cache. Its callbacks run on its I/O thread, so they must be quick.
  // Errors: a task outside the cluster that was not learned.
  absl::StatusOr<RpcClient*> Get(const std::string& task);
  // The address of `task` ("HOST:PORT"): the cluster's, else a learned one.
  absl::StatusOr<std::string> Address(const std::string& task) const;

  // Learns where a task outside the cluster listens (a worker that joined
  // the job later), as a master says in RegisterGraph; a task it learned
  // before may have moved (it joined again). A task of the cluster keeps
  // its address: INVALID_ARGUMENT naming both when `address` differs, so
  // that no request can divert another task's tensors.
  absl::Status Learn(const std::string& task, const std::string& address);

  // `task` may have restarted (a connection it pushed tensors on closed):
  // the next Get makes a new client, which asks the peer again where it
  // listens on this machine. The old client would go on sending to the
  // restarted peer by tcp (its ipc socket still names the dead process's
  // endpoint, and its replies keep it from ever timing out), which costs
  // every large tensor a copy through the kernel, or CURVE's encryption,
  // where shared memory costs none. The old client stays until the cache
  // goes: a step or a master may still hold it. Returns whether a client
  // was retired; false when there was none, or when kMaxRetired are kept
  // already (the old client then stays in use).
  bool Reconnect(const std::string& task);
  // How many clients Reconnect retired.
  int reconnects() const;

  static constexpr int kMaxRetired = 64;

 private:
  const ClusterSpec cluster_;
  const RpcClientOptions options_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<RpcClient>> clients_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, std::string> learned_ ABSL_GUARDED_BY(mu_);
  // Clients of tasks that moved: a step may still hold one.
  std::vector<std::unique_ptr<RpcClient>> moved_ ABSL_GUARDED_BY(mu_);
  // Clients of tasks that may have restarted (Reconnect), for the same reason.
  std::vector<std::unique_ptr<RpcClient>> retired_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_CHANNEL_CACHE_H_
