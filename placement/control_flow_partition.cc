#include "placement/control_flow_partition.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/attr_value_util.h"
#include "graph/control_flow_names.h"
#include "graph/node_attrs.h"
#include "graph/status_macros.h"
#include "graph/types.h"
#include "placement/device_name.h"

namespace rill {
namespace {

bool IsNameChar(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
         c == '.' || c == '/';
}

// `text` as part of a node name: other characters become '_', a name must
// not start with '_' or '/', and no part of it is empty (TensorFlow's
// frame names end in '/': "while/while/").
std::string NamePart(std::string_view text) {
  std::string out;
  for (char c : text) {
    if (c == '/' && (out.empty() || out.back() == '/')) continue;
    out += IsNameChar(c) ? c : '_';
  }
  while (!out.empty() && out.back() == '/') out.pop_back();
  if (out.empty() || out[0] == '_') return absl::StrCat("f", out);
  return out;
}

// "CPU_1" for ".../device:CPU:1", with the job and task in front when the
// job is not the local one ("worker_1_CPU_0"); the whole name otherwise.
std::string DeviceTag(const std::string& device) {
  absl::StatusOr<DeviceSpec> spec = ParseFullDeviceName(device);
  if (!spec.ok()) return NamePart(device);
  std::string tag = absl::StrCat(*spec->type, "_", *spec->id);
  if (*spec->job != "localhost" || *spec->task != 0) {
    tag = absl::StrCat(*spec->job, "_", *spec->task, "_", tag);
  }
  return NamePart(tag);
}

// The device type ("CPU") of a full device name; empty if it does not parse.
std::string DeviceType(const std::string& device) {
  absl::StatusOr<DeviceSpec> spec = ParseFullDeviceName(device);
  return spec.ok() ? *spec->type : "";
}

const Edge* FirstDataOutEdge(const Node& node) {
  for (const Edge* edge : node.out_edges()) {
    if (!edge->IsControl()) return edge;
  }
  return nullptr;
}

NodeDef* AddNode(GraphDef& partition, std::string name, const char* op, const std::string& device) {
  NodeDef* node = partition.add_node();
  node->set_name(std::move(name));
  node->set_op(op);
  node->set_device(device);
  (*node->mutable_attr())["T"] = MakeAttr(DT_FLOAT);
  return node;
}

}  // namespace

ControlFlowPartition::ControlFlowPartition(const Graph& graph, ControlFlowInfo info)
    : graph_(graph), info_(std::move(info)) {}

absl::StatusOr<std::unique_ptr<ControlFlowPartition>> ControlFlowPartition::Create(
    const Graph& graph, const Placement& placement) {
  bool has_control_flow = false;
  for (const Node* node : graph.nodes()) has_control_flow |= IsControlFlowOp(node->op());
  if (!has_control_flow) return nullptr;
  RETURN_IF_ERROR(graph.CheckBackEdgesResolved());
  ASSIGN_OR_RETURN(ControlFlowInfo info, BuildControlFlowInfo(graph));
  std::unique_ptr<ControlFlowPartition> cf(new ControlFlowPartition(graph, std::move(info)));
  RETURN_IF_ERROR(cf->PlaceControlFlowNodes(placement));
  cf->loop_cond_.assign(cf->info_.frames.size(), nullptr);
  for (const Node* node : graph.nodes()) {
    const Node*& cond = cf->loop_cond_[cf->info_.frame_of[node->id()]];
    if (IsLoopCondOp(node->op()) && cond == nullptr) cond = node;
  }
  cf->ClassifyFirstIterationOnly();
  return cf;
}

absl::Status ControlFlowPartition::PlaceControlFlowNodes(const Placement& placement) {
  devices_.resize(graph_.num_nodes());
  for (const Node* node : graph_.nodes()) devices_[node->id()] = placement.device(*node);
  // Only to a device of the type the placer chose, which has its kernel
  // (a Switch has none on GPUs, say); a NextIteration, which forwards its
  // input, has one on every device, and its back edge must stay local.
  const auto follow = [&](const Node& node, const Node& leader) {
    const std::string& to = devices_[leader.id()];
    const std::string type = DeviceType(to);
    if (IsNextIterationOp(node.op()) ||
        (!type.empty() && type == DeviceType(placement.device(node)))) {
      devices_[node.id()] = to;
    }
  };
  // Switch and Exit follow their data input; in id order, so that an Exit
  // reading a moved Switch follows it.
  for (const Node* node : graph_.nodes()) {
    if ((IsSwitchOp(node->op()) || IsExitOp(node->op())) && node->num_inputs() > 0) {
      follow(*node, *node->input_edge(0)->src);
    }
  }
  // Enter and NextIteration follow their first consumer; in reverse id
  // order, so that an Enter feeding another Enter follows where that one
  // went. A RefEnter stays with its variable.
  for (auto it = graph_.nodes().rbegin(); it != graph_.nodes().rend(); ++it) {
    const Node& node = **it;
    const bool ref_enter = IsEnterOp(node.op()) && IsRefType(node.input_type(0));
    if ((!IsEnterOp(node.op()) || ref_enter) && !IsNextIterationOp(node.op())) continue;
    if (const Edge* out = FirstDataOutEdge(node); out != nullptr) follow(node, *out->dst);
  }
  for (const Node* node : graph_.nodes()) {
    if (!IsNextIterationOp(node->op())) continue;
    for (const Edge* edge : node->out_edges()) {
      if (edge->IsControl() || devices_[edge->dst->id()] == devices_[node->id()]) continue;
      return absl::InvalidArgumentError(absl::StrFormat(
          "node '%s' (%s) in %s feeds Merge '%s' on %s and another Merge on %s: a loop's back "
          "edge cannot cross devices",
          node->name(), node->op(), info_.Describe(info_.frame_of[node->id()]), edge->dst->name(),
          devices_[edge->dst->id()], devices_[node->id()]));
    }
  }
  return absl::OkStatus();
}

void ControlFlowPartition::ClassifyFirstIterationOnly() {
  first_iteration_only_.assign(graph_.num_nodes(), false);
  auto once = [&](const Edge* edge) { return bool(first_iteration_only_[edge->src->id()]); };
  for (const Node* node : graph_.nodes()) {
    if (info_.output_frame_of[node->id()] == 0) continue;
    const std::string& op = node->op();
    bool result = false;
    if (IsEnterOp(op)) {
      // A constant Enter's value is there in every iteration.
      absl::StatusOr<bool> constant = GetBoolAttr(node->def(), "is_constant");
      result = !(constant.ok() && *constant);
    } else if (IsExitOp(op)) {
      // Its loop runs in the iterations its Enters' inputs are there.
      for (const Node* enter : info_.frames[info_.frame_of[node->id()]].enters) {
        if (enter->num_inputs() > 0 && once(enter->input_edge(0))) result = true;
      }
    } else if (IsMergeOp(op)) {
      // Ready on any input: first-iteration-only if all are. A loop's Merge
      // runs in every iteration.
      bool all_data = true;
      for (const Edge* edge : node->in_edges()) {
        if (IsNextIterationOp(edge->src->op())) {
          all_data = false;
          result = false;
          break;
        }
        if (edge->IsControl()) {
          result |= once(edge);
        } else {
          all_data &= once(edge);
        }
      }
      result |= all_data && node->num_inputs() > 0;
    } else {
      for (const Edge* edge : node->in_edges()) result |= once(edge);
    }
    first_iteration_only_[node->id()] = result;
  }
}

std::string ControlFlowPartition::LoopPrefix(int frame, const std::string& device,
                                             PartitionBuilder& builder) {
  return builder.UniqueName(
      absl::StrCat(NamePart(info_.frames[frame].name), "/_cloop_", DeviceTag(device)));
}

absl::StatusOr<ControlFlowPartition::ControlLoop> ControlFlowPartition::LoopFor(
    int frame, const std::string& device, const Node& src, PartitionBuilder& builder) {
  if (auto it = loops_.find({frame, device}); it != loops_.end()) return it->second;
  const FrameInfo& info = info_.frames[frame];
  const Node* cond = loop_cond_[frame];
  if (cond == nullptr) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "node '%s' (%s) on %s sends to %s inside frame '%s', which has no LoopCond: a loop "
        "that crosses devices needs one to tell each device whether to iterate",
        src.name(), src.op(), devices_[src.id()], device, info.name));
  }
  std::string entered;  // What the control loop's Enter reads.
  if (info.parent != 0) {
    ASSIGN_OR_RETURN(ControlLoop outer, LoopFor(info.parent, device, src, builder));
    entered = outer.merge;
  }

  // The prefix reserves the names below it: nothing else starts with it.
  const std::string prefix = LoopPrefix(frame, device, builder);
  GraphDef& partition = builder.PartitionFor(device);
  if (entered.empty()) {
    NodeDef* dummy = partition.add_node();
    dummy->set_name(absl::StrCat(prefix, "/const"));
    dummy->set_op("Const");
    dummy->set_device(device);
    TensorProto zero;
    zero.set_dtype(DT_FLOAT);
    zero.add_float_val(0.0f);
    (*dummy->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
    (*dummy->mutable_attr())["value"] = MakeAttr(zero);
    entered = dummy->name();
  }
  ControlLoop loop{absl::StrCat(prefix, "/enter"), absl::StrCat(prefix, "/merge")};
  const std::string switch_name = absl::StrCat(prefix, "/switch");
  const std::string next_name = absl::StrCat(prefix, "/next_iteration");

  NodeDef* enter = AddNode(partition, loop.enter, "Enter", device);
  enter->add_input(entered);
  (*enter->mutable_attr())["frame_name"] = MakeAttr(info.name);
  (*enter->mutable_attr())["is_constant"] = MakeAttr(false);
  (*enter->mutable_attr())["parallel_iterations"] =
      MakeAttr(static_cast<int64_t>(info.parallel_iterations));
  NodeDef* merge = AddNode(partition, loop.merge, "Merge", device);
  merge->add_input(loop.enter);
  merge->add_input(next_name);
  (*merge->mutable_attr())["N"] = MakeAttr(static_cast<int64_t>(2));
  NodeDef* switch_node = AddNode(partition, switch_name, "Switch", device);
  NodeDef* next = AddNode(partition, next_name, "NextIteration", device);
  next->add_input(absl::StrCat(switch_name, ":1"));

  // Recorded before the predicate's _Recv is made: that _Recv is inside
  // this frame on this device, so it takes its control input from here.
  loops_[{frame, device}] = loop;
  std::string pred = cond->name();
  if (devices_[cond->id()] != device) {
    ASSIGN_OR_RETURN(pred, builder.RecvFor(*cond, 0, device));
  }
  switch_node->add_input(loop.merge);
  switch_node->add_input(pred);
  return loop;
}

absl::Status ControlFlowPartition::OnTransfer(const Node& src, const std::string& src_device,
                                              NodeDef* send, NodeDef* recv,
                                              PartitionBuilder& builder) {
  (*send->mutable_attr())["_control_flow"] = MakeAttr(true);
  (*recv->mutable_attr())["_control_flow"] = MakeAttr(true);
  const int frame = info_.output_frame_of[src.id()];
  if (frame == 0) return absl::OkStatus();
  const bool once = first_iteration_only_[src.id()];
  ASSIGN_OR_RETURN(ControlLoop loop, LoopFor(frame, recv->device(), src, builder));
  recv->add_input(absl::StrCat("^", once ? loop.enter : loop.merge));
  // The device holding the LoopCond runs every iteration; another sender
  // of a per-iteration value (one computed from loop invariants alone)
  // needs a control loop to have iterations at all.
  const Node* cond = loop_cond_[frame];
  if (!once && devices_[cond->id()] != src_device) {
    RETURN_IF_ERROR(LoopFor(frame, src_device, src, builder).status());
  }
  return absl::OkStatus();
}

}  // namespace rill
