#include "graph/gradients.h"

#include <algorithm>
#include <deque>
#include <memory>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "graph/control_flow.h"
#include "graph/control_flow_names.h"
#include "absl/strings/str_format.h"
#include "graph/node_builder.h"
#include "graph/status_macros.h"
#include "graph/types.h"
#include "graph/while_gradients.h"

namespace rill {

void GradientRegistry::Register(std::string op, GradientFunction fn) {
  no_gradient_.erase(op);
  functions_.insert_or_assign(std::move(op), std::move(fn));
}

void GradientRegistry::RegisterNoGradient(std::string op) {
  functions_.erase(op);
  no_gradient_.insert_or_assign(std::move(op), true);
}

absl::StatusOr<const GradientFunction*> GradientRegistry::Lookup(std::string_view op) const {
  const std::string key(op);
  if (auto it = functions_.find(key); it != functions_.end()) return &it->second;
  if (no_gradient_.contains(key)) return nullptr;
  return absl::NotFoundError(absl::StrFormat("No gradient defined for op type '%s'", op));
}

bool IsDifferentiableType(DataType dtype) {
  switch (BaseType(dtype)) {
    case DT_HALF:
    case DT_BFLOAT16:
    case DT_FLOAT:
    case DT_DOUBLE:
    case DT_COMPLEX64:
    case DT_COMPLEX128:
    case DT_RESOURCE:
    case DT_VARIANT:
      return true;
    default:
      return false;
  }
}

namespace {


using OutputKey = std::pair<const Node*, int>;

OutputKey KeyOf(const Output& output) { return {output.node(), output.index()}; }

// The sum of `grads` (null entries skipped); null when none is left.
Output SumGradients(const Scope& scope, const std::vector<Output>& grads) {
  std::vector<Output> present;
  for (const Output& g : grads) {
    if (g.ok()) present.push_back(g);
  }
  if (present.empty()) return Output();
  if (present.size() == 1) return present.front();
  Operation add = NodeBuilder(scope, "AddN").Input(present).Finalize();
  return Output(add, 0);
}

Output UnaryOp(const Scope& scope, std::string_view op, const Output& x) {
  return Output(NodeBuilder(scope, op).Input(x).Finalize(), 0);
}

// One run of AddGradients: which nodes lie between xs and ys, and the
// gradients gathered so far for each of their outputs.
// A loop inside the part being differentiated is one unit: its Exits
// gather their gradients, then AddWhileLoopGradient builds the loop that
// carries them back to its Enters' inputs.
class GradientBuilder {
 public:
  GradientBuilder(const Scope& scope, const std::vector<Output>& ys, const std::vector<Output>& xs,
                  const std::vector<Output>& grad_ys, const GradientRegistry& registry)
      : scope_(scope), ys_(ys), xs_(xs), grad_ys_(grad_ys), registry_(registry) {}
  // Over one iteration of the body of loop `frame` (a gradient loop's
  // body): NextIterations bound it, and an x without a gradient gets null.
  GradientBuilder(const Scope& scope, const std::vector<Output>& ys, const std::vector<Output>& xs,
                  const std::vector<Output>& grad_ys, const GradientRegistry& registry,
                  std::shared_ptr<const ControlFlowInfo> flow, int frame,
                  std::vector<GradientFrame> gradient_frames)
      : scope_(scope),
        ys_(ys),
        xs_(xs),
        grad_ys_(grad_ys),
        registry_(registry),
        flow_(std::move(flow)),
        frame_(frame),
        gradient_frames_(std::move(gradient_frames)) {}

  absl::StatusOr<std::vector<Output>> Build();

 private:
  // The loop (a frame inside frame_) that `node` belongs to, or -1.
  int LoopOf(const Node* node) const {
    return node->id() < static_cast<int>(loop_of_.size()) ? loop_of_[node->id()] : -1;
  }
  // An Exit of the loop LoopOf names, not of a loop inside it: the loop's
  // gradient waits for these.
  bool IsLoopExit(const Node* node) const {
    return IsExitOp(node->op()) && LoopOf(node) >= 0 &&
           flow_->frame_of[node->id()] == LoopOf(node);
  }
  absl::Status FindLoops();
  // An Exit of loop `loop` has all its gradients; the last one builds the
  // loop's gradient.
  absl::Status ExitReady(Node* exit, int loop, const Output& dy);
  void SendToSource(const Edge& edge, const Output& grad);

