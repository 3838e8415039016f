// StepPlan: what one Run signature executes: the pruned graph with feeds as
// placeholders, placed over the session's devices, partitioned, and one
// executor per partition; a step runs them together over a rendezvous.
#ifndef RILL_RUNTIME_STEP_PLAN_H_
#define RILL_RUNTIME_STEP_PLAN_H_

#include <cstdio>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/proto/graph.pb.h"
#include "kernels/kernel_registry.h"
#include "placement/device_set.h"
#include "placement/placer.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

struct StepPlanParams {
  const Graph* graph = nullptr;    // Only read by Create.
  std::vector<const Node*> nodes;  // What the step needs (pruned).
  std::vector<TensorEndpoint> feeds;
  std::vector<TensorEndpoint> fetches;
  const DeviceSet* device_set = nullptr;  // Only read by Create.
  std::vector<Device*> devices;           // One per device_set name, same order.
  PlacerOptions placer;
  const KernelRegistry* registry = nullptr;  // Null: StandardKernels().
  Eigen::ThreadPoolInterface* inter_op_pool = nullptr;
  bool parallel_nodes = true;
  // Where placement lines and the per-device summary go; null: nowhere.
  std::FILE* placement_log = nullptr;
};

// What one partition of a step feeds and fetches.
struct PartitionIo {
  std::vector<int> feeds;                // Index into StepPlanParams::feeds.
  std::vector<std::string> feed_nodes;   // The placeholder standing for each.
  std::vector<int> fetches;              // Index into StepPlanParams::fetches.
  std::vector<std::string> fetch_names;  // "node:k" in the partition, for each.
};

// A step's graph placed over `params.device_set` and cut per device.
struct PartitionedStep {
  std::map<std::string, GraphDef> partitions;  // By full device name.
  std::map<std::string, PartitionIo> io;       // By full device name.
};

// Feeds become placeholders, then placement and partitioning; writes the
// placement log when `params.placement_log` is set. Reads graph, nodes,
// feeds, fetches, device_set, placer and placement_log.
absl::StatusOr<PartitionedStep> PartitionStep(const StepPlanParams& params);

// An executor for one imported partition: `params` less graph, nodes,
// feeds and fetches, which come from `graph` and `io`.
absl::StatusOr<std::unique_ptr<Executor>> CreatePartitionExecutor(const Graph& graph,
                                                                  const PartitionIo& io,
                                                                  Executor::Params params);

// Thread safety: after Create, Run may be called concurrently.
class StepPlan {
 public:
  // Errors: placement and partitioning failures, missing kernels.
  static absl::StatusOr<std::unique_ptr<StepPlan>> Create(const StepPlanParams& params);

  struct Args {
    int64_t step_id = 0;
    absl::Span<const Tensor> feeds;  // One per StepPlanParams::feeds.
    StepCancellation* cancellation = nullptr;
    std::vector<NodeExecStats>* stats = nullptr;
  };
  // Runs every partition of one step; `fetched` gets one tensor per
  // StepPlanParams::fetches. The first error anywhere cancels the others.
  absl::Status Run(const Args& args, std::vector<Tensor>* fetched) const;
  // Starts the step on the pool; `done` runs once all partitions finish.
  void RunAsync(const Args& args, std::vector<Tensor>* fetched,
                std::function<void(absl::Status)> done) const;

  int num_partitions() const { return static_cast<int>(partitions_.size()); }

 private:
  struct Partition {
    std::unique_ptr<Graph> graph;
    std::unique_ptr<Executor> executor;
    std::vector<int> feeds;    // Index into Args::feeds, per executor feed.
    std::vector<int> fetches;  // Index into `fetched`, per executor fetch.
  };
  struct StepState;

  void Begin(const Args& args, std::vector<Tensor>* fetched, std::function<void(absl::Status)> done,
             bool on_this_thread) const;
  void Start(StepState* state, bool on_this_thread) const;

  std::vector<Partition> partitions_;
  int num_fetches_ = 0;
  Eigen::ThreadPoolInterface* pool_ = nullptr;
};

}  // namespace rill

#endif  // RILL_RUNTIME_STEP_PLAN_H_
