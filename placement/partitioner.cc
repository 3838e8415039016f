#include "placement/partitioner.h"

#include <memory>
#include <set>
#include <tuple>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "graph/types.h"
#include "placement/control_flow_partition.h"

namespace rill {
namespace {

// Builds the partitions in one pass over the nodes in id order, creating
// each _Send/_Recv pair the first time an edge needs it. A graph with
// control flow also goes through ControlFlowPartition.
class Partitioner final : public PartitionBuilder {
 public:
  Partitioner(const Graph& graph, const Placement& placement, const PartitionOptions& options)
      : graph_(graph), placement_(placement), options_(options) {}

  absl::StatusOr<std::map<std::string, GraphDef>> Run() {
    if (placement_.nodes.size() != static_cast<size_t>(graph_.num_nodes())) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "placement has %d nodes, the graph %d", placement_.nodes.size(), graph_.num_nodes()));
    }
    for (const Node* node : graph_.nodes()) {
      if (placement_.device(*node).empty()) {
        return absl::InvalidArgumentError(
            absl::StrFormat("node '%s' (%s) is not placed", node->name(), node->op()));
      }
    }
    ASSIGN_OR_RETURN(control_flow_, ControlFlowPartition::Create(graph_, placement_));
    for (const Node* node : graph_.nodes()) RETURN_IF_ERROR(AddNode(*node));
    return std::move(partitions_);
  }

 private:
  // A _Send/_Recv pair carries one source tensor (slot kControlSlot: the
  // source's completion) to one device.
  using Transfer = std::tuple<const Node*, int, std::string>;

  GraphDef& PartitionFor(const std::string& device) override {
    auto [it, inserted] = partitions_.try_emplace(device);
    if (inserted) {
      *it->second.mutable_versions() = graph_.versions();
      if (graph_.library().ByteSizeLong() > 0) *it->second.mutable_library() = graph_.library();
    }
    return it->second;
  }

  const std::string& DeviceOf(const Node& node) const {
    return control_flow_ != nullptr ? control_flow_->device(node) : placement_.device(node);
  }

  absl::Status AddNode(const Node& node) {
    const std::string& device = DeviceOf(node);
    NodeDef def = node.def();
    def.set_device(device);
    // Data inputs come first in a NodeDef, so slot i is input(i).
    const std::vector<std::string> given(def.input().begin(), def.input().end());
    def.clear_input();
    // in_edges() lists data edges before control edges, as a NodeDef must.
    for (const Edge* edge : node.in_edges()) {
      const std::string& src_device = DeviceOf(*edge->src);
      if (edge->IsControl()) {
        std::string input = edge->src->name();
        if (src_device != device) {
          ASSIGN_OR_RETURN(input, RecvFor(*edge->src, kControlSlot, device));
        }
        def.add_input(absl::StrCat("^", input));
      } else {
        // A value can be sent; a reference (to a variable's buffer) cannot.
        if (src_device != device && IsRefType(node.input_type(edge->dst_input))) {
          return absl::InvalidArgumentError(absl::StrFormat(
              "node '%s' (%s) on %s takes a reference input from '%s' on %s: a reference "
              "edge cannot cross devices",
              node.name(), node.op(), device, edge->src->name(), src_device));
        }
        std::string input = given[edge->dst_input];
        if (src_device != device) {
          ASSIGN_OR_RETURN(input, RecvFor(*edge->src, edge->src_output, device));
        }
        def.add_input(std::move(input));
      }
    }
    *PartitionFor(device).add_node() = std::move(def);
    return absl::OkStatus();
  }

  // The name of the _Recv on `dst_device` for src:slot, adding the pair on
  // first use.
  absl::StatusOr<std::string> RecvFor(const Node& src, int slot,
                                      const std::string& dst_device) override {
    Transfer transfer{&src, slot, dst_device};
    if (auto it = recvs_.find(transfer); it != recvs_.end()) return it->second;

    const std::string& src_device = DeviceOf(src);
    GraphDef& src_partition = PartitionFor(src_device);
    std::string sent = TensorId{src.name(), slot}.ToString();
    DataType dtype = slot == kControlSlot ? DT_FLOAT : BaseType(src.output_type(slot));
    if (slot == kControlSlot) {
      NodeDef* dummy = src_partition.add_node();
      dummy->set_name(NewName(src.name()));
      dummy->set_op("Const");
      dummy->set_device(src_device);
      dummy->add_input(absl::StrCat("^", src.name()));
      TensorProto zero;
      zero.set_dtype(DT_FLOAT);
      zero.add_float_val(0.0f);
      (*dummy->mutable_attr())["dtype"] = MakeAttr(DT_FLOAT);
      (*dummy->mutable_attr())["value"] = MakeAttr(zero);
      sent = dummy->name();
    }

    const std::string tensor_name = absl::StrFormat("edge_%d_%s", next_edge_id_++, src.name());
    const int64_t incarnation =
        static_cast<int64_t>(options_.incarnation ? options_.incarnation(src_device) : 1);
    const auto add_common_attrs = [&](NodeDef* n) {
      auto& attr = *n->mutable_attr();
      attr["tensor_name"] = MakeAttr(tensor_name);
      attr["send_device"] = MakeAttr(src_device);
      attr["send_device_incarnation"] = MakeAttr(incarnation);
      attr["recv_device"] = MakeAttr(dst_device);
      attr["client_terminated"] = MakeAttr(false);
    };

    NodeDef* send = src_partition.add_node();
    send->set_name(NewName(src.name()));
    send->set_op("_Send");
    send->set_device(src_device);
    send->add_input(sent);
    (*send->mutable_attr())["T"] = MakeAttr(dtype);
    add_common_attrs(send);

    NodeDef* recv = PartitionFor(dst_device).add_node();
    recv->set_name(NewName(src.name()));
    recv->set_op("_Recv");
    recv->set_device(dst_device);
    (*recv->mutable_attr())["tensor_type"] = MakeAttr(dtype);
    add_common_attrs(recv);

    recvs_[transfer] = recv->name();
    if (control_flow_ != nullptr) {
      RETURN_IF_ERROR(control_flow_->OnTransfer(src, src_device, send, recv, *this));
    }
    return recv->name();
  }

  // Also keeps the names below it ("<name>/...") free in the graph, so the
  // control-flow part may add them.
  std::string UniqueName(const std::string& name) override {
    if (graph_.FindNode(name) == nullptr && !new_names_.contains(name) && !HasNamesBelow(name)) {
      new_names_.insert(name);
      return name;
    }
    std::string candidate;
    do {
      candidate = NewName(name);
    } while (HasNamesBelow(candidate));
    return candidate;
  }

  bool HasNamesBelow(const std::string& name) const {
    const std::string below = name + "/";
    if (auto it = new_names_.lower_bound(below); it != new_names_.end() && it->starts_with(below)) {
      return true;
    }
    for (const Node* node : graph_.nodes()) {
      if (node->name().starts_with(below)) return true;
    }
    return false;
  }

  // "<base>/_<n>", skipping names the graph or this pass already uses.
  std::string NewName(const std::string& base) {
    std::string name;
    do {
      name = absl::StrFormat("%s/_%d", base, next_name_id_++);
    } while (graph_.FindNode(name) != nullptr || !new_names_.insert(name).second);
    return name;
  }

  const Graph& graph_;
  const Placement& placement_;
  const PartitionOptions& options_;
  std::unique_ptr<ControlFlowPartition> control_flow_;
  std::map<std::string, GraphDef> partitions_;
  std::map<Transfer, std::string> recvs_;
  std::set<std::string> new_names_;
  int next_name_id_ = 0;
  int next_edge_id_ = 0;
};

}  // namespace

absl::StatusOr<std::map<std::string, GraphDef>> PartitionGraph(const Graph& graph,
                                                               const Placement& placement,
                                                               const PartitionOptions& options) {
  return Partitioner(graph, placement, options).Run();
}

}  // namespace rill