  absl::Status Validate() const;
  // Marks the nodes reachable from xs along differentiable edges that also
  // reach a y, and counts, per such node, the consumers that will send it
  // a gradient.
  void FindNodesBetween();
  absl::Status Backprop(Node* node);

  bool IsBetween(const Node* node) const {
    return node->id() < static_cast<int>(between_.size()) && between_[node->id()];
  }

  Scope scope_;
  const std::vector<Output>& ys_;
  const std::vector<Output>& xs_;
  const std::vector<Output>& grad_ys_;
  const GradientRegistry& registry_;

  std::vector<bool> between_;  // By node id.
  std::vector<int> pending_;   // By node id: gradients still to come.
  absl::flat_hash_set<OutputKey> is_x_;
  absl::flat_hash_map<OutputKey, std::vector<Output>> backprops_;
  std::deque<Node*> ready_;

  std::shared_ptr<const ControlFlowInfo> flow_;  // Null without loops.
  int frame_ = 0;
  std::vector<GradientFrame> gradient_frames_;  // The gradient loops this builds in.
  std::vector<int> loop_of_;  // By node id.
  absl::flat_hash_map<int, int> exits_waiting_;  // By loop.
  absl::flat_hash_map<int, absl::flat_hash_map<const Node*, Output>> exit_grads_;
};

absl::Status GradientBuilder::FindLoops() {
  Graph* graph = scope_.graph();
  if (flow_ == nullptr) {
    const bool any = std::any_of(graph->nodes().begin(), graph->nodes().end(),
                                 [](const Node* node) { return IsEnterOp(node->op()); });
    if (!any) return absl::OkStatus();
    ASSIGN_OR_RETURN(ControlFlowInfo info, BuildControlFlowInfo(*graph));
    flow_ = std::make_shared<const ControlFlowInfo>(std::move(info));
    // Called inside a loop's body (the ys in its frame): the gradient is
    // built there, that loop's nodes differentiated one by one.
    int frame = -1;
    for (const Output& y : ys_) {
      const int id = y.node()->id();
      const int f =
          id < static_cast<int>(flow_->output_frame_of.size()) ? flow_->output_frame_of[id] : 0;
      frame = frame < 0 || frame == f ? f : 0;
    }
    frame_ = std::max(frame, 0);
  }
  // Each node's frame, walked up to the one just inside frame_.
  const int n = static_cast<int>(flow_->frame_of.size());
  loop_of_.assign(n, -1);
  for (int id = 0; id < n; ++id) {
    const Node* node = graph->nodes()[id];
    int frame = IsEnterOp(node->op()) ? flow_->output_frame_of[id] : flow_->frame_of[id];
    while (frame > 0 && flow_->frames[frame].parent != frame_) frame = flow_->frames[frame].parent;
    if (frame > 0 && frame != frame_) loop_of_[id] = frame;
  }
  return absl::OkStatus();
}


absl::Status GradientBuilder::Validate() const {
  RETURN_IF_ERROR(scope_.status());
  if (ys_.empty()) return absl::InvalidArgumentError("AddGradients needs at least one y");
  if (!grad_ys_.empty() && grad_ys_.size() != ys_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("AddGradients got %d grad_ys for %d ys", grad_ys_.size(), ys_.size()));
  }
  const auto check = [&](const std::vector<Output>& outputs, const char* what) -> absl::Status {
    for (size_t i = 0; i < outputs.size(); ++i) {
      const Output& o = outputs[i];
      if (!o.ok()) {
        return absl::InvalidArgumentError(absl::StrFormat("AddGradients: %s[%d] is null", what, i));
      }
      if (scope_.graph()->FindNode(o.node()->name()) != o.node()) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "AddGradients: %s[%d] '%s' is not in the scope's graph", what, i, o.name()));
      }
    }
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(check(ys_, "ys"));
  RETURN_IF_ERROR(check(xs_, "xs"));
  RETURN_IF_ERROR(check(grad_ys_, "grad_ys"));
  for (size_t i = 0; i < grad_ys_.size(); ++i) {
    if (BaseType(grad_ys_[i].type()) != BaseType(ys_[i].type())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("AddGradients: grad_ys[%d] '%s' is %s but y '%s' is %s", i,
                          grad_ys_[i].name(), DataTypeString(BaseType(grad_ys_[i].type())),
                          ys_[i].name(), DataTypeString(BaseType(ys_[i].type()))));
    }
  }
  return absl::OkStatus();
}

