// A job's membership: the coordinator's table (joins, heartbeats, leaves,
// drops), the channel cache learning where joined workers listen, and a
// worker that joins a live job through real servers and trains with its ps.
#include "runtime/distributed/job_membership.h"

#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/variable.h"
#include "runtime/distributed/channel_cache.h"
#include "runtime/distributed/job_member.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::QuietLog;
using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

const absl::Time kStart = absl::FromUnixSeconds(1'000'000);

ClusterSpec TwoWorkers() {
  absl::StatusOr<ClusterSpec> cluster = ClusterSpec::FromJobs(
      {{"ps", {"127.0.0.1:2222"}}, {"worker", {"127.0.0.1:2223", "127.0.0.1:2224"}}});
  EXPECT_OK(cluster);
  return cluster.ok() ? *cluster : ClusterSpec();
}

JobMembership Coordinator() {
  return JobMembership({.cluster = TwoWorkers(),
                        .self = {"worker", 0},
                        .timeout = absl::Seconds(5),
                        .max_members = 4,
                        .log = QuietLog()});
}

JoinJobRequest Joiner(const std::string& address, int index = -1) {
  JoinJobRequest request;
  request.set_job("worker");
  request.set_address(address);
  request.set_task_index(index < 0 ? 0 : index);
  request.set_assign_index(index < 0);
  return request;
}

HeartbeatRequest Beat(int index, const std::string& address, const std::string& token) {
  HeartbeatRequest beat;
  beat.set_job("worker");
  beat.set_task_index(index);
  beat.set_address(address);
  beat.set_member_token(token);
  return beat;
}

LeaveJobRequest Leaving(int index, const std::string& token) {
  LeaveJobRequest leave;
  leave.set_job("worker");
  leave.set_task_index(index);
  leave.set_member_token(token);
  return leave;
}

std::vector<int> Indices(const std::vector<LiveMember>& members) {
  std::vector<int> indices;
  for (const LiveMember& member : members) indices.push_back(member.task_index());
  return indices;
}

TEST(JobMembership, TheChiefIsAMemberFromTheStart) {
  JobMembership membership = Coordinator();
  EXPECT_THAT(Indices(membership.Members()), ElementsAre(0));
  // Never dropped, and cannot be made to leave.
  EXPECT_EQ(membership.Expire(kStart + absl::Hours(1000)), 0);
  EXPECT_THAT(membership.Leave(Leaving(0, ""), kStart),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  // Nor kept by another's heartbeats.
  EXPECT_THAT(membership.Heartbeat(Beat(0, "127.0.0.1:2223", ""), kStart),
              StatusIs(absl::StatusCode::kAlreadyExists, ::testing::_));
}

TEST(JobMembership, AJoinerGetsAnIndexPastTheSpecAndTheLiveCluster) {
  JobMembership membership = Coordinator();
  ASSERT_OK_AND_ASSIGN(JoinJobReply reply, membership.Join(Joiner("127.0.0.1:3000"), kStart));
  EXPECT_EQ(reply.task_index(), 2);
  EXPECT_EQ(reply.cluster(), "ps=127.0.0.1:2222;worker=0:127.0.0.1:2223,2:127.0.0.1:3000");
  ASSERT_OK_AND_ASSIGN(reply, membership.Join(Joiner("127.0.0.1:3001"), kStart));
  EXPECT_EQ(reply.task_index(), 3);
  ASSERT_OK_AND_ASSIGN(const ClusterSpec cluster, ClusterSpec::Parse(reply.cluster()));
  EXPECT_THAT(cluster.TaskIndices("worker"), ElementsAre(0, 2, 3));
  EXPECT_EQ(membership.generation(), 2);
}

TEST(JobMembership, ASpecWorkerKeepsItsIndexAndComesBackAsItself) {
  JobMembership membership = Coordinator();
  ASSERT_OK_AND_ASSIGN(JoinJobReply reply, membership.Join(Joiner("127.0.0.1:2224", 1), kStart));
  EXPECT_EQ(reply.task_index(), 1);
  EXPECT_EQ(reply.member_token().size(), 16u);
  // Its heartbeats carry its token.
  ASSERT_OK(
      membership
          .Heartbeat(Beat(1, "127.0.0.1:2224", reply.member_token()), kStart + absl::Seconds(1))
          .status());
  EXPECT_EQ(membership.generation(), 1);
  // Nobody takes a live member's index, not even at its own address.
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:2224", 1), kStart + absl::Seconds(2)),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("worker 1 is a live member at 127.0.0.1:2224 (heard 1s ago)")));
  // Restarted without its token, it is back once its old entry is dropped;
  // its first heartbeat joins it.
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(7)), 1);
  ASSERT_OK_AND_ASSIGN(
      const HeartbeatReply back,
      membership.Heartbeat(Beat(1, "127.0.0.1:2224", ""), kStart + absl::Seconds(8)));
  EXPECT_EQ(back.member_token().size(), 16u);
  EXPECT_NE(back.member_token(), reply.member_token());
  EXPECT_THAT(Indices(membership.Members()), ElementsAre(0, 1));
}

