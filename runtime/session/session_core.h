// SessionCore: what every session does, local or on a cluster, written
// once: the graph (Create, Extend) placed once, as TensorFlow's
// GraphExecutionState places it (what Extend adds is placed beside what is
// placed already, which stays), one plan per Run signature (pruned,
// partitioned and registered with the workers of the tasks it touches),
// and each step: feeds checked, one RunGraph per task, the step
// stopped everywhere on the first error or at its deadline, step stats
// gathered. A local session's only worker is in this process; a master
// reaches the other tasks' workers over RPC.
#ifndef RILL_RUNTIME_SESSION_SESSION_CORE_H_
#define RILL_RUNTIME_SESSION_SESSION_CORE_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/log_sink.h"
#include "graph/proto/graph.pb.h"
#include "kernels/framework/kernel_registry.h"
#include "placement/device_set.h"
#include "placement/placer.h"
#include "runtime/exec/continuations.h"
#include "runtime/exec/step_stats.h"
#include "runtime/session/partition_plan.h"
#include "runtime/session/worker_interface.h"

namespace rill {

struct SessionCoreOptions {
  // Names the session's graphs on the workers.
  std::string handle;
  WorkerCache* workers = nullptr;  // Must outlive the core.
  // Every device placement may use (full names), and where nodes that ask
  // for none go.
  std::vector<std::string> devices;
  std::string default_device;
  // The devices a graph asks for beyond `devices` (a master finds those
  // of the tasks its nodes name, and contacts no other task); called with
  // every graph Create and Extend are given, before the graph is taken.
  // Null: `devices` is all there is.
  std::function<std::vector<std::string>(const GraphDef& graph)> find_devices;
  bool allow_soft_placement = false;
  bool log_device_placement = false;
  // Where the placement of each plan built goes, when
  // log_device_placement is on (also in StepResult::placement_log); null: stderr.
  LogSink* log = nullptr;
  // Which devices have kernels for a node; null: StandardKernels().
  const KernelRegistry* kernel_registry = nullptr;
  // Runs work that waits for other tasks (registering a new plan's graphs)
  // off the caller's thread; null: on the caller's thread.
  std::function<void(std::function<void()>)> run_blocking;
  // The first step id; later steps count up from it. A master starts at a
  // random point, so that the steps of masters on different tasks never
  // meet on a worker.
  uint64_t first_step_id = 1;
};

// One Run. The spans must stay valid until the step is done.
struct StepRequest {
  RunOptions options;
  absl::Span<const std::pair<std::string, Tensor>> feeds;
  absl::Span<const std::string> fetches;
  absl::Span<const std::string> targets;
  // Where this process's worker starts the step's nodes
  // (Executor::Args::runner; null: its inter-op pool).
  Runner runner = RunHere;
};

struct StepResult {
  std::vector<Tensor> outputs;       // One per fetch, in order.
  std::vector<NodeExecStats> stats;  // When traced: every task's and device's nodes.
  // When traced: the clocks of the other tasks whose stats were shifted
  // into this process's clock.
  std::vector<TaskClock> clocks;
  // With log_device_placement, when this step built a plan: its placement.
  std::string placement_log;
};

// Thread safety: RunStep may be called concurrently; Extend must not race
// with it. Close may: it cancels the steps that run.
class SessionCore {
 public:
  // Errors: an invalid graph, a bad device list.
  static absl::StatusOr<std::unique_ptr<SessionCore>> Create(SessionCoreOptions options,
                                                             const GraphDef& graph);
  // Closes the session.
  ~SessionCore();
  SessionCore(const SessionCore&) = delete;
  SessionCore& operator=(const SessionCore&) = delete;

  // Adds nodes (names must not clash with nodes already there); the graph
  // keeps the first versions it was given.
  absl::Status Extend(const GraphDef& graph);
  // The devices placement may use now.
  std::vector<std::string> devices();

