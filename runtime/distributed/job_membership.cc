#include "runtime/distributed/job_membership.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <type_traits>
#include <utility>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "graph/status_macros.h"
#include "runtime/distributed/rpc_body.h"
#include "runtime/session/secure_random.h"

namespace rill {
namespace {

constexpr char kWorkerJob[] = "worker";
constexpr int kMaxTaskIndex = 1 << 20;
constexpr size_t kTokenBytes = 16;
constexpr size_t kMaxQuoted = 128;
// A peer's address appears in log lines: as short as a quoted string.
constexpr size_t kMaxAddressBytes = kMaxQuoted;
// Lines about pending members and refusals: this many per window.
constexpr int kLinesPerWindow = 10;
constexpr absl::Duration kLogWindow = absl::Seconds(10);

// A peer's string for a reply or a log line: escaped and cut short.
std::string Quoted(const std::string& text) {
  std::string quoted = absl::StrCat("'", absl::CHexEscape(text.substr(0, kMaxQuoted)), "'");
  if (text.size() > kMaxQuoted) absl::StrAppendFormat(&quoted, "... (%d bytes)", text.size());
  return quoted;
}

std::string NewToken() {
  std::string token(kTokenBytes, '\0');
  for (size_t i = 0; i < kTokenBytes; i += sizeof(uint64_t)) {
    const uint64_t bits = SecureRandom64();
    std::memcpy(token.data() + i, &bits, sizeof(bits));
  }
  return token;
}

// Compares all the bytes whatever they hold, so that timing tells a
// guesser nothing.
bool SameToken(std::string_view a, std::string_view b) {
  if (a.size() != kTokenBytes || b.size() != kTokenBytes) return false;
  unsigned char differ = 0;
  for (size_t i = 0; i < kTokenBytes; ++i) differ |= a[i] ^ b[i];
  return differ == 0;
}

absl::Status CheckMember(const std::string& job, int index, const std::string& address) {
  if (job != kWorkerJob) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "job %s: only workers join and leave a live job; its ps tasks are fixed", Quoted(job)));
  }
  if (index < 0 || index >= kMaxTaskIndex) {
    return absl::InvalidArgumentError(
        absl::StrFormat("task index %d is outside [0, %d)", index, kMaxTaskIndex));
  }
  const bool printable =
      std::all_of(address.begin(), address.end(), [](char c) { return c > ' ' && c < 0x7f; });
  // The checks a cluster spec makes of an address.
  if (address.size() > kMaxAddressBytes || !printable ||
      !ClusterSpec::FromJobs({{job, {address}}}).ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("address %s is not HOST:PORT", Quoted(address)));
  }
  return absl::OkStatus();
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
      // The coordinator lives as long as its server: never dropped, and it
      // counts (its own hook runs the rounds).
      members_[options_.self.index] = {.address = *std::move(address),
                                       .token = "",
                                       .heard = absl::InfiniteFuture(),
                                       .joined = absl::InfinitePast(),
                                       .contributed = absl::InfiniteFuture(),
                                       .in_spec = true};
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

