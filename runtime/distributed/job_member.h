// A worker's side of a job's membership: joining a live job through its
// coordinator (the chief's server), and the heartbeats that keep it in.
#ifndef RILL_RUNTIME_DISTRIBUTED_JOB_MEMBER_H_
#define RILL_RUNTIME_DISTRIBUTED_JOB_MEMBER_H_

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "runtime/distributed/cluster_spec.h"
#include "transport/curve.h"
#include "transport/rpc.h"

namespace rill {

struct JobMemberOptions {
  std::string coordinator;  // "HOST:PORT" of the chief's server.
  // The worker's own address, and its index; an index < 0 asks the
  // coordinator for one (a worker outside the cluster spec).
  std::string address;
  int task_index = -1;
  // The token JoinJob returned; empty for a worker of the cluster spec,
  // whose first heartbeat joins it (JobMembership states the contract).
  std::string member_token;
  std::shared_ptr<const CurveKeys> curve;
  LogSink* log = nullptr;  // Lost and regained contact; null: stderr.
};

struct JoinedJob {
  ServerConfig config;       // The worker's index, the ps tasks and the live workers.
  std::string member_token;  // For JobMemberOptions::member_token.
};

// Joins the job. Retries while the coordinator is not up, until `wait`
// has passed (then DEADLINE_EXCEEDED naming it); the coordinator's
// refusals (ALREADY_EXISTS, INVALID_ARGUMENT, PERMISSION_DENIED) come
// back at once.
absl::StatusOr<JoinedJob> JoinJob(const JobMemberOptions& options, absl::Duration wait);

// Keeps a worker in its job: a heartbeat every interval from a thread of
// its own, with its member token (a worker the coordinator dropped joins
// again with it, and takes the new token the reply carries), and LeaveJob
// with the token when it goes. A coordinator out of reach, or refusing,
// is logged once, and again when it answers. Thread safety: none needed
// (no methods).
class JobMember {
 public:
  // Errors: a malformed coordinator address.
  static absl::StatusOr<std::unique_ptr<JobMember>> Start(const JobMemberOptions& options,
                                                          absl::Duration interval);
  // Leaves the job (best effort: a second at most) and stops.
  ~JobMember();

 private:
  JobMember(JobMemberOptions options, std::unique_ptr<RpcClient> client, absl::Duration interval);
  void Loop();

  const JobMemberOptions options_;
  std::string token_;  // The thread's, then the destructor's once it ended.
  const std::unique_ptr<RpcClient> client_;
  const absl::Duration interval_;
  absl::Notification stop_;
  std::thread thread_;
};

// "HOST:PORT" with a free port of the local address through which this
// machine reaches `peer` ("HOST:PORT"): a worker's own address, before its
// server binds it.
absl::StatusOr<std::string> FreeAddressToward(const std::string& peer);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_JOB_MEMBER_H_
