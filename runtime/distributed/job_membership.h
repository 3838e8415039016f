// JobMembership: which workers a training job has now, kept by the chief's
// server; workers join a live job, stay by heartbeats, leave or are dropped.
#ifndef RILL_RUNTIME_DISTRIBUTED_JOB_MEMBERSHIP_H_
#define RILL_RUNTIME_DISTRIBUTED_JOB_MEMBERSHIP_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "graph/log_sink.h"
#include "runtime/distributed/cluster_spec.h"
#include "transport/proto/membership.pb.h"
#include "transport/rpc.h"

namespace rill {

struct JobMembershipOptions {
  // The coordinator's cluster: its ps tasks are every joiner's, and its
  // worker tasks keep their indices (a worker of the spec that restarts
  // comes back as itself); joiners get indices past them.
  ClusterSpec cluster;
  TaskId self;  // A member from the start when it is a worker.
  // How long a member may be silent before it is dropped (JobMember's
  // heartbeats come every second).
  absl::Duration timeout = absl::Seconds(5);
  // Strangers cannot grow the table without end.
  int max_members = 1024;
  LogSink* log = nullptr;  // Joins and departures; null: stderr.
};

// Thread safety: all methods may be called concurrently.
class JobMembership {
 public:
  explicit JobMembership(JobMembershipOptions options);

  // A worker joins (or, already a member at the same address, stays).
  // INVALID_ARGUMENT for a job other than "worker", a malformed address or
  // an index outside [0, 1<<20); ALREADY_EXISTS when that index is a live
  // member at another address (naming it and when it was last heard);
  // RESOURCE_EXHAUSTED at max_members.
  absl::StatusOr<JoinJobReply> Join(const JoinJobRequest& request, absl::Time now);
  // A member's heartbeat; one that was dropped joins again.
  absl::StatusOr<HeartbeatReply> Heartbeat(const HeartbeatRequest& request, absl::Time now);
  // A member leaves (NOT_FOUND when it is none, or is at another address).
  absl::Status Leave(const LeaveJobRequest& request, absl::Time now);
  // Drops the members not heard for `timeout` at `now`; returns how many.
  int Expire(absl::Time now);

  // The live workers, by index.
  std::vector<LiveMember> Members() const;
  int64_t generation() const;

  // JoinJob, Heartbeat, LeaveJob (membership.proto).
  std::vector<RpcMethod> Methods();

 private:
  struct Member {
    std::string address;
    absl::Time heard;
  };

  absl::StatusOr<int> Admit(const JoinJobRequest& request, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<LiveMember> MembersLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "(3 live workers: 0, 1, 2)".
  std::string Summary() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobMembershipOptions options_;
  LogSink* const log_;
  int first_joiner_index_ = 0;  // Past the spec's workers.
  mutable absl::Mutex mu_;
  std::map<int, Member> members_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_JOB_MEMBERSHIP_H_
