// The master's and worker's RPC bodies: requests and replies serialized,
// parsed with an error that names the method or the peer, and step stats
// to and from their wire form.
#ifndef RILL_RUNTIME_DISTRIBUTED_RPC_BODY_H_
#define RILL_RUNTIME_DISTRIBUTED_RPC_BODY_H_

#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_format.h"
#include "google/protobuf/message.h"
#include "runtime/exec/step_stats.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/rpc.h"

namespace rill {

template <typename Proto>
absl::StatusOr<Proto> ParseBody(const RpcMessage& message, const char* method) {
  Proto proto;
  if (!proto.ParseFromString(message.body)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the request body is not a valid %s", method, proto.GetTypeName()));
  }
  return proto;
}

// A reply from `peer` (a task or an address).
template <typename Proto>
absl::StatusOr<Proto> ParseReply(const RpcMessage& message, std::string_view peer) {
  Proto proto;
  if (!proto.ParseFromString(message.body)) {
    return absl::InternalError(
        absl::StrFormat("%s sent a malformed %s", peer, proto.GetTypeName()));
  }
  return proto;
}

// A method of `service` as an RPC handler.
template <typename Service>
RpcHandler Bind(Service* service, void (Service::*method)(RpcMessage, RpcDone)) {
  return [service, method](RpcMessage request, RpcDone done) {
    (service->*method)(std::move(request), std::move(done));
  };
}

inline RpcMessage Request(const google::protobuf::Message& body) {
  return RpcMessage{body.SerializeAsString(), {}};
}
inline RpcMessage Reply(const google::protobuf::Message& body) { return Request(body); }

inline void AppendStepStats(const std::vector<NodeExecStats>& stats, StepStatsProto* proto) {
  for (const NodeExecStats& node : stats) {
    NodeExecStatsProto* out = proto->add_nodes();
    out->set_node_name(node.node_name);
    out->set_op(node.op);
    out->set_device(node.device);
    out->set_start_micros(node.start_micros);
    out->set_end_micros(node.end_micros);
    out->set_output_bytes(node.output_bytes);
    out->set_peer_device(node.peer_device);
    out->set_tensor_name(node.tensor_name);
    if (node.memory_in_use >= 0) out->set_memory_in_use(node.memory_in_use);
  }
}

inline void AppendStepStats(const StepStatsProto& proto, std::vector<NodeExecStats>* stats) {
  for (const NodeExecStatsProto& node : proto.nodes()) {
    stats->push_back(NodeExecStats{node.node_name(), node.op(), node.device(), node.start_micros(),
                                   node.end_micros(), node.output_bytes(), node.peer_device(),
                                   node.tensor_name(),
                                   node.has_memory_in_use() ? node.memory_in_use() : -1});
  }
}

inline void AppendTaskClocks(const std::vector<TaskClock>& clocks, StepStatsProto* proto) {
  for (const TaskClock& clock : clocks) {
    TaskClockProto* out = proto->add_clocks();
    out->set_task(clock.task);
    out->set_offset_micros(clock.offset_micros);
    out->set_network_micros(clock.network_micros);
  }
}

inline void AppendTaskClocks(const StepStatsProto& proto, std::vector<TaskClock>* clocks) {
  for (const TaskClockProto& clock : proto.clocks()) {
    clocks->push_back(TaskClock{clock.task(), clock.offset_micros(), clock.network_micros()});
  }
}

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_RPC_BODY_H_
