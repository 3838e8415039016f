#include "graph/while_gradients.h"

#include <algorithm>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "graph/attr_value_util.h"
#include "graph/control_flow_names.h"
#include "graph/gradients.h"
#include "graph/node_attrs.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "graph/tensor_proto_util.h"
#include "graph/while_loop.h"

namespace rill {
namespace {

absl::Status LoopError(const LoopStructure& loop, const Node& node, std::string_view what) {
  return absl::InvalidArgumentError(absl::StrFormat("the gradient of loop '%s': node '%s' (%s) %s",
                                                    loop.frame_name, node.name(), node.op(), what));
}

// The consumer of `node`:`output` whose op `is` accepts, or null.
Node* ConsumerOf(const Node& node, int output, bool (*is)(std::string_view)) {
  for (const Edge* edge : node.out_edges()) {
    if (!edge->IsControl() && edge->src_output == output && is(edge->dst->op())) return edge->dst;
  }
  return nullptr;
}

Output Op1(const Scope& scope, std::string_view op, const Output& x) {
  return Output(NodeBuilder(scope, op).Input(x).Finalize(), 0);
}

Output Op2(const Scope& scope, std::string_view op, const Output& x, const Output& y) {
  return Output(NodeBuilder(scope, op).Input(x).Input(y).Finalize(), 0);
}

Output IntConst(const Scope& scope, int32_t value) {
  return Output(NodeBuilder(scope, "Const")
                    .Attr("dtype", MakeAttr(DT_INT32))
                    .Attr("value", MakeAttr(TensorToProto(Tensor::Scalar<int32_t>(value))))
                    .Finalize(),
                0);
}

Output EnterFrame(const Scope& scope, const Output& x, const std::string& frame_name,
                  int parallel_iterations, bool constant) {
  return Output(NodeBuilder(scope, "Enter")
                    .Input(x)
                    .Attr("frame_name", MakeAttr(frame_name))
                    .Attr("is_constant", MakeAttr(constant))
                    .Attr("parallel_iterations", MakeAttr(parallel_iterations))
                    .Finalize(),
                0);
}

Output EnterFrame(const Scope& scope, const Output& x, const LoopStructure& loop, bool constant) {
  return EnterFrame(scope, x, loop.frame_name, loop.parallel_iterations, constant);
}

// The frame `node`'s outputs are in, for nodes made after `info` too (a
// nested loop's counter): that of its first input, entered or left as an
// Enter or an Exit does; -1 for a frame `info` does not know (a gradient
// loop's).
int OutputFrameOf(const ControlFlowInfo& info, const Node* node) {
  if (node->id() < static_cast<int>(info.output_frame_of.size())) {
    return info.output_frame_of[node->id()];
  }
  if (IsEnterOp(node->op())) {
    absl::StatusOr<std::string> name = GetStringAttr(node->def(), "frame_name");
    for (size_t f = 1; name.ok() && f < info.frames.size(); ++f) {
      if (info.frames[f].name == *name) return static_cast<int>(f);
    }
    return -1;
  }
  for (const Edge* edge : node->in_edges()) {
    if (edge == nullptr || ControlFlowInfo::IsBackEdge(*edge)) continue;
    const int frame = OutputFrameOf(info, edge->src);
    if (!IsExitOp(node->op()) || frame <= 0) return frame;
    return info.frames[frame].parent;
  }
  return 0;
}

// A cond branch inside a loop's body: a value in it is live in an
// iteration only when `pred` takes `branch`.
struct BranchGate {
  Output pred;
  int branch = 0;
};

bool IsCondSwitch(const Node& node) {
  const Edge* pred = node.num_inputs() == 2 ? node.input_edge(1) : nullptr;
  return IsSwitchOp(node.op()) && pred != nullptr && !IsLoopCondOp(pred->src->op());
}

bool IsLoopMerge(const Node& node) {
  for (const Edge* edge : node.in_edges()) {
    if (edge != nullptr && ControlFlowInfo::IsBackEdge(*edge)) return true;
  }
  return false;
}

// The cond branches of the loop's body that `value` lies in. TensorFlow
// records each op's cond context as it builds it; here the graph is walked
// back from the value to the first cond Switch on every path. A cond's
// Merge lets the walk through its own Switches (it is live when either
// branch is), and a loop nested in the body is crossed from its Exits to
// what its Enters read.
std::vector<BranchGate> BranchGatesOf(const ControlFlowInfo& info, const Output& value) {
  std::vector<BranchGate> gates;
  const auto gate = [&](const Node* node, int branch) {
    const Edge* pred = node->input_edge(1);
    const Output out(pred->src, pred->src_output);
    for (const BranchGate& g : gates) {
      if (g.pred.node() == out.node() && g.pred.index() == out.index() && g.branch == branch) {
        return;
      }
    }
    gates.push_back({out, branch});
  };
  // (node, cond Merges passed whose Switches the walk has still to pass)
  std::vector<std::pair<Node*, int>> pending;
  absl::flat_hash_set<std::pair<Node*, int>> seen;
  constexpr int kMaxNesting = 64;
  const auto reach = [&](Node* node, int port, int merges) {
    if (IsEnterOp(node->op()) || merges > kMaxNesting) return;
    if (IsCondSwitch(*node) && port >= 0 && merges == 0) return gate(node, port);
    if (IsSwitchOp(node->op()) && !IsCondSwitch(*node)) return;  // The loop's own.
    if (IsMergeOp(node->op()) && IsLoopMerge(*node)) return;
    if (IsCondSwitch(*node) && port >= 0) --merges;
    if (IsMergeOp(node->op())) ++merges;
    if (seen.insert({node, merges}).second) pending.push_back({node, merges});
  };
  reach(value.node(), value.index(), 0);
  while (!pending.empty()) {
    const auto [node, merges] = pending.back();
    pending.pop_back();
    if (IsExitOp(node->op()) && node->id() < static_cast<int>(info.frame_of.size())) {
      // A nested loop: live when what it entered was.
      for (const Node* enter : info.frames[info.frame_of[node->id()]].enters) {
        const Edge* in = enter->input_edge(0);
        if (in != nullptr) reach(in->src, in->src_output, merges);
      }
      continue;
    }
    for (const Edge* edge : node->in_edges()) {
      if (edge == nullptr || ControlFlowInfo::IsBackEdge(*edge)) continue;
      reach(edge->src, edge->IsControl() ? -1 : edge->src_output, merges);
    }
  }
  return gates;
}

// A counter in the forward loop's frame: how many times its body ran. The
// stack pushes of each iteration run before its NextIteration, and after
// the previous iteration's, so every stack fills in iteration order.
struct ForwardCounter {
  Output start;    // Its 0, in the frame around the loop.
  Output count;    // Its Exit.
  Operation body;  // Its value inside the body (a pivot).
  Node* next_iteration = nullptr;
};

absl::StatusOr<ForwardCounter> AddForwardCounter(const Scope& scope, const LoopStructure& loop) {
  Graph* graph = scope.graph();
  // The start runs where the loop's inputs do (the frame around it).
  const Edge* source = loop.vars[0].enter->input_edge(0);
  ForwardCounter counter;
  counter.start = IntConst(scope.WithControlDependencies({Operation(source->src)}), 0);
  const Output enter = EnterFrame(scope, counter.start, loop, false);
  const Output merge(NodeBuilder(scope, "Merge").Input({enter, enter}).Finalize(), 0);
  const Operation switched =
      NodeBuilder(scope, "Switch").Input(merge).Input(Output(loop.loop_cond, 0)).Finalize();
  counter.count = Op1(scope, "Exit", Output(switched, 0));
  const Output body = Op1(scope, "Identity", Output(switched, 1));
  counter.body = body.op();
  const Output one = IntConst(scope.WithControlDependencies(body), 1);
  const Output next = Op1(scope, "NextIteration", Op2(scope, "Add", body, one));
  RETURN_IF_ERROR(scope.status());
  RETURN_IF_ERROR(graph->UpdateEdge(next.node(), 0, merge.node(), 1));
  counter.next_iteration = next.node();
  return counter;
}

}  // namespace

absl::StatusOr<LoopStructure> FindLoopStructure(const ControlFlowInfo& info, int frame) {
  LoopStructure loop;
  loop.frame = frame;
  const FrameInfo& frame_info = info.frames[frame];
  loop.frame_name = frame_info.name;
  loop.parallel_iterations = frame_info.parallel_iterations;
  for (const Node* const_enter : frame_info.enters) {
    Node* enter = const_cast<Node*>(const_enter);
    absl::StatusOr<bool> constant = GetBoolAttr(enter->def(), "is_constant");
    if (constant.ok() && *constant) {
      loop.invariants.push_back(enter);
      continue;
    }
    LoopVariable var;
    var.enter = enter;
    var.merge = ConsumerOf(*enter, 0, IsMergeOp);
    if (var.merge == nullptr) return LoopError(loop, *enter, "feeds no Merge");
    var.switch_node = ConsumerOf(*var.merge, 0, IsSwitchOp);
    if (var.switch_node == nullptr) return LoopError(loop, *var.merge, "feeds no Switch");
    var.exit = ConsumerOf(*var.switch_node, 0, IsExitOp);
    for (const Edge* edge : var.merge->in_edges()) {
      if (edge != nullptr && ControlFlowInfo::IsBackEdge(*edge)) var.next_iteration = edge->src;
    }
    if (var.next_iteration == nullptr) return LoopError(loop, *var.merge, "has no NextIteration");
    const Edge* pred = var.switch_node->input_edge(1);
    if (!IsLoopCondOp(pred->src->op())) {
      return LoopError(loop, *var.switch_node, "is not switched by the loop's LoopCond");
    }
    loop.loop_cond = pred->src;
    loop.vars.push_back(var);
  }
  if (loop.vars.empty()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("the gradient of loop '%s': it has no loop variables", loop.frame_name));
  }
  return loop;
}

