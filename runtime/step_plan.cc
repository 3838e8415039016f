#include "runtime/step_plan.h"

#include <atomic>
#include <functional>
#include <map>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "placement/partitioner.h"
#include "placement/placement_report.h"
#include "runtime/local_rendezvous.h"

namespace rill {
namespace {

std::string InputName(const Node& src, int output) {
  return output == 0 ? src.name() : absl::StrFormat("%s:%d", src.name(), output);
}

// The graph a step runs: `nodes` with each fed tensor replaced by a
// Placeholder (so that placement and partitioning see a closed graph) and
// control inputs from outside the set dropped. Fills the placeholder name
// of each feed.
absl::StatusOr<GraphDef> ClientGraph(const StepPlanParams& params,
                                     std::vector<std::string>* feed_nodes) {
  absl::flat_hash_set<int> in_set;
  for (const Node* node : params.nodes) in_set.insert(node->id());
  absl::flat_hash_map<std::pair<int, int>, std::string> fed;
  GraphDef client;
  *client.mutable_versions() = params.graph->versions();
  for (const TensorEndpoint& feed : params.feeds) {
    std::string name = absl::StrFormat("%s/_feed_%d", feed.node->name(), feed.index);
    while (params.graph->FindNode(name) != nullptr) name += "_";
    NodeDef* placeholder = client.add_node();
    placeholder->set_name(name);
    placeholder->set_op("Placeholder");
    placeholder->set_device(feed.node->requested_device());
    (*placeholder->mutable_attr())["dtype"].set_type(BaseType(feed.node->output_type(feed.index)));
    feed.node->output_shape(feed.index)
        .AsProto((*placeholder->mutable_attr())["shape"].mutable_shape());
    fed.emplace(std::make_pair(feed.node->id(), feed.index), name);
    feed_nodes->push_back(std::move(name));
  }
  for (const Node* node : params.nodes) {
    NodeDef* def = client.add_node();
    *def = node->def();
    def->clear_input();
    for (int i = 0; i < node->num_inputs(); ++i) {
      const Edge* edge = node->input_edge(i);
      if (auto it = fed.find({edge->src->id(), edge->src_output}); it != fed.end()) {
        def->add_input(it->second);
      } else if (in_set.contains(edge->src->id())) {
        def->add_input(InputName(*edge->src, edge->src_output));
      } else {
        return absl::InvalidArgumentError(
            absl::StrFormat("node '%s' input %d comes from '%s', which is neither run nor fed",
                            node->name(), i, edge->src->name()));
      }
    }
    for (const Edge* edge : node->in_edges()) {
      if (edge->IsControl() && in_set.contains(edge->src->id())) {
        def->add_input("^" + edge->src->name());
      }
    }
  }
  return client;
}

}  // namespace

struct StepPlan::StepState {
  const Args* args = nullptr;
  std::vector<Tensor>* fetched = nullptr;
  std::function<void(absl::Status)> done;
  std::optional<LocalRendezvous> rendezvous;
  StepCancellation own_cancellation;
  StepCancellation* cancellation = nullptr;
  std::vector<std::vector<Tensor>> partition_fetched;
  std::vector<Executor::Args> partition_args;
  std::vector<std::vector<Tensor>> partition_feeds;
  // Each partition's executor records its own; merged at the end.
  std::vector<std::vector<NodeExecStats>> partition_stats;
  std::vector<NodeExecStats>* stats = nullptr;  // The caller's.
  std::atomic<int> remaining{0};
};

absl::StatusOr<PartitionedStep> PartitionStep(const StepPlanParams& params) {
  std::vector<std::string> feed_nodes;
  ASSIGN_OR_RETURN(GraphDef client_def, ClientGraph(params, &feed_nodes));
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> client, ImportGraphDef(client_def, StandardOps()));
  ASSIGN_OR_RETURN(Placement placement, PlaceGraph(*client, *params.device_set, params.placer));
  PartitionedStep step;
  ASSIGN_OR_RETURN(step.partitions, PartitionGraph(*client, placement, PartitionOptions()));
  if (params.placement_log != nullptr) {
    std::fprintf(params.placement_log, "%s%s", PlacementLog(*client, placement).c_str(),
                 PlacementSummary(*client, placement, &step.partitions).c_str());
    std::fflush(params.placement_log);
  }

