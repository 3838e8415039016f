// Where the time of one traced step of between-graph training goes: the
// step stats of every task sorted into compute, variable reads, gradient
// pushes, parameter-server updates and waiting.
#ifndef RILL_RUNTIME_TRAINING_STEP_SPLIT_H_
#define RILL_RUNTIME_TRAINING_STEP_SPLIT_H_

#include <string>
#include <string_view>
#include <vector>

#include "runtime/exec/step_stats.h"

namespace rill {

// Each figure is the time covered by at least one of its nodes (nodes that
// run in parallel count once), in milliseconds; the figures overlap each
// other where the step does two things at once, and `waiting` is the wall
// time none of them covers (the client, the transport, the queues).
struct StepSplit {
  double wall_ms = 0;            // The first node's start to the last node's end.
  double worker_compute_ms = 0;  // Nodes on the other tasks (transfers within a task included).
  double read_variables_ms = 0;  // What a parameter server sends a worker, send to arrival.
  double push_gradients_ms = 0;  // What another task sends a parameter server, likewise.
  double ps_update_ms = 0;       // Nodes on the parameter servers but their transfers.
  double waiting_ms = 0;
};

// The split of one step's `stats` (RunMetadata::step_stats, every task's:
// the clocks must agree, as they do on one host). A transfer between tasks
// runs from its _Send's start (the value is ready) to its _Recv's end, not
// from the _Recv's start, which only waits for the sender; a _Send counts
// nowhere else. `ps_job` names the parameter servers' job.
StepSplit SplitStep(const std::vector<NodeExecStats>& stats, std::string_view ps_job = "ps");

// The mean of several steps' splits, part by part; zeros for none.
StepSplit MeanStepSplit(const std::vector<StepSplit>& splits);

// "wall 1.250 ms: worker compute 0.600, read variables 0.200, push
// gradients 0.150, ps update 0.100, waiting 0.300".
std::string StepSplitText(const StepSplit& split);

}  // namespace rill

#endif  // RILL_RUNTIME_TRAINING_STEP_SPLIT_H_
