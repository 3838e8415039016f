// WorkerInterface: what a session core asks of one task: its devices, the
// graphs to register, the steps to run. Worker answers in this process,
// RemoteWorker over RPC; WorkerCache finds the one for a task.
#ifndef RILL_RUNTIME_SESSION_WORKER_INTERFACE_H_
#define RILL_RUNTIME_SESSION_WORKER_INTERFACE_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "graph/tensor.h"
#include "kernels/framework/cancellation.h"
#include "runtime/exec/continuations.h"
#include "runtime/exec/step_stats.h"
#include "transport/proto/cluster_rpc.pb.h"

namespace rill {

// One RunGraph: what the caller gives, what the worker fills, and how the
// caller stops it.
struct RunGraphCall {
  std::string_view graph_handle;  // Must stay valid until the call is done.
  uint64_t step_id = 0;
  std::vector<Tensor> feeds;  // One per registered feed, in order.
  bool trace = false;         // Fill `stats`.
  // Where the worker starts the step (Executor::Args::runner; null: its
  // inter-op pool). Honoured by workers in this process.
  Runner runner;
  // Also reachable by step id (AbortStep from another task); calls made in
  // this process are stopped through `cancellation` instead.
  bool abortable_by_step_id = false;

  // Filled on success: one per registered fetch, in order.
  std::vector<Tensor> fetched;
  std::vector<NodeExecStats> stats;
  // A traced call to another task: its clock against this one's (its
  // stats are already shifted into this clock); empty task otherwise.
  TaskClock clock;

  // Cancelling it stops the step on the worker: its kernels see it, its
  // receives fail with the status.
  StepCancellation cancellation;
};

// Thread safety: all methods may be called concurrently. Every callback is
// called exactly once, possibly before the call returns.
// A registered graph: its handle, and how long the worker keeps it while
// no step runs it (RegisteredGraphLimits).
struct GraphRegistration {
  std::string handle;
  absl::Duration idle_timeout = absl::InfiniteDuration();
};

class WorkerInterface {
 public:
  virtual ~WorkerInterface() = default;

  // Whether calls reach the worker without serialization (this process's
  // own task): its RunGraph honours RunGraphCall::runner.
  virtual bool in_process() const = 0;

  // The full names of the task's devices.
  virtual void ListDevices(absl::Time deadline,
                           std::function<void(absl::StatusOr<std::vector<std::string>>)> done) = 0;
  // Registers the task's partitions of one plan; `done` gets the handle
  // RunGraph and DeregisterGraph use.
  virtual void RegisterGraph(const RegisterGraphRequest& request, absl::Time deadline,
                             std::function<void(absl::StatusOr<GraphRegistration>)> done) = 0;
  // Forgets a registered graph; steps running it finish.
  virtual void DeregisterGraph(const std::string& graph_handle) = 0;
  // Runs one step of a registered graph. `call` must stay valid until
  // `done` has run; a failed step's status names the failing node.
  virtual void RunGraph(RunGraphCall* call, std::function<void(absl::Status)> done) = 0;
};

// Thread safety: all methods may be called concurrently.
class WorkerCache {
 public:
  virtual ~WorkerCache() = default;
  // Every task's name ("/job:ps/replica:0/task:0"), in a stable order.
  virtual std::vector<std::string> Tasks() const = 0;
  // The worker of `task`; it lives as long as the cache. NOT_FOUND for a
  // task outside the cluster.
  virtual absl::StatusOr<WorkerInterface*> GetWorker(const std::string& task) = 0;
};

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_WORKER_INTERFACE_H_
