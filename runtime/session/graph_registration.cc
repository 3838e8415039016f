#include "runtime/session/graph_registration.h"

#include <map>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/device_spec.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "runtime/session/secure_random.h"

namespace rill {
namespace {

// The task at the other end of a _Send (its receiver) or a _Recv (its
// sender).
absl::StatusOr<std::string> PeerTask(const NodeDef& node) {
  ASSIGN_OR_RETURN(const std::string device,
                   GetStringAttr(node, node.op() == "_Send" ? "recv_device" : "send_device"));
  return TaskOfDevice(device);
}

// An executor for one imported partition, feeding its placeholders and
// fetching its "node:k" names.
absl::StatusOr<std::unique_ptr<Executor>> PartitionExecutor(
    const Graph& graph, const std::vector<std::string>& feed_nodes,
    const std::vector<std::string>& fetch_names, Executor::Params params) {
  params.graph = &graph;
  absl::flat_hash_set<std::string> fed(feed_nodes.begin(), feed_nodes.end());
  for (const std::string& name : feed_nodes) {
    params.feeds.push_back(TensorEndpoint{graph.FindNode(name), 0});
  }
  for (const Node* node : graph.nodes()) {
    if (!fed.contains(node->name())) params.nodes.push_back(node);
  }
  for (const std::string& name : fetch_names) {
    ASSIGN_OR_RETURN(const TensorId id, ParseTensorName(name));
    const Node* node = graph.FindNode(id.node);
    if (id.index < 0 || id.index >= node->num_outputs()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("RegisterGraph: fetch '%s': node '%s' has %d outputs", name, node->name(),
                          node->num_outputs()));
    }
    params.fetches.push_back(TensorEndpoint{node, id.index});
  }
  return Executor::Create(params);
}

bool IsIdentity(const std::vector<int>& indices, int n) {
  if (static_cast<int>(indices.size()) != n) return false;
  for (int i = 0; i < n; ++i) {
    if (indices[i] != i) return false;
  }
  return true;
}

absl::StatusOr<Device*> FindDevice(const GraphBuildContext& context, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& device : *context.devices) {
    names.push_back(device->name());
    if (device->name() == name) return device.get();
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("RegisterGraph: %s has no device '%s' (its devices: %s)", context.task, name,
                      absl::StrJoin(names, ", ")));
}

}  // namespace

absl::StatusOr<std::shared_ptr<RegisteredGraph>> BuildRegisteredGraph(
    const RegisterGraphRequest& request, const GraphBuildContext& context) {
  if (request.partitions().empty()) {
    return absl::InvalidArgumentError("RegisterGraph: the request holds no partition");
  }
  auto graph = std::make_shared<RegisteredGraph>();
  graph->num_feeds = request.feeds_size();
  graph->num_fetches = request.fetches_size();
  absl::flat_hash_map<std::string, int> feed_of;
  for (int j = 0; j < request.feeds_size(); ++j) feed_of[request.feeds(j)] = j;
  std::vector<std::string> fetch_nodes;
  for (const std::string& fetch : request.fetches()) {
    ASSIGN_OR_RETURN(const TensorId id, ParseTensorName(fetch));
    fetch_nodes.push_back(std::string(id.node));
  }
  std::vector<bool> feed_found(request.feeds_size()), fetch_found(request.fetches_size());

  // In device order, so that steps start their partitions in a stable order.
  const std::map<std::string, GraphDef> partitions(request.partitions().begin(),
                                                   request.partitions().end());
  for (const auto& [device_name, def] : partitions) {
    RegisteredPartition partition;
    ASSIGN_OR_RETURN(partition.device, FindDevice(context, device_name));
    std::vector<std::string> feed_nodes;
    absl::flat_hash_set<std::string> names;
    for (const NodeDef& node : def.node()) {
      if (node.device() != device_name) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "RegisterGraph: node '%s' is placed on '%s', but its partition is for '%s'",
            node.name(), node.device(), device_name));
      }
      names.insert(node.name());
      if (auto it = feed_of.find(node.name()); it != feed_of.end()) {
        feed_nodes.push_back(node.name());
        partition.feeds.push_back(it->second);
        feed_found[it->second] = true;
      }
      if (node.op() != "_Send" && node.op() != "_Recv") continue;
      ASSIGN_OR_RETURN(const std::string peer, PeerTask(node));
      if (peer == context.task) continue;
      graph->talks_to_other_tasks = true;
      if (node.op() == "_Send" && !context.can_send) {
        return absl::InvalidArgumentError(
            absl::StrFormat("RegisterGraph: node '%s' sends to %s, but %s talks to no other task",
                            node.name(), peer, context.task));
      }
    }
    std::vector<std::string> fetch_names;
    for (int j = 0; j < request.fetches_size(); ++j) {
      if (!names.contains(fetch_nodes[j])) continue;
      fetch_names.push_back(request.fetches(j));
      partition.fetches.push_back(j);
      fetch_found[j] = true;
    }
    ASSIGN_OR_RETURN(partition.graph, ImportGraphDef(def, StandardOps()));
    Executor::Params params;
    params.device = partition.device;
    params.registry = context.registry;
    params.inter_op_pool = context.inter_op_pool;
    params.parallel_nodes = context.parallel_nodes;
    ASSIGN_OR_RETURN(partition.executor,
                     PartitionExecutor(*partition.graph, feed_nodes, fetch_names, params));
    graph->partitions.push_back(std::move(partition));
  }
  for (int j = 0; j < request.feeds_size(); ++j) {
    if (!feed_found[j]) {
      return absl::InvalidArgumentError(
          absl::StrFormat("RegisterGraph: no partition holds the fed node '%s'", request.feeds(j)));
    }
  }
  for (int j = 0; j < request.fetches_size(); ++j) {
    if (!fetch_found[j]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "RegisterGraph: no partition holds the fetched tensor '%s'", request.fetches(j)));
    }
  }
  // A device with memory of its own takes its feeds and gives its fetches
  // through copies, so its partition never reads the call's vectors.
  graph->direct_io = graph->partitions.size() == 1 &&
                     graph->partitions[0].device->device_context() == nullptr &&
                     IsIdentity(graph->partitions[0].feeds, graph->num_feeds) &&
                     IsIdentity(graph->partitions[0].fetches, graph->num_fetches);
  return graph;
}

