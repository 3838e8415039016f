// Executor: runs a fixed set of nodes of a Graph on one device, step after
// step. Built once (one kernel per node); each step schedules nodes by
// pending counts on the inter-op pool, runs cheap kernels inline on the
// thread that readied them, frees a tensor when its last consumer has run,
// and stops at the first error. Measured kernel times decide which nodes
// are worth another thread and which kernels the intra-op pool.
#ifndef RILL_RUNTIME_EXEC_EXECUTOR_H_
#define RILL_RUNTIME_EXEC_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "graph/graph.h"
#include "graph/tensor.h"
#include "graph/tensor_id.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/kernel_registry.h"
#include "kernels/framework/op_kernel.h"
#include "kernels/framework/rendezvous.h"
#include "runtime/device/caching_allocator.h"
#include "runtime/device/device.h"
#include "runtime/exec/continuations.h"
#include "runtime/exec/frame_state.h"
#include "runtime/exec/kernel_cost.h"
#include "runtime/exec/step_stats.h"
#include "unsupported/Eigen/CXX11/ThreadPool"

namespace rill {

// Whether `value` may be fed for the tensor `name` of `dtype` and `shape`:
// INVALID_ARGUMENT naming the tensor and both dtypes or shapes otherwise.
absl::Status CheckFedValue(std::string_view name, DataType dtype, const PartialTensorShape& shape,
                           const Tensor& value);

// Thread safety: after Create, Run and RunAsync may be called concurrently
// (each call is its own step).
class Executor {
 public:
  struct Params {
    const Graph* graph = nullptr;  // Only read by Create.
    // The nodes to run; empty means all of `graph`. A data input from a
    // node outside the set must be fed; control inputs from outside the
    // set are ignored.
    std::vector<const Node*> nodes;
    // Outputs whose values each step supplies (Args::feeds, same order):
    // their consumers read the fed value, and a node whose every output is
    // fed does not run.
    std::vector<TensorEndpoint> feeds;
    // Outputs each step returns, in this order. A reference output is
    // returned as a copy of the variable's value at the time.
    std::vector<TensorEndpoint> fetches;
    Device* device = nullptr;                  // Must outlive the executor.
    const KernelRegistry* registry = nullptr;  // Null: StandardKernels().
    // Where expensive nodes run; null: every node runs on the thread that
    // called Run. Must outlive the executor.
    Eigen::ThreadPoolInterface* inter_op_pool = nullptr;
    // Whether a step may hand nodes to other pool threads; false: a step
    // runs on one thread (Run's caller, or one pool thread for RunAsync).
    bool parallel_nodes = true;
    // Whether a loop whose nodes all run synchronous kernels here, with no
    // nested loop and no cond inside (fused_loop.h), runs as one program on
    // one thread, its Merge, Switch, LoopCond, Identity and NextIteration
    // nodes reduced to tensor moves. Results, errors and cancellation are
    // the same either way. Setting RILL_FUSE_LOOPS=0 in the environment
    // turns it off for every executor; a device with memory of its own
    // (a GPU) never fuses.
    bool fuse_loops = true;
  };

  // A node is handed to another thread only once it has been measured to
  // take at least this long: waking a pool thread costs up to ~45 us on a
  // virtual machine, so smaller nodes finish sooner where they are.
  static constexpr int64_t kMinHandOffNanos = 50'000;

  // Creates every kernel. A node without a kernel fails with NOT_FOUND
  // naming the node.
  static absl::StatusOr<std::unique_ptr<Executor>> Create(const Params& params);
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  struct Args {
    int64_t step_id = 0;
    absl::Span<const Tensor> feeds;  // One per Params::feeds.
    // Lets the caller cancel the step; null: the executor uses its own.
    StepCancellation* cancellation = nullptr;
    // Filled with one entry per node that ran, in completion order.
    std::vector<NodeExecStats>* stats = nullptr;
    // Where _Send/_Recv kernels exchange tensors; null for a graph without
    // them. A node error aborts it, so that the other partitions' pending
    // receives fail instead of waiting.
    Rendezvous* rendezvous = nullptr;
    // Where RunAsync starts the step: it is handed the closure that runs
    // the first nodes. RunHere: the calling thread runs every node it can
    // (an async node waiting for another partition does not hold it), and
    // what becomes ready later continues on the pool; `done` may be called
    // before RunAsync returns. RunQuickHere: the same for a thread that
    // must stay responsive; it runs only nodes known to be quick (not
    // expensive, or measured under kMinHandOffNanos) and starts none after
    // kQuickRunBudgetNanos; the rest go to the pool (all of them without
    // parallel_nodes). Null: the inter-op pool.
    Runner runner;
  };
  using DoneCallback = std::function<void(absl::Status)>;