  // Where each feed and fetch lives: by node name, unique across partitions.
  absl::flat_hash_map<std::string, int> feed_of;  // Placeholder name -> feed index.
  for (size_t j = 0; j < feed_nodes.size(); ++j) feed_of[feed_nodes[j]] = static_cast<int>(j);
  absl::flat_hash_map<std::pair<int, int>, int> feed_of_endpoint;
  for (size_t j = 0; j < params.feeds.size(); ++j) {
    feed_of_endpoint[{params.feeds[j].node->id(), params.feeds[j].index}] = static_cast<int>(j);
  }
  for (const auto& [device_name, def] : step.partitions) {
    PartitionIo& io = step.io[device_name];
    absl::flat_hash_set<std::string> names;
    for (const NodeDef& node : def.node()) {
      names.insert(node.name());
      if (auto it = feed_of.find(node.name()); it != feed_of.end()) {
        io.feeds.push_back(it->second);
        io.feed_nodes.push_back(node.name());
      }
    }
    for (size_t f = 0; f < params.fetches.size(); ++f) {
      const TensorEndpoint& fetch = params.fetches[f];
      std::string name;
      if (auto it = feed_of_endpoint.find({fetch.node->id(), fetch.index});
          it != feed_of_endpoint.end()) {
        name = feed_nodes[it->second] + ":0";
        if (!names.contains(feed_nodes[it->second])) continue;
      } else {
        if (!names.contains(fetch.node->name())) continue;
        name = fetch.ToString();
      }
      io.fetches.push_back(static_cast<int>(f));
      io.fetch_names.push_back(std::move(name));
    }
  }
  return step;
}

absl::StatusOr<std::unique_ptr<Executor>> CreatePartitionExecutor(const Graph& graph,
                                                                  const PartitionIo& io,
                                                                  Executor::Params params) {
  params.graph = &graph;
  absl::flat_hash_set<std::string> fed(io.feed_nodes.begin(), io.feed_nodes.end());
  for (const std::string& name : io.feed_nodes) {
    const Node* node = graph.FindNode(name);
    if (node == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrFormat("no feed node '%s' in the partition", name));
    }
    params.feeds.push_back(TensorEndpoint{node, 0});
  }
  for (const Node* node : graph.nodes()) {
    if (!fed.contains(node->name())) params.nodes.push_back(node);
  }
  for (const std::string& name : io.fetch_names) {
    ASSIGN_OR_RETURN(const TensorId id, ParseTensorName(name));
    const Node* node = graph.FindNode(id.node);
    if (node == nullptr || id.index < 0 || id.index >= node->num_outputs()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("no fetched tensor '%s' in the partition", name));
    }
    params.fetches.push_back(TensorEndpoint{node, id.index});
  }
  return Executor::Create(params);
}

absl::StatusOr<std::unique_ptr<StepPlan>> StepPlan::Create(const StepPlanParams& params) {
  auto plan = std::unique_ptr<StepPlan>(new StepPlan());
  plan->pool_ = params.inter_op_pool;
  plan->num_fetches_ = static_cast<int>(params.fetches.size());
  ASSIGN_OR_RETURN(PartitionedStep step, PartitionStep(params));
  for (auto& [device_name, def] : step.partitions) {
    Device* device = nullptr;
    for (int d = 0; d < params.device_set->size(); ++d) {
      if (params.device_set->names()[d] == device_name) device = params.devices[d];
    }
    if (device == nullptr) {
      return absl::InternalError(absl::StrFormat("no device '%s' in the session", device_name));
    }
    const PartitionIo& io = step.io[device_name];
    Partition partition;
    ASSIGN_OR_RETURN(partition.graph, ImportGraphDef(def, StandardOps()));
    Executor::Params exec;
    exec.device = device;
    exec.registry = params.registry;
    exec.inter_op_pool = params.inter_op_pool;
    exec.parallel_nodes = params.parallel_nodes;
    for (int j : io.feeds) exec.feed_names.push_back(params.feeds[j].ToString());
    ASSIGN_OR_RETURN(partition.executor, CreatePartitionExecutor(*partition.graph, io, exec));
    partition.feeds = io.feeds;
    partition.fetches = io.fetches;
    plan->partitions_.push_back(std::move(partition));
  }
  return plan;
}

