// Timeline: a traced step (RunMetadata) as one Chrome trace for every task,
// the Trace Event Format JSON that Perfetto and chrome://tracing open.
#ifndef RILL_RUNTIME_EXEC_TIMELINE_H_
#define RILL_RUNTIME_EXEC_TIMELINE_H_

#include <string>
#include <utility>

#include "absl/status/status.h"
#include "runtime/exec/step_stats.h"

namespace rill {

// As TensorFlow's client Timeline, but for a whole cluster step:
// - a process per task ("/job:worker/replica:0/task:1"), whose name says
//   how its clock was placed against the gatherer's (RunMetadata's
//   task_clocks: the times arrive already shifted);
// - per device as many tracks as it ran nodes at once ("/device:CPU:0",
//   "/device:CPU:0 #2"), so that a track's slices never overlap, which
//   trace viewers need to draw them side by side rather than nested;
// - a slice per node: name the node, category its op, with its output
//   bytes and, for _Send and _Recv, the edge and the peer device;
// - a flow from each _Send to the _Recv that shares its edge and devices;
// - a counter per device of the bytes its allocator held ("memory").
// Times are microseconds from the step's first node; "otherData" states
// when that was (Unix microseconds) and each task's clock offset.
class Timeline {
 public:
  explicit Timeline(RunMetadata metadata) : metadata_(std::move(metadata)) {}

  // The trace: {"traceEvents": [...], "displayTimeUnit": "ms",
  // "otherData": {...}}.
  std::string ToChromeTrace() const;
  // Writes ToChromeTrace() to `path` (replaced whole, never left half
  // written). Errors name the path.
  absl::Status WriteChromeTrace(const std::string& path) const;

 private:
  RunMetadata metadata_;
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_TIMELINE_H_