void GradientBuilder::FindNodesBetween() {
  const int n = scope_.graph()->num_nodes();
  std::vector<bool> from_x(n, false);
  std::vector<Node*> stack;
  const auto visit_consumers = [&](const Node* node, int only_output) {
    for (const Edge* e : node->out_edges()) {
      if (e->IsControl() || (only_output >= 0 && e->src_output != only_output)) continue;
      // A loop body's gradient ends at its NextIterations.
      if (frame_ != 0 && IsNextIterationOp(e->dst->op()) && LoopOf(e->dst) < 0) continue;
      // A loop inside is one unit: around its back edge, what its body reads
      // (a weight entering as an invariant) reaches its Exits.
      if (ControlFlowInfo::IsBackEdge(*e) && LoopOf(e->dst) < 0) continue;
      if (!IsDifferentiableType(node->output_type(e->src_output)) || from_x[e->dst->id()]) continue;
      from_x[e->dst->id()] = true;
      stack.push_back(e->dst);
    }
  };
  for (const Output& x : xs_) visit_consumers(x.node(), x.index());
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    visit_consumers(node, -1);
  }

  between_.assign(n, false);
  for (const Output& y : ys_) {
    if (from_x[y.node()->id()] && !between_[y.node()->id()]) {
      between_[y.node()->id()] = true;
      stack.push_back(y.node());
    }
  }
  while (!stack.empty()) {
    Node* node = stack.back();
    stack.pop_back();
    // Back edges count here: what a loop's body reads from an x (a weight
    // entering as an invariant) reaches the loop's Exits only around the
    // loop.
    for (const Edge* e : node->in_edges()) {
      if (e->IsControl() || !from_x[e->src->id()] || between_[e->src->id()] ||
          !IsDifferentiableType(e->src->output_type(e->src_output))) {
        continue;
      }
      between_[e->src->id()] = true;
      stack.push_back(e->src);
    }
  }

  // Inside a loop only its Enters (fed from outside) and Exits (read
  // outside) take part; the loop's gradient stands for the rest.
  pending_.assign(n, 0);
  for (const Node* node : scope_.graph()->nodes()) {
    if (node->id() >= n || !between_[node->id()]) continue;
    if (LoopOf(node) >= 0 && !IsEnterOp(node->op())) {
      if (IsLoopExit(node)) ++exits_waiting_[LoopOf(node)];
      continue;
    }
    for (const Edge* e : node->in_edges()) {
      if (!e->IsControl() && between_[e->src->id()] &&
          IsDifferentiableType(e->src->output_type(e->src_output))) {
        ++pending_[e->src->id()];
      }
    }
  }
  for (Node* node : scope_.graph()->nodes()) {
    if (node->id() < n && between_[node->id()] && pending_[node->id()] == 0 &&
        (LoopOf(node) < 0 || IsLoopExit(node))) {
      ready_.push_back(node);
    }
  }
}

void GradientBuilder::SendToSource(const Edge& e, const Output& grad) {
  const OutputKey src(e.src, e.src_output);
  const bool to_between = IsBetween(e.src);
  if (!to_between && !is_x_.contains(src)) return;
  if (!IsDifferentiableType(e.src->output_type(e.src_output))) return;
  if (grad.ok()) backprops_[src].push_back(grad);
  if (to_between && --pending_[e.src->id()] == 0) ready_.push_back(e.src);
}

absl::Status GradientBuilder::ExitReady(Node* exit, int loop, const Output& dy) {
  exit_grads_[loop][exit] = dy;
  if (--exits_waiting_[loop] > 0) return absl::OkStatus();
  ASSIGN_OR_RETURN(LoopStructure structure, FindLoopStructure(*flow_, loop));
  std::vector<Output> dys;
  for (const LoopVariable& var : structure.vars) {
    auto it = exit_grads_[loop].find(var.exit);
    dys.push_back(it == exit_grads_[loop].end() ? Output() : it->second);
  }
  const BodyGradientFn body = [this, loop](const Scope& scope, const std::vector<Output>& ys,
                                           const std::vector<Output>& xs,
                                           const std::vector<Output>& grad_ys,
                                           const std::vector<GradientFrame>& frames) {
    return GradientBuilder(scope, ys, xs, grad_ys, registry_, flow_, loop, frames).Build();
  };
  // An invariant off every path from an x (a model's input) needs no sum.
  std::vector<bool> wanted;
  for (Node* enter : structure.invariants) wanted.push_back(IsBetween(enter));
  ASSIGN_OR_RETURN(LoopGradients grads, AddWhileLoopGradient(scope_, *flow_, structure, dys, body,
                                                             gradient_frames_, wanted));
  for (size_t i = 0; i < structure.vars.size(); ++i) {
    if (IsBetween(structure.vars[i].enter)) {
      SendToSource(*structure.vars[i].enter->input_edge(0), grads.vars[i]);
    }
  }
  for (size_t j = 0; j < structure.invariants.size(); ++j) {
    if (IsBetween(structure.invariants[j])) {
      SendToSource(*structure.invariants[j]->input_edge(0), grads.invariants[j]);
    }
  }
  return absl::OkStatus();
}