absl::Status StepPlan::Run(const Args& args, std::vector<Tensor>* fetched) const {
  if (partitions_.size() == 1 && args.cancellation == nullptr) {
    // One device: no rendezvous, and the step runs on this thread.
    const Partition& only = partitions_[0];
    std::vector<Tensor> feeds;
    feeds.reserve(only.feeds.size());
    for (int j : only.feeds) feeds.push_back(args.feeds[j]);
    Executor::Args exec;
    exec.step_id = args.step_id;
    exec.feeds = feeds;
    exec.stats = args.stats;
    std::vector<Tensor> partition_fetched;
    RETURN_IF_ERROR(only.executor->Run(exec, &partition_fetched));
    fetched->assign(num_fetches_, Tensor());
    for (size_t f = 0; f < only.fetches.size(); ++f) {
      (*fetched)[only.fetches[f]] = std::move(partition_fetched[f]);
    }
    return absl::OkStatus();
  }
  absl::Notification finished;
  absl::Status result;
  // This thread starts the partitions one after another (each runs until it
  // waits for another), then sleeps until the step is done.
  Begin(
      args, fetched,
      [&](absl::Status status) {
        result = std::move(status);
        finished.Notify();
      },
      /*on_this_thread=*/true);
  finished.WaitForNotification();
  return result;
}

void StepPlan::RunAsync(const Args& args, std::vector<Tensor>* fetched,
                        std::function<void(absl::Status)> done) const {
  Begin(args, fetched, std::move(done), /*on_this_thread=*/false);
}

void StepPlan::Begin(const Args& args, std::vector<Tensor>* fetched,
                     std::function<void(absl::Status)> done, bool on_this_thread) const {
  auto* state = new StepState();
  state->args = &args;
  state->stats = args.stats;
  state->fetched = fetched;
  state->done = std::move(done);
  state->cancellation = args.cancellation != nullptr ? args.cancellation : &state->own_cancellation;
  if (partitions_.size() > 1) state->rendezvous.emplace();
  Start(state, on_this_thread);
}

void StepPlan::Start(StepState* state, bool on_this_thread) const {
  const size_t n = partitions_.size();
  state->partition_fetched.resize(n);
  state->partition_feeds.resize(n);
  state->partition_args.resize(n);
  state->partition_stats.resize(n);
  state->remaining.store(static_cast<int>(n), std::memory_order_relaxed);
  for (size_t p = 0; p < n; ++p) {
    for (int j : partitions_[p].feeds) state->partition_feeds[p].push_back(state->args->feeds[j]);
    Executor::Args& exec = state->partition_args[p];
    exec.step_id = state->args->step_id;
    exec.feeds = state->partition_feeds[p];
    exec.cancellation = state->cancellation;
    exec.stats = state->stats != nullptr ? &state->partition_stats[p] : nullptr;
    exec.rendezvous = state->rendezvous.has_value() ? &*state->rendezvous : nullptr;
  }
  const auto partition_done = [this, state](absl::Status status) {
    if (!status.ok()) {
      // The first failure stops every partition, waiting receives included.
      state->cancellation->Cancel(status);
      if (state->rendezvous.has_value()) state->rendezvous->StartAbort(status);
    }
    // Acq_rel: the last partition to finish reads what the others wrote.
    if (state->remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    absl::Status result = state->cancellation->status();
    if (state->stats != nullptr) {
      for (std::vector<NodeExecStats>& stats : state->partition_stats) {
        for (NodeExecStats& node : stats) state->stats->push_back(std::move(node));
      }
    }
    if (result.ok()) {
      state->fetched->assign(num_fetches_, Tensor());
      for (size_t q = 0; q < partitions_.size(); ++q) {
        for (size_t f = 0; f < partitions_[q].fetches.size(); ++f) {
          (*state->fetched)[partitions_[q].fetches[f]] = std::move(state->partition_fetched[q][f]);
        }
      }
    }
    std::function<void(absl::Status)> done = std::move(state->done);
    delete state;
    done(std::move(result));
  };
  // Receives completed while the partitions start wait until all have
  // started.
  std::optional<InlineContinuations> scope;
  if (on_this_thread) scope.emplace();
  // `state` may be gone once the last partition has started.
  for (size_t p = 0; p < n; ++p) {
    const Executor& executor = *partitions_[p].executor;
    const auto done = [partition_done](absl::Status status) { partition_done(std::move(status)); };
    if (on_this_thread) {
      executor.RunAsyncStartingHere(state->partition_args[p], &state->partition_fetched[p], done);
    } else {
      executor.RunAsync(state->partition_args[p], &state->partition_fetched[p], done);
    }
  }
}

}  // namespace rill