absl::StatusOr<LoopGradients> AddWhileLoopGradient(const Scope& scope, const ControlFlowInfo& info,
                                                   const LoopStructure& loop,
                                                   const std::vector<Output>& exit_grads,
                                                   const BodyGradientFn& body_gradients,
                                                   const std::vector<GradientFrame>& outer_frames,
                                                   const std::vector<bool>& wanted) {
  // The forward side is built without the gradient loops' mappers and
  // control dependencies: it runs in the forward frames.
  const Scope plain = scope.WithoutInputMapper().WithNoControlDependencies();
  const Scope forward = plain.NewSubScope(loop.frame_name + "_count");
  ASSIGN_OR_RETURN(ForwardCounter counter, AddForwardCounter(forward, loop));
  Graph* graph = scope.graph();

  // The differentiable invariants whose gradient is wanted.
  const auto differentiated = [&](size_t j) {
    return IsDifferentiableType(loop.invariants[j]->output_type(0)) &&
           (wanted.empty() || wanted[j]);
  };
  std::vector<Node*> invariants;
  for (size_t j = 0; j < loop.invariants.size(); ++j) {
    if (differentiated(j)) invariants.push_back(loop.invariants[j]);
  }
  const size_t num_vars = loop.vars.size();
  std::vector<Output> inputs = {counter.count};
  for (size_t i = 0; i < num_vars; ++i) {
    const Output& dy = exit_grads[i];
    // Zeros shaped like the variable's start, outside the loop (its Enter's
    // output is inside the forward frame).
    const Edge* source = loop.vars[i].enter->input_edge(0);
    inputs.push_back(dy.ok() ? dy
                             : Op1(scope, "ZerosLike", Output(source->src, source->src_output)));
  }
  for (Node* enter : invariants) {
    const Edge* source = enter->input_edge(0);
    inputs.push_back(Op1(scope, "ZerosLike", Output(source->src, source->src_output)));
  }
  RETURN_IF_ERROR(scope.status());

  // Forward values the body's gradient reads, popped in the gradient loop.
  // Each stack lives in the frame around the loop: a loop inside another
  // loop's body gets a stack per outer iteration (outer iterations may run
  // at once, and their pushes would mix in one stack), and the outer
  // gradient loop pops that iteration's handle through its own mapper.
  auto pops = std::make_shared<absl::flat_hash_map<std::pair<Node*, int>, Output>>();
  const bool nested = info.frames[loop.frame].parent > 0;
  const Scope stack_scope = plain.NewSubScope(loop.frame_name + "_stacks");
  const Scope handle_scope =
      nested ? stack_scope.WithControlDependencies({counter.start.op()}) : stack_scope;
  const Scope pop_scope = nested ? scope.WithNoControlDependencies() : stack_scope;
  const std::string gradient_frame = scope.name_prefix() + loop.frame_name;
  std::vector<GradientFrame> gradient_frames = outer_frames;
  gradient_frames.push_back(GradientFrame{gradient_frame, loop.parallel_iterations});

  const auto cond = [](const Scope& s, const std::vector<Output>& in, Output* out) {
    *out = Op2(s, "Greater", in[0], IntConst(s, 0));
    return s.status();
  };
  Node* forward_sync = nullptr;
  const auto body = [&](const Scope& s, const std::vector<Output>& in,
                        std::vector<Output>* out) -> absl::Status {
    std::vector<Operation> popped;
    const Scope::InputMapper saved = [&, s](const Output& value) -> Output {
      Node* node = value.node();
      if (OutputFrameOf(info, node) != loop.frame) return value;
      if (std::find(loop.invariants.begin(), loop.invariants.end(), node) !=
          loop.invariants.end()) {
        // A loop invariant: the gradient loop enters its source itself.
        const Edge* source = node->input_edge(0);
        return Output(source->src, source->src_output);
      }
      if (auto it = pops->find({node, value.index()}); it != pops->end()) return it->second;
      const DataType type = BaseType(value.type());
      const Output handle(NodeBuilder(stack_scope, "StackV2")
                              .Input(IntConst(handle_scope, -1))
                              .Attr("elem_type", MakeAttr(type))
                              .Finalize(),
                          0);
      // A value in a cond's branch is dead, and pushes nothing, in the
      // iterations that took the other branch. The counter goes on
      // through a ControlTrigger, which a dead push does not kill (as
      // TensorFlow's forward_sync), and the gradient pops only where the
      // saved predicates took the value's branch.
      if (forward_sync == nullptr) {
        const Operation sync =
            NodeBuilder(stack_scope.WithControlDependencies({counter.body}), "ControlTrigger")
                .Finalize();
        if (!sync.ok()) return Output();
        forward_sync = sync.node();
        graph->AddControlEdge(forward_sync, counter.next_iteration);
      }
      const Operation push =
          NodeBuilder(stack_scope.WithControlDependencies({counter.body}), "StackPushV2")
              .Input(EnterFrame(stack_scope, handle, loop, /*constant=*/true))
              .Input(value)
              .Finalize();
      if (push.ok()) graph->AddControlEdge(push.node(), forward_sync);
      // The handle is made while the gradient loop's body is built, after
      // the loop began, so WhileLoop takes it for one of the body's own
      // values and would not enter it: it enters here.
      Output gated = EnterFrame(pop_scope, handle, gradient_frame, loop.parallel_iterations, true);
      for (const BranchGate& gate : BranchGatesOf(info, value)) {
        gated = Output(NodeBuilder(s, "Switch").Input(gated).Input(saved(gate.pred)).Finalize(),
                       gate.branch);
      }
      const Operation pop =
          NodeBuilder(s, "StackPopV2").Input(gated).Attr("elem_type", MakeAttr(type)).Finalize();
      popped.push_back(pop);
      return pops->insert_or_assign({node, value.index()}, Output(pop, 0)).first->second;
    };
    std::vector<Output> ys, xs;
    for (const LoopVariable& var : loop.vars) {
      ys.push_back(Output(var.next_iteration->input_edge(0)->src,
                          var.next_iteration->input_edge(0)->src_output));
      xs.push_back(Output(var.switch_node, 1));
    }
    for (Node* enter : invariants) xs.push_back(Output(enter, 0));
    const std::vector<Output> grad_ys(in.begin() + 1, in.begin() + 1 + num_vars);
    ASSIGN_OR_RETURN(std::vector<Output> grads,
                     body_gradients(s.WithInputMapper(saved), ys, xs, grad_ys, gradient_frames));
    // The next iteration's pops wait for this one's, through a
    // ControlTrigger that a dead (gated) pop does not kill: each stack
    // empties in order.
    std::vector<Operation> sync;
    if (!popped.empty()) {
      sync.push_back(NodeBuilder(s.WithControlDependencies(popped), "ControlTrigger").Finalize());
    }
    out->push_back(Op2(s.WithControlDependencies(sync), "Sub", in[0], IntConst(s, 1)));
    for (size_t i = 0; i < num_vars; ++i) {
      out->push_back(grads[i].ok() ? grads[i] : Op1(s, "ZerosLike", in[1 + i]));
    }
    for (size_t j = 0; j < invariants.size(); ++j) {
      const Output& grad = grads[num_vars + j];
      const Output& sum = in[1 + num_vars + j];
      out->push_back(grad.ok() ? Op2(s, "Add", sum, grad) : sum);
    }
    return s.status();
  };
  std::vector<Output> exits;
  RETURN_IF_ERROR(ops::WhileLoop(
      scope, inputs, cond, body, &exits,
      {.frame_name = gradient_frame, .parallel_iterations = loop.parallel_iterations}));
  LoopGradients result;
  result.vars.assign(exits.begin() + 1, exits.begin() + 1 + num_vars);
  size_t next_invariant = 0;
  for (size_t j = 0; j < loop.invariants.size(); ++j) {
    result.invariants.push_back(differentiated(j) ? exits[1 + num_vars + next_invariant++]
                                                  : Output());
  }
  return result;
}

}  // namespace rill