  // Runs one step; the calling thread runs nodes too (`args.runner` is not
  // used). On success `fetched`
  // holds one tensor per Params::fetches. Errors: a feed of the wrong dtype
  // or shape (nothing runs); the first kernel error as "node 'NAME' (OP):
  // message" with the kernel's code; FAILED_PRECONDITION "Attempting to use
  // uninitialized value VAR" when a node reads an unassigned variable
  // through a value input (unless its op allows uninitialized input); or
  // the cancellation's status.
  absl::Status Run(const Args& args, std::vector<Tensor>* fetched) const;
  // Starts a step where `args.runner` says and returns; `done` is called
  // once, from some thread, when the step has finished. `args.feeds`,
  // `args.cancellation`, `args.stats` and `fetched` must stay valid until
  // then. REQUIRES: Params::inter_op_pool was set.
  void RunAsync(const Args& args, std::vector<Tensor>* fetched, DoneCallback done) const;
  static constexpr int64_t kQuickRunBudgetNanos = 200'000;

  // The nodes it runs, in a topological order.
  int num_nodes() const;
  const NodeDef& node_def(int i) const;

 private:
  struct NodeItem;
  struct OutEdge;
  struct PartitionRun;
  struct AsyncRun;
  enum class NodeResult { kFailed, kDone, kPending };
  Executor() = default;

  absl::Status Build(const Params& params);
  absl::Status CheckFeeds(const Args& args) const;
  // The step, ready for its roots to run; null when it has finished
  // already (a bad feed, nothing to run).
  PartitionRun* Begin(const Args& args, std::vector<Tensor>* fetched, DoneCallback done) const;
  PartitionRun* StartStep(const Args& args, std::vector<Tensor>* fetched, DoneCallback done) const;
  // Runs the roots on this thread, quick ones only on a QuickContinuationsHere
  // thread.
  void ProcessRootsHere(PartitionRun* step) const;
  void Process(PartitionRun* step, absl::Span<const int32_t> first) const;
  // Process for a QuickContinuationsHere thread.
  void ProcessQuick(PartitionRun* step, absl::Span<const int32_t> first) const;
  // Runs a node's kernel; kPending: an async kernel finishes later, in
  // FinishAsync.
  NodeResult RunNode(PartitionRun* step, int32_t id) const;
  bool FinishNode(PartitionRun* step, int32_t id, absl::Status status, int64_t start_micros) const;
  // Accounts for an async node that finished after RunNode returned, and
  // runs what it readied.
  void FinishAsync(PartitionRun* step, int32_t id, bool ok) const;
  bool FetchOutputs(PartitionRun* step, const NodeItem& item, const TensorValue* outputs) const;
  // A copy of a variable's value that later steps do not change, in the
  // memory the device keeps it in.
  absl::StatusOr<Tensor> Snapshot(const Tensor& value) const;
  // Reads the variables behind the inputs that take a reference's value;
  // false (the step failed) when one is uninitialized.
  bool DerefInputs(PartitionRun* step, const NodeItem& item, TensorValue* inputs) const;
  KernelContext::Frame KernelFrame(PartitionRun* step, const NodeItem& item, TensorValue* inputs,
                                   TensorValue* outputs) const;
  // Stops the step with the node's error.
  void Fail(PartitionRun* step, const NodeItem& item, const absl::Status& status) const;
  // A node read `variable` before anything assigned it.
  void FailUninitialized(PartitionRun* step, const NodeItem& item,
                         const std::string& variable) const;
  void Abort(PartitionRun* step, const absl::Status& status) const;
  using ReadyList = absl::InlinedVector<int32_t, 16>;
  // Hands the outputs of `id` to its consumers; appends the nodes that
  // became ready and returns their number.
  int Propagate(PartitionRun* step, int32_t id, ReadyList* cheap, ReadyList* expensive) const;
  void Dispatch(PartitionRun* step, ReadyList* expensive, ReadyList* ready) const;
  // Processes `first` on a pool thread (in an InlineContinuations scope).
  void ProcessOnPool(PartitionRun* step, ReadyList first) const;
  // Not measured yet, or measured at kMinHandOffNanos or more.
  bool MayRunLong(int32_t id) const;
  void Finish(PartitionRun* step) const;
  void RecordStats(PartitionRun* step, const NodeItem& item, int64_t start_micros,
                   const TensorValue* outputs) const;