std::vector<int> JobMembership::Counted(absl::Time now) const {
  absl::MutexLock lock(&mu_);
  std::vector<int> counted;
  for (const auto& [index, member] : members_) {
    if (member.contributed >= now - options_.contribution_window) counted.push_back(index);
  }
  return counted;
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

bool JobMembership::Pending(const Member& member) const {
  return !member.in_spec && member.contributed == absl::InfinitePast();
}

void JobMembership::LogLimited(const std::string& line, absl::Time now) {
  if (now - log_window_ >= kLogWindow) {
    if (not_logged_ > 0) {
      log_->Log("membership: %d more lines about pending members and refusals not logged",
                not_logged_);
    }
    log_window_ = now;
    logged_in_window_ = 0;
    not_logged_ = 0;
  }
  if (logged_in_window_ >= kLinesPerWindow) {
    ++not_logged_;
    return;
  }
  ++logged_in_window_;
  log_->WriteLine(line);
}

absl::Status JobMembership::Refuse(absl::Status status, absl::Time now) {
  LogLimited(absl::StrFormat("membership: refused: %s", status.message()), now);
  return status;
}

void JobMembership::EvictPending(bool for_joiner, absl::Time now) {
  int pending = 0;
  auto oldest = members_.end();
  for (auto it = members_.begin(); it != members_.end(); ++it) {
    if (!Pending(it->second)) continue;
    ++pending;
    if (oldest == members_.end() || it->second.joined < oldest->second.joined) oldest = it;
  }
  const bool full = static_cast<int>(members_.size()) >= options_.max_members;
  if (oldest == members_.end() || (!full && !(for_joiner && pending >= options_.max_pending))) {
    return;
  }
  LogLimited(absl::StrFormat("membership: evicted worker %d at %s, which has not contributed: "
                             "%d joiners have not, and the job has %d members",
                             oldest->first, oldest->second.address, pending, members_.size()),
             now);
  members_.erase(oldest);
  ++generation_;
}

absl::StatusOr<int> JobMembership::Admit(const std::string& job, int index, bool assign,
                                         const std::string& address, absl::Time now) {
  if (assign) {
    // The lowest index past the spec's workers that no live member holds.
    index = first_joiner_index_;
    while (members_.contains(index)) ++index;
  }
  RETURN_IF_ERROR(CheckMember(job, index, address));
  const absl::StatusOr<std::string> spec_address = options_.cluster.TaskAddress(kWorkerJob, index);
  const bool in_spec = spec_address.ok();
  if (in_spec && *spec_address != address) {
    return absl::PermissionDeniedError(absl::StrFormat(
        "worker %d of the cluster spec listens at %s, not at %s; joiners are given indices "
        "past the spec's",
        index, *spec_address, Quoted(address)));
  }
  // An address is one task's: a second member there would share its
  // tensors.
  for (const int spec_index : options_.cluster.TaskIndices(kWorkerJob)) {
    if (spec_index != index && *options_.cluster.TaskAddress(kWorkerJob, spec_index) == address) {
      return absl::PermissionDeniedError(absl::StrFormat(
          "%s is worker %d's address in the cluster spec", Quoted(address), spec_index));
    }
  }
  for (const auto& [other, member] : members_) {
    if (other != index && member.address == address) {
      return absl::AlreadyExistsError(
          absl::StrFormat("worker %d is a live member at %s already", other, Quoted(address)));
    }
  }
  if (auto it = members_.find(index); it != members_.end()) {
    const Member& member = it->second;
    return absl::AlreadyExistsError(absl::StrFormat(
        "worker %d is a live member at %s (heard %s ago); only the member's own token keeps, "
        "moves or ends it",
        index, member.address,
        member.heard == absl::InfiniteFuture()
            ? "now"
            : absl::FormatDuration(absl::Trunc(now - member.heard, absl::Milliseconds(1)))));
  }
  EvictPending(/*for_joiner=*/!in_spec, now);
  if (!in_spec && options_.max_pending <= 0) {
    return absl::ResourceExhaustedError("this job takes no joiners (max_pending is 0)");
  }
  if (static_cast<int>(members_.size()) >= options_.max_members) {
    return absl::ResourceExhaustedError(
        absl::StrFormat("the job has %d members, its most", members_.size()));
  }
  members_[index] = {.address = address,
                     .token = NewToken(),
                     .heard = now,
                     .joined = now,
                     .contributed = absl::InfinitePast(),
                     .in_spec = in_spec};
  ++generation_;
  const std::string line =
      absl::StrFormat("membership: worker %d joined at %s %s", index, address, Summary());
  if (in_spec) {
    log_->WriteLine(line);
  } else {
    LogLimited(line, now);
  }
  return index;
}

absl::StatusOr<JoinJobReply> JobMembership::Join(const JoinJobRequest& request, absl::Time now) {
  absl::MutexLock lock(&mu_);
  absl::StatusOr<int> admitted =
      Admit(request.job(), request.task_index(), request.assign_index(), request.address(), now);
  if (!admitted.ok()) return Refuse(admitted.status(), now);
  const int index = *admitted;
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
  reply.set_member_token(members_.at(index).token);
  return reply;
}

absl::StatusOr<HeartbeatReply> JobMembership::Heartbeat(const HeartbeatRequest& request,
                                                        absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(request.task_index());
  if (it != members_.end() && SameToken(it->second.token, request.member_token())) {
    if (it->second.address != request.address()) {
      return Refuse(absl::InvalidArgumentError(absl::StrFormat(
                        "worker %d is a member at %s, not at %s; a member that moves joins again",
                        request.task_index(), it->second.address, Quoted(request.address()))),
                    now);
    }
    it->second.heard = std::max(it->second.heard, now);
  } else {
    absl::StatusOr<int> admitted =
        Admit(request.job(), request.task_index(), /*assign=*/false, request.address(), now);
    if (!admitted.ok()) return Refuse(admitted.status(), now);
    it = members_.find(*admitted);
  }
  HeartbeatReply reply;
  reply.set_generation(generation_);
  reply.set_member_token(it->second.token);
  for (LiveMember& member : MembersLocked()) *reply.add_members() = std::move(member);
  return reply;
}

absl::Status JobMembership::Leave(const LeaveJobRequest& request, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(request.task_index());
  if (request.job() != kWorkerJob || it == members_.end() ||
      it->second.heard == absl::InfiniteFuture()) {
    return Refuse(absl::NotFoundError(absl::StrFormat("%s %d is not a member that can leave",
                                                      Quoted(request.job()), request.task_index())),
                  now);
  }
  if (!SameToken(it->second.token, request.member_token())) {
    return Refuse(absl::PermissionDeniedError(absl::StrFormat(
                      "worker %d: only the member leaves, with the token its join returned",
                      request.task_index())),
                  now);
  }
  const bool pending = Pending(it->second);
  members_.erase(it);
  ++generation_;
  const std::string line =
      absl::StrFormat("membership: worker %d left %s", request.task_index(), Summary());
  if (pending) {
    LogLimited(line, now);
  } else {
    log_->WriteLine(line);
  }
  return absl::OkStatus();
}

bool JobMembership::Contributed(int index, absl::Time since, absl::Time now) {
  absl::MutexLock lock(&mu_);
  auto it = members_.find(index);
  // A member that joined after `since` may not be the one that sent it.
  if (it == members_.end() || it->second.joined > since) return false;
  Member& member = it->second;
  const bool counted_before = member.contributed >= now - options_.contribution_window;
  if (counted_before) {
    member.contributed = std::max(member.contributed, now);
    return false;
  }
  const bool first = member.contributed == absl::InfinitePast();
  member.contributed = now;
  if (first) log_->Log("membership: worker %d contributed; it counts now", index);
  return true;
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
    const bool pending = Pending(it->second);
    it = members_.erase(it);
    ++generation_;
    ++dropped;
    const std::string line =
        absl::StrFormat("membership: dropped worker %d at %s: not heard for %s %s", index, address,
                        absl::FormatDuration(options_.timeout), Summary());
    if (pending) {
      LogLimited(line, now);
    } else {
      log_->WriteLine(line);
    }
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
