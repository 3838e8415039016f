#include "runtime/session/partition_plan.h"

#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "placement/partitioner.h"
#include "placement/placement_report.h"

namespace rill {
namespace {

std::string InputName(const Node& src, int output) {
  return output == 0 ? src.name() : absl::StrFormat("%s:%d", src.name(), output);
}

// The graph a step runs: `nodes` with each fed tensor replaced by a
// Placeholder (so that placement and partitioning see a closed graph) and
// control inputs from outside the set dropped. Fills the placeholder name
// of each feed.
absl::StatusOr<GraphDef> ClientGraph(const PartitionPlanParams& params,
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

// The step's nodes where the session placed them; a feed's placeholder
// where the fed node is.
absl::StatusOr<Placement> PlacementOf(const Graph& client, const PartitionPlanParams& params,
                                      const std::vector<std::string>& feed_nodes) {
  absl::flat_hash_map<std::string, std::string> fed_node;
  for (size_t j = 0; j < feed_nodes.size(); ++j) {
    fed_node[feed_nodes[j]] = params.feeds[j].node->name();
  }
  Placement placement;
  placement.nodes.resize(client.num_nodes());
  for (const Node* node : client.nodes()) {
    auto fed = fed_node.find(node->name());
    const std::string& name = fed == fed_node.end() ? node->name() : fed->second;
    auto it = params.placed->find(name);
    if (it == params.placed->end()) {
      return absl::InternalError(absl::StrFormat("node '%s' was never placed", name));
    }
    placement.nodes[node->id()] = it->second;
    if (fed != fed_node.end()) {
      placement.nodes[node->id()].reason = absl::StrFormat("feeds '%s'", fed->second);
    }
  }
  return placement;
}

}  // namespace

absl::StatusOr<PartitionPlan> MakePartitionPlan(const PartitionPlanParams& params) {
  std::vector<std::string> feed_nodes;
  ASSIGN_OR_RETURN(GraphDef client_def, ClientGraph(params, &feed_nodes));
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> client, ImportGraphDef(client_def, StandardOps()));
  Placement placement;
  if (params.placed == nullptr) {
    ASSIGN_OR_RETURN(placement, PlaceGraph(*client, *params.device_set, params.placer));
  } else {
    ASSIGN_OR_RETURN(placement, PlacementOf(*client, params, feed_nodes));
  }
  PartitionPlan plan;
  ASSIGN_OR_RETURN(plan.partitions, PartitionGraph(*client, placement, PartitionOptions()));
  if (params.log_placement) {
    plan.placement_log = absl::StrCat(PlacementLog(*client, placement),
                                      PlacementSummary(*client, placement, &plan.partitions));
  }

  // Where each feed and fetch lives: by node name, unique across partitions.
  absl::flat_hash_map<std::string, int> feed_of;  // Placeholder name -> feed index.
  for (size_t j = 0; j < feed_nodes.size(); ++j) feed_of[feed_nodes[j]] = static_cast<int>(j);
  absl::flat_hash_map<std::pair<int, int>, int> feed_of_endpoint;
  for (size_t j = 0; j < params.feeds.size(); ++j) {
    feed_of_endpoint[{params.feeds[j].node->id(), params.feeds[j].index}] = static_cast<int>(j);
  }
  for (const auto& [device_name, def] : plan.partitions) {
    PartitionIo& io = plan.io[device_name];
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
  return plan;
}

}  // namespace rill
