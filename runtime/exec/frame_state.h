// The executor's frames and iterations, for graphs with control flow: which
// nodes a finished node readies, in which loop frame and iteration, with
// dead values, loop invariants, parallel_iterations and frames freed.
#ifndef RILL_RUNTIME_EXEC_FRAME_STATE_H_
#define RILL_RUNTIME_EXEC_FRAME_STATE_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/synchronization/mutex.h"
#include "kernels/framework/op_kernel.h"
#include "runtime/exec/fused_loop.h"

namespace rill::executor_internal {

// How a node takes part in control flow.
enum class FlowKind : uint8_t {
  kPlain,
  kMerge,          // Ready on its first live data input, or when all are dead.
  kEnter,          // Its outputs are in its loop's frame, iteration 0.
  kConstantEnter,  // Its outputs are in every iteration of its loop's frame.
  kExit,           // Its live outputs are in the frame around the loop.
  kNextIteration,  // Its live outputs are in the next iteration.
  kTransfer,       // _Send/_Recv: runs even when dead, to carry the deadness.
};

// An out-edge of a node; `dst_slot` indexes the input slots of the
// destination's frame (-1 for a control edge).
struct FlowEdge {
  int32_t output;
  int32_t dst;
  int32_t dst_slot;
  bool last_use;  // The output's last reader: takes the value.
};

struct FlowNode {
  FlowKind kind = FlowKind::kPlain;
  int32_t frame = 0;                 // The template of the frame it runs in.
  int32_t local = 0;                 // Its index among that frame's nodes.
  int32_t input_start = 0;           // Its first input slot in that frame.
  int32_t output_frame = 0;          // Enter: its loop's template.
  int32_t exit_index = -1;           // Exit: its index in its frame's exits.
  int32_t merge_forward_inputs = 0;  // Merge: data inputs that are not back edges.
  // A ControlTrigger: it runs, live, even when an input is dead, as
  // TensorFlow's (a loop's gradient orders its stack pushes with one).
  bool never_dead = false;
  // A _Recv that received a dead value is dead: its control edges carry
  // the deadness too, as TensorFlow's Recv marks its output dead.
  bool dead_when_empty = false;
  int32_t edges_begin = 0, edges_end = 0;  // Into FlowGraph::edges.
};

struct FlowTemplate {
  std::string name;  // Empty for the root.
  int32_t parent = -1;
  int32_t parallel_iterations = 1;
  int32_t num_enters = 0;  // Enters that deliver into each instance.
  int32_t num_input_slots = 0;
  std::vector<int32_t> initial_pending;  // Per local node.
  std::vector<int32_t> exits;            // Node ids.
  int32_t fused = -1;                    // Its program in FlowGraph::fused_loops; -1: none.
};

// Built once per executor.
struct FlowGraph {
  std::vector<FlowNode> nodes;  // Per executor node id.
  std::vector<FlowEdge> edges;
  std::vector<FlowTemplate> frames;  // [0] is the root.
  std::vector<int32_t> roots;        // Root-frame nodes with nothing to wait for.
  std::vector<FusedLoop> fused_loops;
};

struct IterationState {
  int64_t iter = 0;
  std::vector<TensorValue> inputs;
  std::vector<int32_t> pending;
  std::vector<int32_t> dead;       // Dead inputs seen; a Merge counts data ones.
  std::vector<uint8_t> taken;      // Merge: a live input arrived.
  int32_t outstanding_ops = 0;     // Readied or running nodes.
  int32_t outstanding_frames = 0;  // Loops started here, not finished.
};

struct FrameState;

// A node ready to run in a frame's iteration; or, with `fused_loop`, a
// whole loop frame to run as its FusedLoop (tagged with its LoopCond).
struct TaggedNode {
  int32_t id;
  FrameState* frame;
  IterationState* iter;
  bool dead;
  bool fused_loop = false;
};
using TaggedList = absl::InlinedVector<TaggedNode, 16>;

struct FrameState {
  int32_t tmpl = 0;
  uint64_t frame_id = 0;  // Equal in every partition: rendezvous keys use it.
  std::string name;
  FrameState* parent = nullptr;
  IterationState* parent_iter = nullptr;
  int32_t pending_enters = 0;
  int64_t oldest = 0;  // Iterations oldest..newest are live.
  int64_t newest = 0;
  // Live iterations by iteration % size (parallel_iterations + 1 entries).
  std::vector<IterationState*> iterations;
  // NextIteration values held back by parallel_iterations.
  std::vector<std::pair<int32_t, TensorValue>> deferred;
  struct Invariant {
    int32_t node;
    TensorValue value;
    bool dead;
  };
  std::vector<Invariant> invariants;
  std::vector<uint8_t> exit_live;  // Per template exit.
  // A fused loop's frame until its Enters have all delivered: the nodes its
  // values readied wait here (counted in their iteration), and then either
  // the fused loop or, when a value entered dead, these nodes run.
  bool holding = false;
  std::vector<TaggedNode> held;
  // A fused loop's final values, per template exit, handed to the Exits'
  // readers when the loop's run ends. The run writes them, and its first
  // iteration's input slots, without the lock: while it runs nothing else
  // reaches its frame (every Enter has delivered, nothing else is ready).
  std::vector<TensorValue> exit_values;

