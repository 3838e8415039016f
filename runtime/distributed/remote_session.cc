#include "runtime/distributed/remote_session.h"

#include <algorithm>
#include <thread>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "runtime/distributed/rpc_body.h"
#include "transport/proto/cluster_rpc.pb.h"
#include "transport/rpc.h"

namespace rill {
namespace {

// Session set-up and tear-down are quick; a master that takes longer is
// treated as gone. Steps wait as long as the caller asked (heartbeats
// notice a dead master).
constexpr absl::Duration kControlTimeout = absl::Seconds(30);

class RemoteSession final : public Session {
 public:
  // With an idle timeout, the session renews itself four times per
  // timeout while it is open, so that the master keeps it however long
  // the client waits between steps.
  RemoteSession(std::unique_ptr<RpcClient> master, std::string handle, LogSink* placement_log,
                absl::Duration idle_timeout)
      : master_(std::move(master)), handle_(std::move(handle)), placement_log_(placement_log) {
    if (idle_timeout > absl::ZeroDuration()) {
      const absl::Duration every = std::max(idle_timeout / 4, absl::Milliseconds(100));
      renewer_ = std::thread([this, every] { Renew(every); });
    }
  }
  ~RemoteSession() override { (void)Close(); }

  absl::Status Extend(const GraphDef& graph) override {
    RETURN_IF_ERROR(CheckOpen());
    ExtendSessionRequest request;
    request.set_session_handle(handle_);
    *request.mutable_graph() = graph;
    return master_
        ->CallSync("ExtendSession", RpcMessage{request.SerializeAsString(), {}},
                   absl::Now() + kControlTimeout)
        .status();
  }

  absl::StatusOr<std::vector<Tensor>> Run(const RunOptions& options,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets,
                                          RunMetadata* metadata) override {
    RETURN_IF_ERROR(CheckOpen());
    RunStepRequest request;
    request.set_session_handle(handle_);
    RpcMessage message;
    for (const auto& [name, value] : feeds) {
      request.add_feeds(name);
      message.tensors.push_back(value);
    }
    for (const std::string& fetch : fetches) request.add_fetches(fetch);
    for (const std::string& target : targets) request.add_targets(target);
    request.set_timeout_in_ms(options.timeout_in_ms);
    request.set_trace(options.trace && metadata != nullptr);
    message.body = request.SerializeAsString();
    // The master enforces the step's deadline and answers with it; the
    // client waits a little longer for that answer.
    const absl::Time deadline =
        options.timeout_in_ms > 0
            ? absl::Now() + absl::Milliseconds(options.timeout_in_ms) + kControlTimeout
            : absl::InfiniteFuture();
    ASSIGN_OR_RETURN(RpcMessage reply, master_->CallSync("RunStep", std::move(message), deadline));
    if (reply.tensors.size() != fetches.size()) {
      return absl::InternalError(absl::StrFormat("the master returned %d tensors for %d fetches",
                                                 reply.tensors.size(), fetches.size()));
    }
    ASSIGN_OR_RETURN(const RunStepReply body, ParseReply<RunStepReply>(reply, "the master"));
    // The master logs placement where it runs; the client sees it too.
    if (placement_log_ != nullptr && !body.placement_log().empty()) {
      placement_log_->WriteLines(body.placement_log());
    }
    if (request.trace()) {
      AppendStepStats(body.step_stats(), &metadata->step_stats);
      AppendTaskClocks(body.step_stats(), &metadata->task_clocks);
    }
    return std::move(reply.tensors);
  }

  absl::Status Close() override {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    if (renewer_.joinable()) {
      stop_renewing_.Notify();
      renewer_.join();
    }
    CloseSessionRequest request;
    request.set_session_handle(handle_);
    return master_
        ->CallSync("CloseSession", RpcMessage{request.SerializeAsString(), {}},
                   absl::Now() + kControlTimeout)
        .status();
  }

 private:
  void Renew(absl::Duration every) {
    RenewSessionRequest request;
    request.set_session_handle(handle_);
    const std::string body = request.SerializeAsString();
    while (!stop_renewing_.WaitForNotificationWithTimeout(every)) {
      // A renewal that fails changes nothing: the next step reports why.
      master_->Call("RenewSession", RpcMessage{body, {}}, absl::Now() + every,
                    [](absl::Status, RpcMessage) {});
    }
  }

  absl::Status CheckOpen() {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("Session has been closed.");
    return absl::OkStatus();
  }

  const std::unique_ptr<RpcClient> master_;
  const std::string handle_;
  LogSink* const placement_log_;  // Null unless log_device_placement.
  absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  absl::Notification stop_renewing_;
  std::thread renewer_;
};

absl::StatusOr<std::unique_ptr<RpcClient>> ConnectToMaster(const std::string& target,
                                                           std::shared_ptr<const CurveKeys> curve) {
  RpcClientOptions options;
  ASSIGN_OR_RETURN(options.address, ParseTarget(target));
  options.curve = std::move(curve);
  return RpcClient::Connect(options);
}

}  // namespace

absl::StatusOr<std::string> ParseTarget(const std::string& target) {
  constexpr std::string_view kScheme = "zmq://";
  if (!std::string_view(target).starts_with(kScheme)) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session target '%s': expected zmq://HOST:PORT (or no target for this process)", target));
  }
  const std::string address = target.substr(kScheme.size());
  const size_t colon = address.rfind(':');
  int port = 0;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(address.substr(colon + 1), &port) || port < 1 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "session target '%s': expected zmq://HOST:PORT with PORT in 1..65535", target));
  }
  return address;
}

absl::StatusOr<std::unique_ptr<Session>> NewRemoteSession(const SessionOptions& options,
                                                          const GraphDef& graph) {
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> master,
                   ConnectToMaster(options.target, options.curve));
  CreateSessionRequest request;
  *request.mutable_graph() = graph;
  request.mutable_config()->set_allow_soft_placement(options.allow_soft_placement);
  request.mutable_config()->set_log_device_placement(options.log_device_placement);
  ASSIGN_OR_RETURN(RpcMessage reply,
                   master->CallSync("CreateSession", RpcMessage{request.SerializeAsString(), {}},
                                    absl::Now() + kControlTimeout));
  CreateSessionReply created;
  if (!created.ParseFromString(reply.body)) {
    return absl::InternalError(
        absl::StrFormat("%s sent a malformed CreateSession reply", options.target));
  }
  LogSink* const placement_log = options.log_device_placement ? OrDefault(options.log) : nullptr;
  return std::unique_ptr<Session>(
      std::make_unique<RemoteSession>(std::move(master), created.session_handle(), placement_log,
                                      absl::Milliseconds(created.idle_timeout_ms())));
}

absl::StatusOr<std::vector<std::string>> ListRemoteDevices(const std::string& target,
                                                           absl::Duration timeout,
                                                           std::shared_ptr<const CurveKeys> curve) {
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> master, ConnectToMaster(target, std::move(curve)));
  ASSIGN_OR_RETURN(RpcMessage reply,
                   master->CallSync("ListDevices", RpcMessage(), absl::Now() + timeout));
  GetStatusReply devices;
  if (!devices.ParseFromString(reply.body)) {
    return absl::InternalError(absl::StrFormat("%s sent a malformed ListDevices reply", target));
  }
  return std::vector<std::string>(devices.devices().begin(), devices.devices().end());
}

}  // namespace rill
