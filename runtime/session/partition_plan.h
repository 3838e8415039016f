// PartitionPlan: the graph one Run signature executes, cut for its
// devices: the pruned nodes with feeds as placeholders, placed over the
// session's devices (or where the session placed its whole graph) and
// partitioned, one GraphDef per device.
#ifndef RILL_RUNTIME_SESSION_PARTITION_PLAN_H_
#define RILL_RUNTIME_SESSION_PARTITION_PLAN_H_

#include <map>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "graph/graph.h"
#include "graph/proto/graph.pb.h"
#include "graph/tensor_id.h"
#include "placement/device_set.h"
#include "placement/placer.h"

namespace rill {

struct PartitionPlanParams {
  const Graph* graph = nullptr;
  std::vector<const Node*> nodes;  // What the step needs (pruned).
  std::vector<TensorEndpoint> feeds;
  std::vector<TensorEndpoint> fetches;
  const DeviceSet* device_set = nullptr;
  PlacerOptions placer;
  // Where the session placed every node of `graph`, by name: the step's
  // nodes stay there (a fed tensor's placeholder goes where its node is).
  // Null: the step's nodes are placed here, over device_set.
  const absl::flat_hash_map<std::string, NodePlacement>* placed = nullptr;
  // Fill PartitionPlan::placement_log.
  bool log_placement = false;
};

// What one partition of a step feeds and fetches.
struct PartitionIo {
  std::vector<int> feeds;                // Index into PartitionPlanParams::feeds.
  std::vector<std::string> feed_nodes;   // The placeholder standing for each.
  std::vector<int> fetches;              // Index into PartitionPlanParams::fetches.
  std::vector<std::string> fetch_names;  // "node:k" in the partition, for each.
};

// A step's graph placed over `params.device_set` and cut per device.
struct PartitionPlan {
  std::map<std::string, GraphDef> partitions;  // By full device name.
  std::map<std::string, PartitionIo> io;       // By full device name.
  // One line per node and a summary per device, when asked for.
  std::string placement_log;
};

// Errors: placement and partitioning failures.
absl::StatusOr<PartitionPlan> MakePartitionPlan(const PartitionPlanParams& params);

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_PARTITION_PLAN_H_