  // Runs one step; `done` is called once, possibly before this returns.
  // Errors: bad names and feeds (TensorFlow's messages, naming the
  // caller's tensors) before anything runs; the first failure of any task,
  // naming its node; DEADLINE_EXCEEDED at RunOptions::timeout_in_ms.
  void RunStep(const StepRequest& request, StepResult* result,
               std::function<void(absl::Status)> done);
  // RunStep, waiting for it.
  absl::Status Run(const StepRequest& request, StepResult* result);

  // Cancels the steps that run (CANCELLED on every task, so that a kernel
  // waiting for a queue or a peer lets go), waits for them to end, and
  // forgets the plans on every worker; later steps fail.
  absl::Status Close();

 private:
  struct Plan;
  struct Resolved;
  struct StepRun;

  explicit SessionCore(SessionCoreOptions options, DeviceSet device_set);

  // The plan for the request's names when one was built before, else
  // null. Errors: a closed session, bad names.
  absl::StatusOr<std::shared_ptr<const Resolved>> Lookup(const StepRequest& request);
  // Builds the plan for the request's names, and registers its graphs
  // with their workers (waiting for them).
  absl::StatusOr<std::shared_ptr<const Resolved>> Build(const StepRequest& request,
                                                        std::string* placement_log);
  absl::Status Register(PartitionPlan partitioned, Plan* plan);
  // Places the nodes of graph_ that have no device yet, the others staying
  // where they are: a stateful node never moves between steps.
  absl::Status PlaceNewNodes() ABSL_EXCLUSIVE_LOCKS_REQUIRED(build_mu_)
      ABSL_SHARED_LOCKS_REQUIRED(mu_);
  // Drops `plan` from the caches, unless another step did first.
  void Forget(const std::shared_ptr<const Plan>& plan);
  void Deregister(const Plan& plan);
  void Start(std::shared_ptr<const Resolved> resolved, const StepRequest& request,
             StepResult* result, std::function<void(absl::Status)> done);
  // Records the step's first error and stops every task's part.
  void Abort(StepRun* step, const absl::Status& status);
  void CancelCalls(StepRun* step, const absl::Status& status);
  // A task's part ended; the last one calls AllPartsDone, which a step
  // without parts calls at once.
  void PartDone(StepRun* step, absl::Status status);
  void AllPartsDone(StepRun* step);
  void Release(StepRun* step);
  void Finish(StepRun* step);

  const SessionCoreOptions options_;
  std::atomic<uint64_t> next_step_id_;

  // Serializes plan building, so that concurrent first runs of a
  // signature build (and log) it once; steps of built plans never wait
  // for it.
  absl::Mutex build_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  std::vector<std::string> devices_ ABSL_GUARDED_BY(build_mu_);
  DeviceSet device_set_ ABSL_GUARDED_BY(build_mu_);
  // Every node of graph_ placed so far, by name.
  absl::flat_hash_map<std::string, NodePlacement> placed_ ABSL_GUARDED_BY(build_mu_);
  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Graph> graph_ ABSL_GUARDED_BY(mu_);
  // By RunSignature::key. Plans copy what they need from the graph, so
  // Extend (which only adds nodes) leaves them valid.
  absl::flat_hash_map<std::string, std::shared_ptr<const Plan>> plans_ ABSL_GUARDED_BY(mu_);
  // By the caller's names exactly as given, so that a repeated Run skips
  // name resolution.
  absl::flat_hash_map<std::string, std::shared_ptr<const Resolved>> resolved_ ABSL_GUARDED_BY(mu_);

  // Steps started and not finished, for Close. A lock of its own: every
  // step takes it twice, and callbacks of an abort may finish steps.
  absl::Mutex running_mu_ ABSL_ACQUIRED_AFTER(mu_);
  bool closing_ ABSL_GUARDED_BY(running_mu_) = false;
  // The steps in flight, owned here until they finish.
  absl::flat_hash_map<StepRun*, std::unique_ptr<StepRun>> running_ ABSL_GUARDED_BY(running_mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_SESSION_CORE_H_