// Finding: a stranger took a spec worker's or a live joiner's index at its
// own address, and so redirected where their tensors go.
TEST(JobMembership, AStrangerTakesNoIndexAndMovesNoMember) {
  JobMembership membership = Coordinator();
  ASSERT_OK_AND_ASSIGN(const JoinJobReply joiner,
                       membership.Join(Joiner("127.0.0.1:3000"), kStart));
  ASSERT_EQ(joiner.task_index(), 2);
  // A spec worker's index, live or not, only at the spec's address.
  for (int index : {0, 1}) {
    EXPECT_THAT(membership.Join(Joiner("127.0.0.1:6666", index), kStart),
                StatusIs(absl::StatusCode::kPermissionDenied,
                         HasSubstr("of the cluster spec listens at 127.0.0.1:222")));
    EXPECT_THAT(membership.Heartbeat(Beat(index, "127.0.0.1:6666", ""), kStart),
                StatusIs(absl::StatusCode::kPermissionDenied, ::testing::_));
  }
  // The live joiner's index: not by a join, nor by a heartbeat without its
  // token (a made-up one, or none), at any address.
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:6666", 2), kStart),
              StatusIs(absl::StatusCode::kAlreadyExists, ::testing::_));
  for (const std::string& token : {std::string(), std::string(16, 'x'), std::string("short")}) {
    for (const char* address : {"127.0.0.1:6666", "127.0.0.1:3000"}) {
      EXPECT_THAT(membership.Heartbeat(Beat(2, address, token), kStart + absl::Seconds(1)),
                  StatusIs(absl::StatusCode::kAlreadyExists, ::testing::_));
    }
  }
  // Nor at its address or a spec worker's, at another index.
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:3000"), kStart),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("worker 2 is a live member at '127.0.0.1:3000' already")));
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:2224"), kStart),
              StatusIs(absl::StatusCode::kPermissionDenied,
                       HasSubstr("is worker 1's address in the cluster spec")));
  // Nor by a heartbeat with the token from elsewhere.
  EXPECT_THAT(membership.Heartbeat(Beat(2, "127.0.0.1:6666", joiner.member_token()), kStart),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not at '127.0.0.1:6666'")));
  std::vector<LiveMember> members = membership.Members();
  ASSERT_EQ(members.size(), 2u);
  EXPECT_EQ(members[1].address(), "127.0.0.1:3000");
  // The stranger's heartbeats kept nothing alive: the joiner is dropped.
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(6)), 1);
}

// Finding: LeaveJob calls for live workers made membership flap.
TEST(JobMembership, OnlyTheMemberLeaves) {
  JobMembership membership = Coordinator();
  ASSERT_OK_AND_ASSIGN(const JoinJobReply spec,
                       membership.Join(Joiner("127.0.0.1:2224", 1), kStart));
  ASSERT_OK_AND_ASSIGN(const JoinJobReply joiner,
                       membership.Join(Joiner("127.0.0.1:3000"), kStart));
  const int64_t generation = membership.generation();
  for (int index : {0, 1, 2, 3}) {
    for (const std::string& token : {std::string(), std::string(16, '\0'), spec.member_token()}) {
      if (index == 1 && token == spec.member_token()) continue;
      const absl::Status left = membership.Leave(Leaving(index, token), kStart);
      EXPECT_FALSE(left.ok()) << index;
      if (index == 1 || index == 2) {
        EXPECT_THAT(left, StatusIs(absl::StatusCode::kPermissionDenied,
                                   HasSubstr("only the member leaves")));
      }
    }
  }
  EXPECT_EQ(membership.generation(), generation);
  EXPECT_THAT(Indices(membership.Members()), ElementsAre(0, 1, 2));
  ASSERT_OK(membership.Leave(Leaving(2, joiner.member_token()), kStart));
  ASSERT_OK(membership.Leave(Leaving(1, spec.member_token()), kStart));
  EXPECT_THAT(Indices(membership.Members()), ElementsAre(0));
}

