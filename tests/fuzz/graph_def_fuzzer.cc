// GraphDef bytes, binary or text (detected as `rill` and sessions detect
// it), through what a master does with a client's graph: import (node
// validation and shape inference), a summary, placement on a small
// cluster and partitioning. Invariants: a graph that imports still imports
// after writing it out in either format, and every partition of it
// imports.
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "graph/graph.h"
#include "graph/graph_io.h"
#include "graph/graph_summary.h"
#include "ops/registry.h"
#include "placement/device_set.h"
#include "placement/partitioner.h"
#include "placement/placer.h"
#include "tests/fuzz/fuzz_util.h"

namespace rill::fuzz {
namespace {

void CheckReimports(const GraphDef& exported, GraphFormat format) {
  const std::string bytes = SerializeGraphDef(exported, format);
  absl::StatusOr<GraphDef> parsed = ParseGraphDef(bytes, format, "exported");
  Check(parsed.ok(), "an exported graph does not parse: " + parsed.status().ToString());
  const absl::Status imported = ImportGraphDef(*parsed, StandardOps()).status();
  Check(imported.ok(), "an exported graph does not import: " + imported.ToString());
}

void PlaceAndPartition(const Graph& graph) {
  static const DeviceSet* const devices =
      new DeviceSet(*DeviceSet::ForCluster({{"ps", 1}, {"worker", 2}}, /*gpus_per_task=*/1));
  PlacerOptions options;
  options.allow_soft_placement = true;
  options.default_device = "/job:worker/replica:0/task:0";
  absl::StatusOr<Placement> placement = PlaceGraph(graph, *devices, options);
  if (!placement.ok()) return;
  absl::StatusOr<std::map<std::string, GraphDef>> partitions =
      PartitionGraph(graph, *placement, PartitionOptions());
  if (!partitions.ok()) return;
  for (const auto& [device, partition] : *partitions) {
    const absl::Status imported = ImportGraphDef(partition, StandardOps()).status();
    Check(imported.ok(), "a partition does not import: " + imported.ToString());
  }
}

}  // namespace
}  // namespace rill::fuzz

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
  rill::fuzz::Initialize(size_t{64} << 20);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace rill;
  const std::string_view bytes = fuzz::AsView(data, size);
  absl::StatusOr<GraphDef> def = ParseGraphDef(bytes, DetectGraphFormat(bytes), "input");
  if (!def.ok()) return 0;
  absl::StatusOr<std::unique_ptr<Graph>> graph = ImportGraphDef(*def, StandardOps());
  if (!graph.ok()) return 0;
  (void)FormatGraphSummary(SummarizeGraph(**graph));
  const GraphDef exported = (*graph)->ToGraphDef();
  fuzz::CheckReimports(exported, GraphFormat::kBinary);
  fuzz::CheckReimports(exported, GraphFormat::kText);
  fuzz::PlaceAndPartition(**graph);
  return 0;
}