  // The same for graphs with control flow (executor_frames.cc): nodes run
  // tagged with their frame and iteration, and FlowState decides what a
  // finished node readies.
  using TaggedNode = executor_internal::TaggedNode;
  using TaggedList = executor_internal::TaggedList;
  struct FlowAsyncRun;
  absl::Status BuildFlow(const Params& params, const std::vector<const Node*>& nodes,
                         const std::vector<int32_t>& local);
  void StartFlowStep(PartitionRun* step, const Args& args) const;
  void ProcessFlowRootsHere(PartitionRun* step) const;
  void ProcessFlow(PartitionRun* step, TaggedList first) const;
  void ProcessFlowOnPool(PartitionRun* step, TaggedList first) const;
  void ProcessFlowQuick(PartitionRun* step, TaggedList first) const;
  void DispatchFlow(PartitionRun* step, TaggedList* expensive, TaggedList* ready) const;
  // Whether DispatchFlow may hand `node` to another thread: a live
  // expensive node, or a fused loop's run.
  bool IsExpensive(const TaggedNode& node) const;
  NodeResult RunFlowNode(PartitionRun* step, const TaggedNode& node, TensorValue* outputs) const;
  bool FinishFlowNode(PartitionRun* step, const TaggedNode& node, TensorValue* outputs,
                      absl::Status status, int64_t start_micros) const;
  void FinishFlowAsync(PartitionRun* step, const TaggedNode& node, TensorValue* outputs,
                       bool ok) const;
  int PropagateFlow(PartitionRun* step, const TaggedNode& node, TensorValue* outputs,
                    TaggedList* cheap, TaggedList* expensive) const;
  void FailInFrame(PartitionRun* step, const TaggedNode& node, const absl::Status& status) const;

  // Fused loops (executor_fused.cc): RunFusedLoop runs a loop frame's
  // whole run, tagged `fused_loop`; false when it failed or the step was
  // cancelled.
  void BuildFusedLoops();
  bool RunFusedLoop(PartitionRun* step, const TaggedNode& node) const;
  bool RunFusedStep(PartitionRun* step, const executor_internal::FusedLoop& loop,
                    const executor_internal::FusedLoop::Step& s,
                    executor_internal::FrameState* frame, int64_t iter, TensorValue* slots,
                    TensorValue* next, TensorValue* outputs) const;
  void FailInLoop(PartitionRun* step, const NodeItem& item,
                  const executor_internal::FrameState& frame, int64_t iter,
                  const absl::Status& status) const;

  Device* device_ = nullptr;
  // The device's allocator when it counts its bytes (traced steps report
  // them); else null.
  const CachingAllocator* counted_allocator_ = nullptr;
  Eigen::ThreadPoolInterface* pool_ = nullptr;
  bool parallel_nodes_ = true;
  bool parallel_kernels_ = false;  // The device has more than one intra-op thread.
  std::vector<NodeDef> defs_;
  std::vector<NodeItem> items_;
  // Per expensive node; measured as steps run, hence mutable.
  mutable std::unique_ptr<KernelCost[]> costs_;
  std::vector<OutEdge> out_edges_;
  std::vector<int32_t> control_edges_;  // Destination node of each.
  // (input, source node) of the inputs that read a reference's value.
  std::vector<std::pair<int32_t, int32_t>> deref_inputs_;
  std::vector<std::pair<int32_t, int32_t>> node_fetches_;  // (output, fetch index).
  std::vector<char> output_needed_;                        // Per output slot: read by someone.
  std::vector<int32_t> initial_pending_;
  std::vector<int32_t> roots_;
  int32_t num_input_slots_ = 0;
  int32_t num_output_slots_ = 0;

  struct Feed {
    std::string name;  // "node:k", for messages.
    DataType dtype;
    PartialTensorShape shape;
    std::vector<int32_t> slots;  // Input slots it fills.
  };
  std::vector<Feed> feeds_;
  std::vector<std::pair<int32_t, int32_t>> fetches_from_feeds_;  // (fetch, feed index).
  int num_fetches_ = 0;

  // Some node makes resources of the step (TensorArrays, stacks), which
  // the step's end drops.
  bool makes_step_resources_ = false;
  // Null for a graph without control flow.
  std::unique_ptr<executor_internal::FlowGraph> flow_;
  std::vector<std::vector<int32_t>> flow_feed_slots_;  // Per feed: root-frame input slots.
  std::vector<std::string> fetch_names_;               // "node:k", for messages.
  int32_t max_fused_outputs_ = 0;  // The most outputs of a fused loop's node.

  mutable absl::Mutex free_steps_mu_;
  mutable std::vector<std::unique_ptr<PartitionRun>> free_steps_ ABSL_GUARDED_BY(free_steps_mu_);
};

}  // namespace rill

#endif  // RILL_RUNTIME_EXEC_EXECUTOR_H_
