// What a user sees of a placement: TensorFlow's log_device_placement
// lines, a per-device summary, reasons, and Graphviz pictures.
#ifndef RILL_PLACEMENT_PLACEMENT_REPORT_H_
#define RILL_PLACEMENT_PLACEMENT_REPORT_H_

#include <map>
#include <string>

#include "graph/graph.h"
#include "graph/proto/graph.pb.h"
#include "placement/placer.h"

namespace rill {

// One line per node in graph order: "name: (Op): /job:.../device:CPU:0".
std::string PlacementLog(const Graph& graph, const Placement& placement);

// One line per node: "name: (Op): DEVICE  <- reason".
std::string PlacementExplanation(const Graph& graph, const Placement& placement);

// Per device, in device order: node count, bytes of variables (from their
// shape/dtype attrs; unknown dims count 1), and with `partitions` (may be
// null) the number of _Send and _Recv nodes, e.g.
// "/job:ps/replica:0/task:0/device:CPU:0: 3 nodes, 4 B of variables, 1 send, 2 recv".
std::string PlacementSummary(const Graph& graph, const Placement& placement,
                             const std::map<std::string, GraphDef>* partitions);

// Graphviz: nodes coloured by device, a legend, data and control edges
// (control dashed). With `partitions`, one cluster per partition drawn
// from the partitioned graphs, _Send/_Recv pairs joined by a dotted edge.
std::string PlacementDot(const Graph& graph, const Placement& placement,
                         const std::map<std::string, GraphDef>* partitions);

}  // namespace rill

#endif  // RILL_PLACEMENT_PLACEMENT_REPORT_H_