absl::Status GradientBuilder::Backprop(Node* node) {
  const Scope node_scope = scope_.NewSubScope(node->name() + "_grad");
  std::vector<Output> dys(node->num_outputs());
  bool any_gradient = false;
  for (int i = 0; i < node->num_outputs(); ++i) {
    auto it = backprops_.find(OutputKey(node, i));
    if (it == backprops_.end()) continue;
    dys[i] = SumGradients(node_scope, it->second);
    // All of this output's gradients have arrived: an x keeps the sum.
    if (is_x_.contains(it->first)) it->second = {dys[i]};
    any_gradient = any_gradient || dys[i].ok();
  }

  if (const int loop = LoopOf(node); loop >= 0) return ExitReady(node, loop, dys[0]);

  std::vector<Output> dxs;
  if (any_gradient) {
    absl::StatusOr<const GradientFunction*> fn = registry_.Lookup(node->op());
    if (!fn.ok()) {
      return absl::NotFoundError(absl::StrFormat(
          "No gradient defined for operation '%s' (op type: %s)", node->name(), node->op()));
    }
    if (*fn != nullptr) {
      absl::Status status = (**fn)(node_scope, Operation(node), dys, &dxs);
      if (status.ok()) status = scope_.status();
      if (!status.ok()) {
        return absl::Status(status.code(),
                            absl::StrFormat("computing the gradient of '%s' (%s): %s", node->name(),
                                            node->op(), status.message()));
      }
      if (static_cast<int>(dxs.size()) != node->num_inputs()) {
        return absl::InternalError(absl::StrFormat(
            "the gradient function of %s returned %d gradients for %d inputs of '%s'", node->op(),
            dxs.size(), node->num_inputs(), node->name()));
      }
    }
  }

  for (int i = 0; i < node->num_inputs(); ++i) {
    SendToSource(*node->input_edge(i), i < static_cast<int>(dxs.size()) ? dxs[i] : Output());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Output>> GradientBuilder::Build() {
  RETURN_IF_ERROR(Validate());
  scope_ = scope_.NewSubScope("gradients");
  for (const Output& x : xs_) is_x_.insert(KeyOf(x));
  RETURN_IF_ERROR(FindLoops());
  FindNodesBetween();

  for (size_t i = 0; i < ys_.size(); ++i) {
    const Output& y = ys_[i];
    if (!IsBetween(y.node()) && !is_x_.contains(KeyOf(y))) continue;
    const Output seed = grad_ys_.empty() ? UnaryOp(scope_, "OnesLike", y) : grad_ys_[i];
    backprops_[KeyOf(y)].push_back(seed);
  }

  while (!ready_.empty()) {
    Node* node = ready_.front();
    ready_.pop_front();
    RETURN_IF_ERROR(Backprop(node));
  }

  std::vector<Output> result;
  result.reserve(xs_.size());
  for (const Output& x : xs_) {
    auto it = backprops_.find(KeyOf(x));
    Output grad = it == backprops_.end() ? Output() : SumGradients(scope_, it->second);
    if (!grad.ok() && gradient_frames_.empty()) grad = UnaryOp(scope_, "ZerosLike", x);
    // A repeated x shares one sum.
    if (it != backprops_.end()) it->second = {grad};
    result.push_back(grad);
  }
  RETURN_IF_ERROR(scope_.status());
  return result;
}

}  // namespace

absl::StatusOr<std::vector<Output>> AddGradients(const Scope& scope, const std::vector<Output>& ys,
                                                 const std::vector<Output>& xs,
                                                 const std::vector<Output>& grad_ys,
                                                 const GradientRegistry& registry) {
  return GradientBuilder(scope, ys, xs, grad_ys, registry).Build();
}

}  // namespace rill
