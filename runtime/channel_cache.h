// ChannelCache: one RPC client per peer task of a cluster, made on first
// use and shared by everything on this task that calls that peer (the
// master's RunGraph calls, the worker's tensor pushes).
#ifndef RILL_RUNTIME_CHANNEL_CACHE_H_
#define RILL_RUNTIME_CHANNEL_CACHE_H_

#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "runtime/cluster_spec.h"
#include "transport/rpc.h"

namespace rill {

// Thread safety: all methods may be called concurrently.
class ChannelCache {
 public:
  // With `curve`, every client speaks CURVE with those keys.
  explicit ChannelCache(ClusterSpec cluster, std::shared_ptr<const CurveKeys> curve = nullptr)
      : cluster_(std::move(cluster)), curve_(std::move(curve)) {}

  const ClusterSpec& cluster() const { return cluster_; }
  // The client of `task` ("/job:J/replica:0/task:T"); it lives as long as
  // the cache. Its callbacks run on its I/O thread, so they must be quick.
  // Errors: a task outside the cluster.
  absl::StatusOr<RpcClient*> Get(const std::string& task);

 private:
  const ClusterSpec cluster_;
  const std::shared_ptr<const CurveKeys> curve_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::unique_ptr<RpcClient>> clients_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_CHANNEL_CACHE_H_
