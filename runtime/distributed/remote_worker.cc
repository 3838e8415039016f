#include "runtime/distributed/remote_worker.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/device_spec.h"
#include "runtime/distributed/rpc_body.h"

namespace rill {
namespace {

// Registration and tear-down are quick; a worker that takes longer is
// treated as gone.
constexpr absl::Duration kControlTimeout = absl::Seconds(30);

// "/job:J/replica:0/task:T" of a device name, or nullopt.
std::optional<std::string> TaskOf(const std::string& device) {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(device);
  if (!spec.ok() || !spec->job || !spec->task) return std::nullopt;
  return absl::StrFormat("/job:%s/replica:0/task:%d", *spec->job, *spec->task);
}

}  // namespace

absl::Status RemoteWorker::Annotate(absl::Status status) const {
  if (status.code() != absl::StatusCode::kUnavailable &&
      status.code() != absl::StatusCode::kDeadlineExceeded) {
    return status;
  }
  return absl::Status(status.code(), absl::StrFormat("%s: %s", task_, status.message()));
}

void RemoteWorker::ListDevices(absl::Time deadline,
                               std::function<void(absl::StatusOr<std::vector<std::string>>)> done) {
  client_->Call(
      "GetStatus", RpcMessage(), deadline,
      [this, done = std::move(done)](absl::Status status, RpcMessage reply) {
        if (!status.ok()) return done(Annotate(std::move(status)));
        absl::StatusOr<GetStatusReply> parsed = ParseReply<GetStatusReply>(reply, task_);
        if (!parsed.ok()) return done(parsed.status());
        done(std::vector<std::string>(parsed->devices().begin(), parsed->devices().end()));
      });
}

void RemoteWorker::RegisterGraph(const RegisterGraphRequest& request, absl::Time deadline,
                                 std::function<void(absl::StatusOr<GraphRegistration>)> done) {
  // The addresses of the tasks its partitions send to: a task that joined
  // the job after that worker started is in no cluster spec of its own.
  RegisterGraphRequest addressed = request;
  for (const auto& [device, partition] : request.partitions()) {
    for (const NodeDef& node : partition.node()) {
      const auto recv_device = node.attr().find("recv_device");
      if (recv_device == node.attr().end()) continue;
      const std::optional<std::string> peer = TaskOf(recv_device->second.s());
      if (!peer || *peer == task_ || addressed.task_addresses().contains(*peer)) continue;
      if (absl::StatusOr<std::string> address = channels_->Address(*peer); address.ok()) {
        (*addressed.mutable_task_addresses())[*peer] = *std::move(address);
      }
    }
  }
  client_->Call("RegisterGraph", Request(addressed), deadline,
                [this, done = std::move(done)](absl::Status status, RpcMessage reply) {
                  if (!status.ok()) return done(Annotate(std::move(status)));
                  absl::StatusOr<RegisterGraphReply> parsed =
                      ParseReply<RegisterGraphReply>(reply, task_);
                  if (!parsed.ok()) return done(parsed.status());
                  GraphRegistration registration{parsed->graph_handle()};
                  if (parsed->idle_timeout_ms() > 0) {
                    registration.idle_timeout = absl::Milliseconds(parsed->idle_timeout_ms());
                  }
                  done(std::move(registration));
                });
}

void RemoteWorker::DeregisterGraph(const std::string& graph_handle) {
  DeregisterGraphRequest request;
  request.add_graph_handles(graph_handle);
  client_->Call("DeregisterGraph", Request(request), absl::Now() + kControlTimeout,
                [](absl::Status, RpcMessage) {});
}

void RemoteWorker::AbortStep(uint64_t step_id, const absl::Status& status) {
  AbortStepRequest abort;
  abort.set_step_id(step_id);
  abort.set_status_code(static_cast<int>(status.code()));
  abort.set_status_message(std::string(status.message()));
  client_->Call("AbortStep", Request(abort), absl::Now() + kControlTimeout,
                [](absl::Status, RpcMessage) {});
}

void RemoteWorker::RunGraph(RunGraphCall* call, std::function<void(absl::Status)> done) {
  StepCancellation::Token token = 0;
  const uint64_t step_id = call->step_id;
  if (!call->cancellation.RegisterCallback(
          [this, step_id](const absl::Status& status) { AbortStep(step_id, status); }, &token)) {
    return done(call->cancellation.status());
  }
  RunGraphRequest request;
  request.set_graph_handle(std::string(call->graph_handle));
  request.set_step_id(step_id);
  request.set_trace(call->trace);
  RpcMessage message{request.SerializeAsString(), call->feeds};
  const int64_t sent_micros = absl::ToUnixMicros(absl::Now());
  // The caller enforces the step's deadline (it cancels the call);
  // heartbeats notice a task that stops answering.
  client_->Call("RunGraph", std::move(message), absl::InfiniteFuture(),
                [this, call, token, sent_micros, done = std::move(done)](absl::Status status,
                                                                         RpcMessage reply) {
                  call->cancellation.DeregisterCallback(token);
                  if (!status.ok()) return done(Annotate(std::move(status)));
                  absl::StatusOr<RunGraphReply> parsed = ParseReply<RunGraphReply>(reply, task_);
                  if (!parsed.ok()) return done(parsed.status());
                  call->fetched = std::move(reply.tensors);
                  if (call->trace) {
                    call->clock = ClockOf(*parsed, sent_micros, absl::ToUnixMicros(absl::Now()));
                    const size_t first = call->stats.size();
                    AppendStepStats(parsed->step_stats(), &call->stats);
                    for (size_t i = first; i < call->stats.size(); ++i) {
                      call->stats[i].start_micros -= call->clock.offset_micros;
                      call->stats[i].end_micros -= call->clock.offset_micros;
                    }
                  }
                  done(absl::OkStatus());
                });
}

TaskClock RemoteWorker::ClockOf(const RunGraphReply& reply, int64_t sent_micros,
                                int64_t answered_micros) const {
  // The worker's time between the two stamps is its own; what is left of
  // the round trip is the network's, assumed the same both ways.
  const int64_t there = reply.received_micros() - sent_micros;
  const int64_t back = reply.replied_micros() - answered_micros;
  TaskClock clock;
  clock.task = task_;
  clock.offset_micros = (there + back) / 2;
  clock.network_micros = std::max<int64_t>(
      0, (answered_micros - sent_micros) - (reply.replied_micros() - reply.received_micros()));
  return clock;
}

}  // namespace rill
