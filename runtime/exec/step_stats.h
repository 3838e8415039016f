// What a step is asked (its deadline, whether to trace) and what a traced
// step reports of each node it ran; shared by the executor, workers and sessions.
#ifndef RILL_RUNTIME_EXEC_STEP_STATS_H_
#define RILL_RUNTIME_EXEC_STEP_STATS_H_

#include <cstdint>
#include <string>
#include <vector>

namespace rill {

struct RunOptions {
  // 0: no deadline. Otherwise the step is cancelled and Run returns
  // DEADLINE_EXCEEDED once this much time has passed.
  int64_t timeout_in_ms = 0;
  // Fill RunMetadata::step_stats.
  bool trace = false;
};

struct NodeExecStats {
  std::string node_name;
  std::string op;
  std::string device;
  int64_t start_micros = 0;  // Since the epoch.
  int64_t end_micros = 0;
  int64_t output_bytes = 0;  // Sum over the node's outputs.
  // _Send: the receiving device; _Recv: the sending one; else empty.
  std::string peer_device;
  // _Send and _Recv: the edge's name, which a send shares with its receive.
  std::string tensor_name;
};

struct RunMetadata {
  std::vector<NodeExecStats> step_stats;  // One per node run, in completion order.
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_STEP_STATS_H_
