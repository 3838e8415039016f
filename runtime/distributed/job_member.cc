#include "runtime/distributed/job_member.h"

#include <algorithm>
#include <optional>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "runtime/distributed/address_exchange.h"
#include "runtime/distributed/rpc_body.h"
#include "transport/proto/membership.pb.h"

namespace rill {
namespace {

constexpr absl::Duration kCallTimeout = absl::Seconds(5);

absl::StatusOr<std::unique_ptr<RpcClient>> ClientOf(const JobMemberOptions& options) {
  RpcClientOptions client;
  client.address = options.coordinator;
  client.curve = options.curve;
  client.shm_min_bytes = 0;  // Small messages only.
  return RpcClient::Connect(client);
}

// A coordinator that is not up (yet) or was just restarted.
bool WorthRetrying(const absl::Status& status) {
  return absl::IsUnavailable(status) || absl::IsDeadlineExceeded(status) ||
         absl::IsCancelled(status);
}

// The host and port of "HOST:PORT" (IPv6 hosts bracketed).
absl::StatusOr<std::pair<std::string, int>> SplitAddress(const std::string& address) {
  const size_t colon = address.rfind(':');
  const std::optional<int> port =
      colon == std::string::npos ? std::nullopt : ParseDecimalInt(address.substr(colon + 1));
  if (!port || *port < 1 || *port > 65535 || colon == 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("address '%s' is not HOST:PORT with PORT in 1..65535", address));
  }
  return std::make_pair(address.substr(0, colon), *port);
}

}  // namespace

absl::StatusOr<JoinedJob> JoinJob(const JobMemberOptions& options, absl::Duration wait) {
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> client, ClientOf(options));
  JoinJobRequest request;
  request.set_job("worker");
  request.set_address(options.address);
  request.set_task_index(std::max(options.task_index, 0));
  request.set_assign_index(options.task_index < 0);
  const absl::Time give_up = absl::Now() + wait;
  absl::Status last;
  while (absl::Now() < give_up) {
    absl::StatusOr<RpcMessage> reply = client->CallSync(
        "JoinJob", Request(request), std::min(give_up, absl::Now() + kCallTimeout));
    if (reply.ok()) {
      ASSIGN_OR_RETURN(const JoinJobReply joined,
                       ParseReply<JoinJobReply>(*reply, options.coordinator));
      JoinedJob job;
      ASSIGN_OR_RETURN(job.config.cluster, ClusterSpec::Parse(joined.cluster()));
      job.config.task = {"worker", joined.task_index()};
      RETURN_IF_ERROR(job.config.cluster.CheckTask(job.config.task, "the coordinator's reply"));
      job.member_token = joined.member_token();
      return job;
    }
    if (!WorthRetrying(reply.status())) {
      return absl::Status(reply.status().code(),
                          absl::StrFormat("joining the job at %s: %s", options.coordinator,
                                          reply.status().message()));
    }
    last = reply.status();
    absl::SleepFor(absl::Milliseconds(200));
  }
  return absl::DeadlineExceededError(absl::StrFormat("could not join the job at %s within %s: %s",
                                                     options.coordinator,
                                                     absl::FormatDuration(wait), last.message()));
}

absl::StatusOr<std::unique_ptr<JobMember>> JobMember::Start(const JobMemberOptions& options,
                                                            absl::Duration interval) {
  ASSIGN_OR_RETURN(std::unique_ptr<RpcClient> client, ClientOf(options));
  return std::unique_ptr<JobMember>(new JobMember(options, std::move(client), interval));
}

JobMember::JobMember(JobMemberOptions options, std::unique_ptr<RpcClient> client,
                     absl::Duration interval)
    : options_(std::move(options)),
      token_(options_.member_token),
      client_(std::move(client)),
      interval_(interval) {
  thread_ = std::thread([this] { Loop(); });
}

JobMember::~JobMember() {
  stop_.Notify();
  thread_.join();
  LeaveJobRequest request;
  request.set_job("worker");
  request.set_task_index(options_.task_index);
  request.set_address(options_.address);
  request.set_member_token(token_);
  // A coordinator that does not answer drops this worker by its timeout.
  (void)client_->CallSync("LeaveJob", Request(request), absl::Now() + absl::Seconds(1));
}

void JobMember::Loop() {
  HeartbeatRequest request;
  request.set_job("worker");
  request.set_task_index(options_.task_index);
  request.set_address(options_.address);
  LogSink* const log = OrDefault(options_.log);
  bool reached = true;
  do {
    request.set_member_token(token_);
    absl::StatusOr<RpcMessage> reply =
        client_->CallSync("Heartbeat", Request(request), absl::Now() + kCallTimeout);
    if (reply.ok()) {
      absl::StatusOr<HeartbeatReply> beat =
          ParseReply<HeartbeatReply>(*reply, options_.coordinator);
      if (beat.ok()) {
        token_ = beat->member_token();
      } else {
        reply = beat.status();
      }
    }
    if (reply.ok() != reached) {
      reached = reply.ok();
      if (reached) {
        log->Log("worker %d: the job's coordinator at %s answers again", options_.task_index,
                 options_.coordinator);
      } else {
        log->Log("worker %d: the job's coordinator at %s does not answer or refuses: %s",
                 options_.task_index, options_.coordinator, reply.status().message());
      }
    }
  } while (!stop_.WaitForNotificationWithTimeout(interval_));
}

absl::StatusOr<std::string> FreeAddressToward(const std::string& peer) {
  ASSIGN_OR_RETURN(const auto host_port, SplitAddress(peer));
  ASSIGN_OR_RETURN(const std::string host, LocalAddressToward(host_port.first));
  // Another process could take the port before the server binds it; the
  // bind then fails with a clear error, which a supervisor's restart mends.
  ASSIGN_OR_RETURN(const int port, PickFreePort(host));
  return absl::StrFormat("%s:%d", host, port);
}

}  // namespace rill
