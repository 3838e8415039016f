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
  // comes back as itself, at the spec's address only); joiners get indices
  // past them.
  ClusterSpec cluster;
  TaskId self;  // A member from the start when it is a worker.
  // How long a member may be silent before it is dropped (JobMember's
  // heartbeats come every second).
  absl::Duration timeout = absl::Seconds(5);
  // Strangers cannot grow the table without end.
  int max_members = 1024;
  // Joiners (indices past the spec's workers) that have not contributed
  // yet. A join beyond it, or one into a full table, evicts the one
  // pending longest, so that members that only heartbeat cannot keep a
  // real joiner (or a worker of the spec) out.
  int max_pending = 16;
  // A member counts (Counted) while its last contribution is this recent.
  absl::Duration contribution_window = absl::Seconds(30);
  LogSink* log = nullptr;  // Joins and departures; null: stderr.
};

// The contract, which holds without CURVE too (anyone who reaches the
// server may call it):
//  - A join answers with a member token, 128 random bits; the member's
//    heartbeats and its LeaveJob carry it, and nothing without it can
//    refresh, move or end that membership. A live member's index is
//    nobody else's until it leaves or is dropped.
//  - A worker of the cluster spec joins at its own index and only at the
//    spec's address for it, so its tensors cannot be sent elsewhere; one
//    that restarts without its token is back once its old entry is
//    dropped (`timeout`).
//  - A member is pending until the chief sees it contribute (Contributed:
//    its clock moved after it joined); Counted, what synchronous rounds
//    wait for, lists the coordinator and the members that contributed
//    within contribution_window, so that a member that never sends a
//    gradient holds no round up.
//  - At most max_pending joiners are pending; a join beyond evicts the
//    oldest. Workers of the spec are bounded by the spec and never evicted.
//  - What peers send is quoted (escaped, cut to 128 bytes) in replies and
//    logs; lines about pending members and refusals are rate-limited.
// Thread safety: all methods may be called concurrently.
class JobMembership {
 public:
  explicit JobMembership(JobMembershipOptions options);

  // A worker joins: its index (assigned past the live members with
  // assign_index), the cluster and its member token. INVALID_ARGUMENT for
  // a job other than "worker", a malformed address or an index outside
  // [0, 1<<20); PERMISSION_DENIED for a spec worker's index at another
  // address, or its address at another index; ALREADY_EXISTS when that
  // index is a live member (naming it and when it was last heard) or the
  // address is another member's; RESOURCE_EXHAUSTED at max_members when
  // no member is pending.
  absl::StatusOr<JoinJobReply> Join(const JoinJobRequest& request, absl::Time now);
  // A member's heartbeat, with its token. One whose token the table does
  // not hold (it was dropped, the coordinator restarted, or a spec
  // worker's first heartbeat) joins at its index by Join's rules, and the
  // reply carries its new token.
  absl::StatusOr<HeartbeatReply> Heartbeat(const HeartbeatRequest& request, absl::Time now);
  // A member leaves: NOT_FOUND when the index is no member (or the
  // coordinator), PERMISSION_DENIED without the member's token.
  absl::Status Leave(const LeaveJobRequest& request, absl::Time now);
  // Drops the members not heard for `timeout` at `now`; returns how many.
  int Expire(absl::Time now);
  // Worker `index` contributed (its clock moved) after `since`: a member
  // that joined by then counts from `now`. True when it did not count
  // before (a synchronous loop then owes it a token).
  bool Contributed(int index, absl::Time since, absl::Time now);

  // The live workers, by index, pending ones included.
  std::vector<LiveMember> Members() const;
  // The indices that count at `now`: the coordinator and the members that
  // contributed within contribution_window.
  std::vector<int> Counted(absl::Time now) const;
  int64_t generation() const;

  // JoinJob, Heartbeat, LeaveJob (membership.proto).
  std::vector<RpcMethod> Methods();

 private:
  struct Member {
    std::string address;
    std::string token;  // Empty for the coordinator: it never heartbeats.
    absl::Time heard;
    absl::Time joined;
    absl::Time contributed = absl::InfinitePast();
    bool in_spec = false;
  };

  // Adds a member at `index` (chosen when `assign`), or says why not.
  absl::StatusOr<int> Admit(const std::string& job, int index, bool assign,
                            const std::string& address, absl::Time now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Makes room for a new member: evicts the oldest pending joiner when the
  // table is full, or when a joiner comes and max_pending are pending.
  void EvictPending(bool for_joiner, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool Pending(const Member& member) const;
  // The refusal, logged (rate-limited) and returned.
  absl::Status Refuse(absl::Status status, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // A line about what strangers can cause: at most a few per window.
  void LogLimited(const std::string& line, absl::Time now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::vector<LiveMember> MembersLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // "(3 live workers: 0, 1, 2)".
  std::string Summary() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const JobMembershipOptions options_;
  LogSink* const log_;
  int first_joiner_index_ = 0;  // Past the spec's workers.
  mutable absl::Mutex mu_;
  std::map<int, Member> members_ ABSL_GUARDED_BY(mu_);
  int64_t generation_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time log_window_ ABSL_GUARDED_BY(mu_) = absl::InfinitePast();
  int logged_in_window_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t not_logged_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_JOB_MEMBERSHIP_H_
