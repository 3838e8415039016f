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
  // The bytes the device's allocator held when the node finished; -1 when
  // the allocator does not count them.
  int64_t memory_in_use = -1;
};

// How another task's clock stands against the one a step's stats are given
// in: its nodes' times were shifted by -offset_micros. Measured from one
// RunGraph's round trip (the task says when the call came and when it
// answered, as NTP does); the offset is good to within half the network
// time.
struct TaskClock {
  std::string task;            // "/job:worker/replica:0/task:1".
  int64_t offset_micros = 0;   // The task's clock minus the gatherer's.
  int64_t network_micros = 0;  // The round trip less the task's own time.
};

struct RunMetadata {
  std::vector<NodeExecStats> step_stats;  // One per node run, in completion order.
  std::vector<TaskClock> task_clocks;     // One per other task whose nodes ran.
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_STEP_STATS_H_
