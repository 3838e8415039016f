#include "runtime/exec/executor.h"

#include <algorithm>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "graph/control_flow_names.h"
#include "graph/status_macros.h"
#include "kernels/framework/step_resources.h"
#include "kernels/registry.h"
#include "runtime/exec/executor_items.h"

namespace rill {

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(const Params& params) {
  std::unique_ptr<Executor> executor(new Executor());
  RETURN_IF_ERROR(executor->Build(params));
  return executor;
}

Executor::~Executor() = default;

int Executor::num_nodes() const { return static_cast<int>(items_.size()); }
const NodeDef& Executor::node_def(int i) const { return *items_[i].def; }

absl::Status Executor::Build(const Params& params) {
  device_ = params.device;
  counted_allocator_ = dynamic_cast<const CachingAllocator*>(device_->allocator());
  pool_ = params.inter_op_pool;
  parallel_nodes_ = params.parallel_nodes;
  parallel_kernels_ = device_->eigen_cpu()->numThreads() > 1;
  const KernelRegistry& registry =
      params.registry != nullptr ? *params.registry : StandardKernels();

  absl::flat_hash_map<std::pair<int, int>, int> fed;  // (node id, output) -> feed.
  for (const TensorEndpoint& feed : params.feeds) {
    if (feed.index < 0 || feed.index >= feed.node->num_outputs()) {
      return absl::InvalidArgumentError(absl::StrFormat("feed %s: node '%s' has %d outputs",
                                                        feed.ToString(), feed.node->name(),
                                                        feed.node->num_outputs()));
    }
    if (!fed.emplace(std::make_pair(feed.node->id(), feed.index), feeds_.size()).second) {
      return absl::InvalidArgumentError(absl::StrFormat("%s fed more than once", feed.ToString()));
    }
    feeds_.push_back(Feed{feed.ToString(),
                          BaseType(feed.node->output_type(feed.index)),
                          feed.node->output_shape(feed.index),
                          {}});
  }

  std::vector<const Node*> nodes = params.nodes;
  if (nodes.empty()) nodes.assign(params.graph->nodes().begin(), params.graph->nodes().end());
  // Graph ids are a topological order.
  std::sort(nodes.begin(), nodes.end(),
            [](const Node* a, const Node* b) { return a->id() < b->id(); });
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::erase_if(nodes, [&](const Node* node) {
    if (node->num_outputs() == 0) return false;
    for (int k = 0; k < node->num_outputs(); ++k) {
      if (!fed.contains(std::make_pair(node->id(), k))) return false;
    }
    return true;
  });
  const int n = static_cast<int>(nodes.size());
  std::vector<int32_t> local(params.graph->num_nodes(), -1);
  for (int i = 0; i < n; ++i) local[nodes[i]->id()] = i;

  defs_.reserve(n);
  items_.resize(n);
  costs_ = std::make_unique<KernelCost[]>(n);
  for (int i = 0; i < n; ++i) {
    const Node* node = nodes[i];
    NodeItem& item = items_[i];
    defs_.push_back(node->def());
    item.def = &defs_.back();
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel =
        registry.CreateKernel(*item.def, node->op_def(), node->signature(), device_->device_type());
    if (!kernel.ok()) {
      return absl::Status(kernel.status().code(),
                          absl::StrFormat("node '%s' (%s) on %s: %s", node->name(), node->op(),
                                          device_->name(), kernel.status().message()));
    }
    item.kernel = *std::move(kernel);
    item.async = item.kernel->AsAsync();
    item.expensive = item.kernel->IsExpensive() && !device_->RunsKernelsInline();
    item.allows_uninitialized_input = node->op_def().allows_uninitialized_input();
    makes_step_resources_ = makes_step_resources_ || MakesStepResources(node->op());
    item.output_types = node->output_types();
    item.input_start = num_input_slots_;
    item.num_inputs = node->num_inputs();
    item.output_start = num_output_slots_;
    item.num_outputs = node->num_outputs();
    num_input_slots_ += item.num_inputs;
    num_output_slots_ += item.num_outputs;
  }

  std::vector<std::vector<OutEdge>> edges_from(n);
  std::vector<std::vector<int32_t>> controls_from(n);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> derefs_of(n);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> fetches_of(n);
  initial_pending_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const Node* node = nodes[i];
    for (const Edge* edge : node->in_edges()) {
      if (edge == nullptr) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "node '%s' (%s): an input waits for a NextIteration that is not in the graph",
            node->name(), node->op()));
      }
      const int32_t src = local[edge->src->id()];
      if (edge->IsControl()) {
        if (src < 0) continue;
        controls_from[src].push_back(i);
        ++initial_pending_[i];
        continue;
      }
      const bool ref_input = IsRefType(node->input_type(edge->dst_input));
      const int32_t slot = items_[i].input_start + edge->dst_input;
      if (auto it = fed.find(std::make_pair(edge->src->id(), edge->src_output)); it != fed.end()) {
        if (ref_input) {
          return absl::InvalidArgumentError(
              absl::StrFormat("node '%s' (%s): input %d is a reference and cannot be fed (%s)",
                              node->name(), node->op(), edge->dst_input, feeds_[it->second].name));
        }
        feeds_[it->second].slots.push_back(slot);
        continue;
      }
      if (src < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "node '%s' (%s): input %d comes from '%s', which neither runs nor is fed", node->name(),
            node->op(), edge->dst_input, edge->src->name()));
      }
      edges_from[src].push_back(OutEdge{edge->src_output, i, slot, false, false});
      ++initial_pending_[i];
      if (!ref_input && IsRefType(edge->src->output_type(edge->src_output))) {
        derefs_of[i].emplace_back(edge->dst_input, src);
      }
    }
  }

  num_fetches_ = static_cast<int>(params.fetches.size());
  output_needed_.assign(num_output_slots_, 0);
  for (int f = 0; f < num_fetches_; ++f) {
    const TensorEndpoint& fetch = params.fetches[f];
    if (fetch.index < 0 || fetch.index >= fetch.node->num_outputs()) {
      return absl::InvalidArgumentError(absl::StrFormat("fetch %s: node '%s' has %d outputs",
                                                        fetch.ToString(), fetch.node->name(),
                                                        fetch.node->num_outputs()));
    }
    if (auto it = fed.find(std::make_pair(fetch.node->id(), fetch.index)); it != fed.end()) {
      fetches_from_feeds_.emplace_back(f, it->second);
      continue;
    }
    const int32_t src = local[fetch.node->id()];
    if (src < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "fetch %s: node '%s' neither runs nor is fed", fetch.ToString(), fetch.node->name()));
    }
    fetches_of[src].emplace_back(fetch.index, f);
    output_needed_[items_[src].output_start + fetch.index] = 1;
  }

  for (int i = 0; i < n; ++i) {
    NodeItem& item = items_[i];
    std::vector<OutEdge>& edges = edges_from[i];
    std::stable_sort(edges.begin(), edges.end(),
                     [](const OutEdge& a, const OutEdge& b) { return a.output < b.output; });
    for (size_t e = 0; e < edges.size(); ++e) {
      edges[e].last_use = e + 1 == edges.size() || edges[e + 1].output != edges[e].output;
      edges[e].sole_input = initial_pending_[edges[e].dst] == 1;
      output_needed_[item.output_start + edges[e].output] = 1;
    }
    item.out_edges_begin = static_cast<int32_t>(out_edges_.size());
    out_edges_.insert(out_edges_.end(), edges.begin(), edges.end());
    item.out_edges_end = static_cast<int32_t>(out_edges_.size());
    item.control_begin = static_cast<int32_t>(control_edges_.size());
    control_edges_.insert(control_edges_.end(), controls_from[i].begin(), controls_from[i].end());
    item.control_end = static_cast<int32_t>(control_edges_.size());
    item.deref_begin = static_cast<int32_t>(deref_inputs_.size());
    deref_inputs_.insert(deref_inputs_.end(), derefs_of[i].begin(), derefs_of[i].end());
    item.deref_end = static_cast<int32_t>(deref_inputs_.size());
    item.fetch_begin = static_cast<int32_t>(node_fetches_.size());
    node_fetches_.insert(node_fetches_.end(), fetches_of[i].begin(), fetches_of[i].end());
    item.fetch_end = static_cast<int32_t>(node_fetches_.size());
    if (initial_pending_[i] == 0) roots_.push_back(i);
  }
  // A partition of a graph with control flow may receive dead values
  // without holding a primitive itself: the partitioner marks its
  // transfers with `_control_flow`.
  if (std::any_of(nodes.begin(), nodes.end(), [](const Node* node) {
        return IsControlFlowOp(node->op()) || node->def().attr().contains("_control_flow");
      })) {
    RETURN_IF_ERROR(BuildFlow(params, nodes, local));
  }
  return absl::OkStatus();
}

}  // namespace rill
