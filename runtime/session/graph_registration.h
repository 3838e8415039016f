// What a worker keeps of a registered graph (an executor per device, and
// where the call's feeds and fetches go), built from a RegisterGraph
// request, and the table of them by handle: its limits and idle expiry.
#ifndef RILL_RUNTIME_SESSION_GRAPH_REGISTRATION_H_
#define RILL_RUNTIME_SESSION_GRAPH_REGISTRATION_H_

#include <atomic>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "graph/log_sink.h"
#include "kernels/framework/kernel_registry.h"
#include "runtime/device/device.h"
#include "runtime/exec/executor.h"
#include "runtime/session/worker_interface.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

// What registered graphs may hold. A master registers a plan's graphs
// once and runs them step after step; one that died, or a peer that only
// registers, never deregisters them.
struct RegisteredGraphLimits {
  // A graph no step has run for this long is forgotten. The worker tells
  // its masters, which register a plan again after half of it
  // (SessionCore), so a live session never meets a forgotten graph.
  absl::Duration idle_timeout = absl::InfiniteDuration();
  // Graphs, and the bytes of their requests, at once; a registration over
  // either is refused with RESOURCE_EXHAUSTED.
  int max_graphs = std::numeric_limits<int>::max();
  int64_t max_bytes = std::numeric_limits<int64_t>::max();
};

// One device's part of a registered graph.
struct RegisteredPartition {
  Device* device = nullptr;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Executor> executor;
  std::vector<int> feeds;    // Index into RunGraphCall::feeds, per executor feed.
  std::vector<int> fetches;  // Index into RunGraphCall::fetched, per executor fetch.
};

struct RegisteredGraph {
  std::vector<RegisteredPartition> partitions;
  int num_feeds = 0;
  int num_fetches = 0;
  // A _Send or _Recv talks to another task: the steps' rendezvous lives
  // in the step table, where the other task's pushes find it.
  bool talks_to_other_tasks = false;
  // One partition whose feeds and fetches are the call's, in order: its
  // executor reads and writes the call's vectors.
  bool direct_io = false;
  int64_t bytes = 0;  // The request's, as the limits count them.
  // When a step last began (or the registration), Unix nanoseconds.
  mutable std::atomic<int64_t> last_used{0};
};

// What the executors of a registered graph are built with: the worker's.
struct GraphBuildContext {
  std::string task;
  const std::vector<std::unique_ptr<Device>>* devices = nullptr;
  bool can_send = false;  // Whether the task may send to other tasks.
  const KernelRegistry* registry = nullptr;
  Eigen::ThreadPoolInterface* inter_op_pool = nullptr;
  bool parallel_nodes = true;
};

// Errors: no partition, a partition for a device the task does not have,
// a node placed elsewhere, feeds or fetches that no partition holds, a
// node without a kernel, a send to another task that cannot send.
absl::StatusOr<std::shared_ptr<RegisteredGraph>> BuildRegisteredGraph(
    const RegisterGraphRequest& request, const GraphBuildContext& context);

// Thread safety: all methods may be called concurrently.
class RegisteredGraphs {
 public:
  // Trips of the limits are logged to `log` (null: stderr).
  RegisteredGraphs(std::string task, RegisteredGraphLimits limits, LogSink* log);

  // OK when a graph of `bytes` fits the limits; RESOURCE_EXHAUSTED naming
  // them otherwise. Logs when they trip and when they have room again.
  absl::Status CheckRoom(int64_t bytes);
  // Keeps `graph` (its bytes set) under a new handle, when it fits.
  absl::StatusOr<std::string> Add(std::shared_ptr<RegisteredGraph> graph);
  // Null when no graph has `handle`.
  std::shared_ptr<const RegisteredGraph> Find(absl::string_view handle) const;
  // Steps still running keep their own reference.
  void Remove(const std::string& handle);
  // Forgets the graphs no step has run for RegisteredGraphLimits::idle_timeout
  // at `now`; returns how many.
  int ExpireIdle(absl::Time now);
  void Clear();

 private:
  absl::Status CheckRoomLocked(int64_t bytes) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string task_;
  const RegisteredGraphLimits limits_;
  LogSink* const log_;
  mutable absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<const RegisteredGraph>> graphs_
      ABSL_GUARDED_BY(mu_);
  int64_t graph_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t registrations_refused_ ABSL_GUARDED_BY(mu_) = 0;  // Since the limits last had room.
};

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_GRAPH_REGISTRATION_H_
