// A loop frame run as one straight-line program: for loops in the
// tf.while_loop layout whose nodes all run synchronous kernels here, the
// Merge, Switch, LoopCond, Identity and NextIteration nodes become tensor
// moves, decided once when the executor is built.
#ifndef RILL_RUNTIME_EXEC_FUSED_LOOP_H_
#define RILL_RUNTIME_EXEC_FUSED_LOOP_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/types/span.h"

namespace rill::executor_internal {

struct FlowGraph;

// Where a value goes: an input slot of the loop's frame (>= 0), or the
// next value of loop variable v (written NextValue(v)).
using FusedDest = int32_t;
constexpr FusedDest NextValue(int32_t var) { return -1 - var; }
constexpr int32_t VarOf(FusedDest dest) { return -1 - dest; }

// One loop frame's program. Per iteration: each variable's value goes to
// the nodes that read its Merge; the `pre` kernels run (the condition, and
// anything else that runs in every iteration); the LoopCond's input decides;
// then either each variable's value goes to its Exits and the loop ends, or
// it goes to what reads its Switch's true output, the `body` kernels run, and
// the NextIteration values become the variables' values.
struct FusedLoop {
  struct Range {
    int32_t begin = 0, end = 0;  // Into `dests`.
  };
  struct Var {
    int32_t merge = 0;       // Node id.
    int32_t enter_slot = 0;  // The Merge's input slot its Enter fills.
    Range pre;               // Readers of the Merge.
    Range body;              // Readers of the Switch's true output.
    std::vector<int32_t> exits;  // Exit node ids.
  };
  struct Step {
    int32_t node = 0;  // A node whose kernel runs.
    // Per output, its destinations: copies to all but the last, which takes
    // the value.
    std::vector<Range> outputs;
    // Its input slots that loop values fill, emptied once it has run (the
    // others hold loop invariants for every iteration).
    std::vector<int32_t> consumed;
    // (input slot, constant Enter node) of invariants it reads through a
    // reference: its kernel's run replaces them with the value read, so
    // each run starts from the invariant again.
    std::vector<std::pair<int32_t, int32_t>> reread;
  };
  std::vector<FusedDest> dests;
  std::vector<Var> vars;
  std::vector<Step> pre;
  std::vector<Step> body;
  int32_t loop_cond = 0;  // Node id; the tag of the loop's run.
  int32_t pred_slot = 0;  // The LoopCond's input slot.
  bool pred_is_invariant = false;
};

// What BuildFusedLoop needs to know of each executor node.
struct FusedNodeFacts {
  std::string_view name;
  std::string_view op;
  bool sync = true;         // Its kernel finishes in Compute.
  bool derefs = false;  // Reads a reference's value through an input.
};

// The program for loop template `tmpl` of `graph`, or nullopt with the
// reason in `why_not` when the frame does not fit: it holds a nested loop,
// a _Send/_Recv or an async kernel, a Switch or Merge that is not one of the
// loop's own, or an edge the program cannot express.
std::optional<FusedLoop> BuildFusedLoop(const FlowGraph& graph, int32_t tmpl,
                                        absl::Span<const FusedNodeFacts> facts,
                                        std::string* why_not);

// Whether loops run fused when Executor::Params allows it: yes unless the
// environment sets RILL_FUSE_LOOPS=0 (read once per process).
bool FusedLoopsEnabledByEnvironment();

}  // namespace rill::executor_internal

#endif  // RILL_RUNTIME_EXEC_FUSED_LOOP_H_