  IterationState* iteration(int64_t i) const {
    return iterations[static_cast<size_t>(i % static_cast<int64_t>(iterations.size()))];
  }
};

// Thread safety: every method requires mu.
class FlowState {
 public:
  explicit FlowState(const FlowGraph& graph);
  ~FlowState();
  FlowState(const FlowState&) = delete;
  FlowState& operator=(const FlowState&) = delete;

  absl::Mutex mu;

  // Sets up the root frame for a step; its input slots take the feeds.
  void Start();
  IterationState* root_iteration() { return root_.iterations[0]; }
  FrameState* root_frame() { return &root_; }
  // Hands the outputs of a finished node on (a dead node's are all dead)
  // and ends its run in its iteration; appends the nodes that became ready,
  // each counted in its iteration. For a fused loop's run the Exits hand
  // on the frame's exit_values instead, and the frame ends.
  void Propagate(const TaggedNode& node, TensorValue* outputs, TaggedList* ready);
  // Frees every frame and value; the next Start begins anew.
  void Clear();
  // Loop frames alive now (for tests of memory use).
  size_t num_frames() const { return children_.size(); }

 private:
  struct ChildKey {  // A frame's instance: its loop, opened in one iteration.
    FrameState* parent;
    int64_t iter;
    int32_t tmpl;
    template <typename H>
    friend H AbslHashValue(H h, const ChildKey& k) {
      return H::combine(std::move(h), k.parent, k.iter, k.tmpl);
    }
    bool operator==(const ChildKey&) const = default;
  };

  FrameState* FindOrCreateChild(FrameState* parent, IterationState* iter, int32_t tmpl);
  IterationState* NewIteration(int32_t tmpl, int64_t iter);
  void FreeIteration(int32_t tmpl, IterationState* state);
  // Opens iteration newest + 1 with the loop invariants in it.
  IterationState* AddIteration(FrameState* frame, TaggedList* ready);
  void ActivateOutputs(int32_t id, FrameState* frame, IterationState* iter, TensorValue* outputs,
                       bool node_dead, bool copy, TaggedList* ready);
  void Activate(int32_t dst, int32_t slot, FrameState* frame, IterationState* iter,
                TensorValue* value, bool dead, bool copy, TaggedList* ready);
  // Retires finished iterations in order, resumes deferred ones, and ends
  // the frame when it is done.
  void CleanUp(FrameState* frame, TaggedList* ready);
  void DeleteFrame(FrameState* frame, TaggedList* ready);
  void FinishFusedLoop(const TaggedNode& node, TaggedList* ready);
  // A held frame's Enters have all delivered: readies its fused run, or
  // the held nodes when a value is dead.
  void ReleaseHeld(FrameState* frame, TaggedList* ready);

  const FlowGraph& graph_;
  FrameState root_;
  absl::flat_hash_map<ChildKey, std::unique_ptr<FrameState>> children_;
  // Every iteration state made, reused from step to step; the free ones
  // by template.
  std::vector<std::unique_ptr<IterationState>> storage_;
  std::vector<std::vector<IterationState*>> free_iterations_;
};

// The frame id of the child `name` opened in iteration `iter` of the frame
// `parent_id`: a fixed hash, so that every partition computes the same.
uint64_t ChildFrameId(uint64_t parent_id, int64_t iter, const std::string& name);

}  // namespace rill::executor_internal

#endif  // RILL_RUNTIME_EXEC_FRAME_STATE_H_