// Finding: 1,100 joiners that only heartbeat filled the table, and a real
// joiner was refused until they stopped.
TEST(JobMembership, JoinersThatOnlyHeartbeatCannotKeepARealOneOut) {
  JobMembership membership({.cluster = TwoWorkers(),
                            .self = {"worker", 0},
                            .max_members = 1024,
                            .max_pending = 8,
                            .log = QuietLog()});
  absl::Time now = kStart;
  int port = 10000;
  const auto flood = [&] {
    for (int i = 0; i < 1100; ++i) {
      const std::string address = absl::StrFormat("127.0.0.2:%d", port++);
      ASSERT_OK_AND_ASSIGN(const JoinJobReply fake, membership.Join(Joiner(address), now));
      // It keeps beating while it lasts.
      (void)membership.Heartbeat(Beat(fake.task_index(), address, fake.member_token()), now);
    }
  };
  flood();
  EXPECT_EQ(membership.Members().size(), 1u + 8u);  // The chief and the newest pending.
  // A real joiner gets in, contributes, and is never evicted after.
  ASSERT_OK_AND_ASSIGN(const JoinJobReply real, membership.Join(Joiner("127.0.0.1:3000"), now));
  now += absl::Seconds(1);
  EXPECT_TRUE(membership.Contributed(real.task_index(), now - absl::Milliseconds(1), now));
  flood();
  ASSERT_OK(
      membership.Heartbeat(Beat(real.task_index(), "127.0.0.1:3000", real.member_token()), now)
          .status());
  EXPECT_THAT(membership.Counted(now), ElementsAre(0, real.task_index()));
  // The spec's workers are never pending joiners either.
  ASSERT_OK(membership.Join(Joiner("127.0.0.1:2224", 1), now).status());
  flood();
  EXPECT_EQ(membership.Members().size(), 3u + 8u);
}

// Finding: a member that heartbeats but never sends a gradient slowed
// synchronous rounds: it counts only from its first contribution, and
// while it keeps contributing.
TEST(JobMembership, OnlyMembersThatContributeCount) {
  JobMembership membership({.cluster = TwoWorkers(),
                            .self = {"worker", 0},
                            .contribution_window = absl::Seconds(30),
                            .log = QuietLog()});
  ASSERT_OK(membership.Join(Joiner("127.0.0.1:2224", 1), kStart).status());
  ASSERT_OK_AND_ASSIGN(const JoinJobReply joiner,
                       membership.Join(Joiner("127.0.0.1:3000"), kStart + absl::Seconds(2)));
  EXPECT_THAT(membership.Counted(kStart + absl::Seconds(3)), ElementsAre(0));
  // A clock that moved after kStart + 1s may be a previous holder's of
  // index 2: it proves only worker 1.
  const absl::Time now = kStart + absl::Seconds(4);
  EXPECT_TRUE(membership.Contributed(1, kStart + absl::Seconds(1), now));
  EXPECT_FALSE(membership.Contributed(2, kStart + absl::Seconds(1), now));
  EXPECT_FALSE(membership.Contributed(0, kStart + absl::Seconds(1), now));  // Counts already.
  EXPECT_FALSE(membership.Contributed(7, kStart + absl::Seconds(1), now));  // No member.
  EXPECT_THAT(membership.Counted(now), ElementsAre(0, 1));
  EXPECT_FALSE(membership.Contributed(1, now, now + absl::Seconds(1)));  // Counts already.
  EXPECT_TRUE(membership.Contributed(joiner.task_index(), now, now + absl::Seconds(1)));
  EXPECT_THAT(membership.Counted(now + absl::Seconds(1)), ElementsAre(0, 1, 2));
  // Worker 1 stops contributing (it only heartbeats): rounds stop
  // waiting for it after the window; back when it contributes again.
  EXPECT_TRUE(membership.Contributed(2, now, now + absl::Seconds(40)));
  EXPECT_THAT(membership.Counted(now + absl::Seconds(40)), ElementsAre(0, 2));
  EXPECT_TRUE(membership.Contributed(1, now, now + absl::Seconds(41)));
  EXPECT_THAT(membership.Counted(now + absl::Seconds(41)), ElementsAre(0, 1, 2));
}

