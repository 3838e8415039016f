#include "runtime/distributed/job_membership.h"

#include <algorithm>
#include <type_traits>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "runtime/distributed/rpc_body.h"

namespace rill {
namespace {

constexpr char kWorkerJob[] = "worker";
constexpr int kMaxTaskIndex = 1 << 20;

absl::Status CheckMember(const std::string& job, int index, const std::string& address) {
  if (job != kWorkerJob) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "job '%s': only workers join and leave a live job; its ps tasks are fixed", job));
  }
  if (index < 0 || index >= kMaxTaskIndex) {
    return absl::InvalidArgumentError(
        absl::StrFormat("task index %d is outside [0, %d)", index, kMaxTaskIndex));
  }
  // The checks a cluster spec makes of an address.
  return ClusterSpec::FromJobs({{job, {address}}}).status();
}

// A method that parses its request and answers with `answer`'s reply (a
// proto) or status.
template <typename Request, typename Answer>
RpcHandler Answering(const char* method, Answer answer) {
  return [method, answer = std::move(answer)](RpcMessage request, RpcDone done) {
    absl::StatusOr<Request> parsed = ParseBody<Request>(request, method);
    if (!parsed.ok()) return done(parsed.status(), {});
    auto reply = answer(*parsed);
    if constexpr (std::is_same_v<decltype(reply), absl::Status>) {
      done(std::move(reply), {});
    } else if (!reply.ok()) {
      done(reply.status(), {});
    } else {
      done(absl::OkStatus(), Reply(*reply));
    }
  };
}

}  // namespace

JobMembership::JobMembership(JobMembershipOptions options)
    : options_(std::move(options)), log_(OrDefault(options_.log)) {
  const std::vector<int> spec_workers = options_.cluster.TaskIndices(kWorkerJob);
  if (!spec_workers.empty()) first_joiner_index_ = spec_workers.back() + 1;
  if (options_.self.job == kWorkerJob) {
    if (absl::StatusOr<std::string> address =
            options_.cluster.TaskAddress(options_.self.job, options_.self.index);
        address.ok()) {
      // The coordinator lives as long as its server: never dropped.
      members_[options_.self.index] = {*std::move(address), absl::InfiniteFuture()};
    }
  }
}

std::vector<LiveMember> JobMembership::MembersLocked() const {
  std::vector<LiveMember> members;
  for (const auto& [index, member] : members_) {
    LiveMember& out = members.emplace_back();
    out.set_job(kWorkerJob);
    out.set_task_index(index);
    out.set_address(member.address);
  }
  return members;
}

std::vector<LiveMember> JobMembership::Members() const {
  absl::MutexLock lock(&mu_);
  return MembersLocked();
}

int64_t JobMembership::generation() const {
  absl::MutexLock lock(&mu_);
  return generation_;
}

std::string JobMembership::Summary() const {
  std::vector<int> indices;
  for (const auto& [index, member] : members_) indices.push_back(index);
  return absl::StrFormat("(%d live workers: %s)", indices.size(), absl::StrJoin(indices, ", "));
}

absl::StatusOr<int> JobMembership::Admit(const JoinJobRequest& request, absl::Time now) {
  int index = request.task_index();
  if (request.assign_index()) {
    // The lowest index past the spec's workers that no live member holds.
    index = first_joiner_index_;
    while (members_.contains(index)) ++index;
  }
  RETURN_IF_ERROR(CheckMember(request.job(), index, request.address()));
  if (auto it = members_.find(index); it != members_.end()) {
    Member& member = it->second;
    if (member.address != request.address()) {
      return absl::AlreadyExistsError(absl::StrFormat(
          "worker %d is a live member at %s (heard %s ago), not at %s", index, member.address,
          absl::FormatDuration(absl::Trunc(now - member.heard, absl::Milliseconds(1))),
          request.address()));
    }
    member.heard = std::max(member.heard, now);
    return index;
  }
  if (static_cast<int>(members_.size()) >= options_.max_members) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the job has %d members, its most", members_.size()));
  }
  members_[index] = {request.address(), now};
  ++generation_;
  log_->Log("membership: worker %d joined at %s %s", index, request.address(), Summary());
  return index;
}

absl::StatusOr<JoinJobReply> JobMembership::Join(const JoinJobRequest& request, absl::Time now) {
  absl::MutexLock lock(&mu_);
  ASSIGN_OR_RETURN(const int index, Admit(request, now));
  std::map<std::string, std::map<int, std::string>> jobs;
  for (const std::string& job : options_.cluster.jobs()) {
    if (job == kWorkerJob) continue;
    for (int task : options_.cluster.TaskIndices(job)) {
      jobs[job][task] = *options_.cluster.TaskAddress(job, task);
    }
  }
  for (const auto& [member_index, member] : members_)
    jobs[kWorkerJob][member_index] = member.address;
  ASSIGN_OR_RETURN(const ClusterSpec cluster, ClusterSpec::FromSparseJobs(jobs));
  JoinJobReply reply;
  reply.set_task_index(index);
  reply.set_cluster(cluster.ToString());
  reply.set_generation(generation_);
  return reply;
}

absl::StatusOr<HeartbeatReply> JobMembership::Heartbeat(const HeartbeatRequest& request,
                                                        absl::Time now) {
  JoinJobRequest join;
  join.set_job(request.job());
  join.set_task_index(request.task_index());
  join.set_address(request.address());
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Admit(join, now).status());
  HeartbeatReply reply;
  reply.set_generation(generation_);
  for (LiveMember& member : MembersLocked()) *reply.add_members() = std::move(member);
  return reply;
}

absl::Status JobMembership::Leave(const LeaveJobRequest& request, absl::Time) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(request.task_index());
  if (request.job() != kWorkerJob || it == members_.end() ||
      it->second.address != request.address() || it->second.heard == absl::InfiniteFuture()) {
    return absl::NotFoundError(absl::StrFormat("%s %d at %s is not a member that can leave",
                                               request.job(), request.task_index(),
                                               request.address()));
  }
  members_.erase(it);
  ++generation_;
  log_->Log("membership: worker %d left %s", request.task_index(), Summary());
  return absl::OkStatus();
}

int JobMembership::Expire(absl::Time now) {
  absl::MutexLock lock(&mu_);
  int dropped = 0;
  for (auto it = members_.begin(); it != members_.end();) {
    if (now - it->second.heard <= options_.timeout) {
      ++it;
      continue;
    }
    const int index = it->first;
    const std::string address = it->second.address;
    it = members_.erase(it);
    ++generation_;
    ++dropped;
    log_->Log("membership: dropped worker %d at %s: not heard for %s %s", index, address,
              absl::FormatDuration(options_.timeout), Summary());
  }
  return dropped;
}

std::vector<RpcMethod> JobMembership::Methods() {
  // Each answers at once from the table: on the socket thread.
  return {
      {"JoinJob",
       Answering<JoinJobRequest>(
           "JoinJob", [this](const JoinJobRequest& request) { return Join(request, absl::Now()); }),
       true},
      {"Heartbeat",
       Answering<HeartbeatRequest>(
           "Heartbeat",
           [this](const HeartbeatRequest& request) { return Heartbeat(request, absl::Now()); }),
       true},
      {"LeaveJob",
       Answering<LeaveJobRequest>(
           "LeaveJob",
           [this](const LeaveJobRequest& request) { return Leave(request, absl::Now()); }),
       true}};
}

}  // namespace rill