RegisteredGraphs::RegisteredGraphs(std::string task, RegisteredGraphLimits limits, LogSink* log)
    : task_(std::move(task)), limits_(limits), log_(OrDefault(log)) {}

absl::Status RegisteredGraphs::CheckRoom(int64_t bytes) {
  absl::MutexLock lock(&mu_);
  return CheckRoomLocked(bytes);
}

absl::Status RegisteredGraphs::CheckRoomLocked(int64_t bytes) {
  const RegisteredGraphLimits& limits = limits_;
  const int64_t graphs = static_cast<int64_t>(graphs_.size());
  // One graph is always kept, whatever its size.
  if (graphs < limits.max_graphs && (graphs == 0 || graph_bytes_ + bytes <= limits.max_bytes)) {
    if (registrations_refused_ > 0) {
      log_->Log("%s: room for graphs again (%d registrations refused)", task_,
                registrations_refused_);
      registrations_refused_ = 0;
    }
    return absl::OkStatus();
  }
  if (registrations_refused_++ == 0) {
    log_->Log(
        "%s: %d registered graphs hold %d bytes (limits %d graphs, %d bytes): refusing "
        "registrations",
        task_, graphs, graph_bytes_, limits.max_graphs, limits.max_bytes);
  }
  std::string expiry;
  if (limits.idle_timeout != absl::InfiniteDuration()) {
    expiry = absl::StrFormat("; a graph no step runs is forgotten after %s",
                             absl::FormatDuration(limits.idle_timeout));
  }
  return absl::ResourceExhaustedError(absl::StrFormat(
      "RegisterGraph: %s holds %d registered graphs of %d bytes, and its limits are %d graphs and "
      "%d bytes (this graph: %d bytes)%s",
      task_, graphs, graph_bytes_, limits.max_graphs, limits.max_bytes, bytes, expiry));
}

absl::StatusOr<std::string> RegisteredGraphs::Add(std::shared_ptr<RegisteredGraph> graph) {
  graph->last_used.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  std::string handle = absl::StrFormat("%s/graph-%s", task_, SecureRandomHex());
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(CheckRoomLocked(graph->bytes));
  graph_bytes_ += graph->bytes;
  graphs_[handle] = std::move(graph);
  return handle;
}

std::shared_ptr<const RegisteredGraph> RegisteredGraphs::Find(absl::string_view handle) const {
  absl::ReaderMutexLock lock(&mu_);
  const auto it = graphs_.find(handle);
  return it == graphs_.end() ? nullptr : it->second;
}

void RegisteredGraphs::Remove(const std::string& handle) {
  std::shared_ptr<const RegisteredGraph> graph;  // Freed after mu_.
  absl::MutexLock lock(&mu_);
  if (auto it = graphs_.find(handle); it != graphs_.end()) {
    graph = std::move(it->second);
    graph_bytes_ -= graph->bytes;
    graphs_.erase(it);
  }
  // Steps still running hold their own reference.
}

int RegisteredGraphs::ExpireIdle(absl::Time now) {
  if (limits_.idle_timeout == absl::InfiniteDuration()) return 0;
  const int64_t oldest = absl::ToUnixNanos(now - limits_.idle_timeout);
  std::vector<std::shared_ptr<const RegisteredGraph>> forgotten;  // Freed after mu_.
  absl::MutexLock lock(&mu_);
  absl::erase_if(graphs_, [&](const auto& entry) {
    if (entry.second->last_used.load(std::memory_order_relaxed) >= oldest) return false;
    graph_bytes_ -= entry.second->bytes;
    forgotten.push_back(entry.second);
    return true;
  });
  if (!forgotten.empty()) {
    log_->Log("%s: forgot %d registered graphs that no step ran for %s", task_, forgotten.size(),
              absl::FormatDuration(limits_.idle_timeout));
  }
  return static_cast<int>(forgotten.size());
}

void RegisteredGraphs::Clear() {
  absl::flat_hash_map<std::string, std::shared_ptr<const RegisteredGraph>> graphs;
  absl::MutexLock lock(&mu_);
  graphs.swap(graphs_);
  graph_bytes_ = 0;
}

}  // namespace rill