TEST(JobMembership, PeersBytesAreQuotedAndCutInRepliesAndLogs) {
  testing::CapturedLog log;
  JobMembership membership({.cluster = TwoWorkers(), .self = {"worker", 0}, .log = log.sink()});
  const std::string hostile = "\n\x1b[2J" + std::string(100'000, 'A') + ":1";
  JoinJobRequest request = Joiner(hostile);
  request.set_job("worker");
  const absl::Status refused = membership.Join(request, kStart).status();
  EXPECT_THAT(refused, StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'\\n\\x1b[2JAAAA")));
  EXPECT_THAT(refused.message(), HasSubstr("... (100007 bytes)"));
  EXPECT_LT(refused.message().size(), 400u);
  // Addresses end up in log lines: at most 128 bytes, printable.
  EXPECT_THAT(membership.Join(Joiner(std::string(200, 'a') + ":1"), kStart),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("is not HOST:PORT")));
  request = Joiner("127.0.0.1:3000");
  request.set_job(hostile);
  EXPECT_THAT(membership.Join(request, kStart).status().message().size(), ::testing::Lt(400u));
  // Refusals are logged, escaped, and a flood of them in a few lines.
  for (int i = 0; i < 1000; ++i) (void)membership.Join(Joiner(hostile), kStart);
  const std::vector<std::string> lines = absl::StrSplit(log.Read(), '\n', absl::SkipEmpty());
  EXPECT_LE(lines.size(), 12u);
  for (const std::string& line : lines) {
    EXPECT_EQ(line.find('\n'), std::string::npos);
    EXPECT_EQ(line.find('\x1b'), std::string::npos);
    EXPECT_LT(line.size(), 400u);
  }
}

TEST(JobMembership, SilentMembersAreDroppedAndAHeartbeatBringsThemBack) {
  JobMembership membership = Coordinator();
  ASSERT_OK_AND_ASSIGN(const JoinJobReply spec,
                       membership.Join(Joiner("127.0.0.1:2224", 1), kStart));
  ASSERT_OK_AND_ASSIGN(const JoinJobReply joiner,
                       membership.Join(Joiner("127.0.0.1:3000"), kStart));
  HeartbeatRequest beat = Beat(2, "127.0.0.1:3000", joiner.member_token());
  ASSERT_OK(membership.Heartbeat(beat, kStart + absl::Seconds(4)).status());
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(5)), 0);
  // Worker 1 was last heard at kStart.
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(6)), 1);
  EXPECT_THAT(Indices(membership.Members()), ElementsAre(0, 2));
  // Worker 1, alive after all, beats again: it is back, with a new token.
  ASSERT_OK_AND_ASSIGN(const HeartbeatReply reply,
                       membership.Heartbeat(Beat(1, "127.0.0.1:2224", spec.member_token()),
                                            kStart + absl::Seconds(7)));
  EXPECT_THAT(Indices({reply.members().begin(), reply.members().end()}), ElementsAre(0, 1, 2));
  EXPECT_NE(reply.member_token(), spec.member_token());
  // A joiner's index is free again once it leaves; the lowest free one goes
  // to the next joiner.
  ASSERT_OK(membership.Leave(Leaving(2, joiner.member_token()), kStart + absl::Seconds(8)));
  ASSERT_OK_AND_ASSIGN(const JoinJobReply rejoined,
                       membership.Join(Joiner("127.0.0.1:3005"), kStart + absl::Seconds(9)));
  EXPECT_EQ(rejoined.task_index(), 2);
}

