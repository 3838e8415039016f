// The executor's compiled graph and per-step state, shared by the files
// that build an executor (executor.cc), start and end its steps
// (executor_step.cc) and run them (executor_run.cc).
#ifndef RILL_RUNTIME_EXEC_EXECUTOR_ITEMS_H_
#define RILL_RUNTIME_EXEC_EXECUTOR_ITEMS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "runtime/exec/executor.h"

namespace rill {

struct Executor::NodeItem {
  std::unique_ptr<OpKernel> kernel;
  const AsyncOpKernel* async = nullptr;  // kernel->AsAsync(), asked once.
  const NodeDef* def = nullptr;
  DataTypeVector output_types;
  bool expensive = true;
  bool allows_uninitialized_input = false;
  int32_t input_start = 0;
  int32_t num_inputs = 0;
  int32_t output_start = 0;
  int32_t num_outputs = 0;
  // [begin, end) ranges into out_edges_, control_edges_, deref_inputs_ and
  // node_fetches_.
  int32_t out_edges_begin = 0, out_edges_end = 0;
  int32_t control_begin = 0, control_end = 0;
  int32_t deref_begin = 0, deref_end = 0;
  int32_t fetch_begin = 0, fetch_end = 0;
};

struct Executor::OutEdge {
  int32_t output;    // Of the source node.
  int32_t dst;       // The consuming node.
  int32_t dst_slot;  // Its input slot.
  bool last_use;     // The output's last reader: takes the value.
  // `dst` waits for this edge alone: it is ready once the edge is, with no
  // need to count down its shared pending count.
  bool sole_input;
};

// Per-step state, reused by later steps once a step has finished (every
// slot is empty again then).
struct Executor::PartitionRun {
  std::vector<TensorValue> inputs;   // Input slots of every node.
  std::vector<TensorValue> outputs;  // Output slots, filled by the kernels.
  std::unique_ptr<std::atomic<int32_t>[]> pending;
  // Nodes ready or running; the step is over when it drops to 0.
  std::atomic<int32_t> outstanding{0};
  std::optional<StepCancellation> own_cancellation;
  StepCancellation* cancellation = nullptr;
  std::vector<Tensor>* fetched = nullptr;
  int64_t step_id = 0;
  absl::Mutex stats_mu;
  std::vector<NodeExecStats>* stats ABSL_GUARDED_BY(stats_mu) = nullptr;
  bool collect_stats = false;
  Rendezvous* rendezvous = nullptr;
  DoneCallback done;
  // Frames and iterations, for a graph with control flow.
  std::unique_ptr<executor_internal::FlowState> flow;
};

namespace executor_internal {

inline int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// Empties a slot.
inline void Clear(TensorValue& value) {
  // Most slots are empty already (their value was taken): no stores then.
  if (value.tensor.IsInitialized()) value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
}

}  // namespace executor_internal
}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_EXECUTOR_ITEMS_H_