TEST(JobMembership, BadRequestsAreRefusedWithTheirReason) {
  JobMembership membership = Coordinator();
  JoinJobRequest ps = Joiner("127.0.0.1:3000", 1);
  ps.set_job("ps");
  EXPECT_THAT(membership.Join(ps, kStart),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ps tasks are fixed")));
  EXPECT_THAT(membership.Join(Joiner("no-port"), kStart),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no-port")));
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:3000", 1 << 30), kStart),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("outside")));
  // max_members is 4, the chief included: a full table makes room by
  // evicting the oldest joiner that has not contributed ...
  for (int port = 3000; port < 3003; ++port) {
    ASSERT_OK(membership.Join(Joiner("127.0.0.1:" + std::to_string(port)), kStart).status());
  }
  ASSERT_OK(membership.Join(Joiner("127.0.0.1:3010"), kStart + absl::Seconds(1)).status());
  EXPECT_EQ(membership.Members().size(), 4u);
  // ... and refuses once every member counts.
  for (int index : Indices(membership.Members())) {
    (void)membership.Contributed(index, kStart + absl::Seconds(1), kStart + absl::Seconds(2));
  }
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:3011"), kStart + absl::Seconds(2)),
              StatusIs(absl::StatusCode::kResourceExhausted, ::testing::_));
}

TEST(ChannelCache, LearnsJoinedTasksButNeverMovesTheClustersOwn) {
  ChannelCache channels(TwoWorkers());
  EXPECT_THAT(channels.Get("/job:worker/replica:0/task:5"),
              StatusIs(absl::StatusCode::kNotFound, ::testing::_));
  ASSERT_OK(channels.Learn("/job:worker/replica:0/task:5", "127.0.0.1:3000"));
  ASSERT_OK_AND_ASSIGN(RpcClient* const first, channels.Get("/job:worker/replica:0/task:5"));
  EXPECT_EQ(first->address(), "127.0.0.1:3000");
  // It joined again elsewhere: a new client, the old one kept alive.
  ASSERT_OK(channels.Learn("/job:worker/replica:0/task:5", "127.0.0.1:3001"));
  ASSERT_OK_AND_ASSIGN(RpcClient* const second, channels.Get("/job:worker/replica:0/task:5"));
  EXPECT_EQ(second->address(), "127.0.0.1:3001");
  EXPECT_EQ(first->address(), "127.0.0.1:3000");
  ASSERT_OK(channels.Learn("/job:worker/replica:0/task:1", "127.0.0.1:2224"));
  EXPECT_THAT(channels.Learn("/job:worker/replica:0/task:1", "127.0.0.1:6666"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("listens at 127.0.0.1:2224 in this server's cluster")));
  EXPECT_THAT(channels.Learn("/job:worker", "127.0.0.1:6666"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
  EXPECT_THAT(channels.Learn("/job:worker/replica:0/task:9", "127.0.0.1:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, ::testing::_));
}

// A worker outside every cluster spec joins a live job through its chief's
// server and trains with the job's ps, which learns where it listens from
// the graphs it registers.
TEST(JobMember, AJoinedWorkerRunsStepsWithTheJobsPs) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"ps", 1}, {"worker", 1}}, QuietLog()));
  const Server& chief = *servers[1];
  const std::string coordinator = chief.target().substr(std::string("zmq://").size());
  JobMemberOptions member;
  member.coordinator = coordinator;
  ASSERT_OK_AND_ASSIGN(member.address, FreeAddressToward(coordinator));
  EXPECT_THAT(member.address, ::testing::StartsWith("127.0.0.1:"));
  member.log = QuietLog();
  ASSERT_OK_AND_ASSIGN(const JoinedJob join, JoinJob(member, absl::Seconds(20)));
  const ServerConfig& config = join.config;
  EXPECT_EQ(config.task.index, 1);
  EXPECT_THAT(Indices(chief.membership().Members()), ElementsAre(0, 1));

  ServerOptions options;
  options.config = config;
  options.log = QuietLog();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Server> joined, Server::Create(options));
  const Scope root = ops::NewRootScope();
  const Variable v(root.WithDevice("/job:ps/task:0"), "v", Tensor::Scalar<float>(3));
  const Output x = ops::Placeholder(root.WithOpName("x"), DT_FLOAT);
  ops::Mul(root.WithDevice("/job:worker/task:1").WithOpName("y"), v, x);
  GlobalVariablesInitializer(root);
  ASSERT_OK_AND_ASSIGN(const GraphDef graph, root.ToGraphDef());
  SessionOptions session_options;
  session_options.target = joined->target();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(session_options, graph));
  ASSERT_OK(session->Run({}, {}, {"init"}).status());
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> y,
                       session->Run({{"x", Tensor::Scalar<float>(2)}}, {"y"}));
  EXPECT_EQ(y[0].scalar<float>(), 6);

  // Its heartbeats keep it in; it leaves when it goes.
  member.task_index = config.task.index;
  member.member_token = join.member_token;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<JobMember> staying,
                         JobMember::Start(member, absl::Milliseconds(100)));
    absl::SleepFor(absl::Milliseconds(300));
    EXPECT_THAT(Indices(chief.membership().Members()), ElementsAre(0, 1));
  }
  EXPECT_THAT(Indices(chief.membership().Members()), ElementsAre(0));
}

TEST(JobMember, AJoinWithNoCoordinatorEndsAtItsDeadline) {
  JobMemberOptions member;
  member.coordinator = "127.0.0.1:" + std::to_string(testing::FreePort());
  member.address = "127.0.0.1:3000";
  EXPECT_THAT(JoinJob(member, absl::Seconds(1)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("could not join the job at " + member.coordinator)));
}

}  // namespace
}  // namespace rill
