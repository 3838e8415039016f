// A job's membership: the coordinator's table (joins, heartbeats, leaves,
// drops), the channel cache learning where joined workers listen, and a
// worker that joins a live job through real servers and trains with its ps.
#include "runtime/distributed/job_membership.h"

#include <memory>
#include <string>
#include <vector>

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
  LeaveJobRequest leave;
  leave.set_job("worker");
  leave.set_task_index(0);
  leave.set_address("127.0.0.1:2223");
  EXPECT_THAT(membership.Leave(leave, kStart), StatusIs(absl::StatusCode::kNotFound, ::testing::_));
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
  // Joining again from the same address is a heartbeat, not a change.
  ASSERT_OK(membership.Join(Joiner("127.0.0.1:2224", 1), kStart + absl::Seconds(1)).status());
  EXPECT_EQ(membership.generation(), 1);
  // Another process cannot take a live member's index.
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:9999", 1), kStart + absl::Seconds(2)),
              StatusIs(absl::StatusCode::kAlreadyExists,
                       HasSubstr("worker 1 is a live member at 127.0.0.1:2224 (heard 1s ago)")));
}

TEST(JobMembership, SilentMembersAreDroppedAndAHeartbeatBringsThemBack) {
  JobMembership membership = Coordinator();
  ASSERT_OK(membership.Join(Joiner("127.0.0.1:2224", 1), kStart).status());
  ASSERT_OK(membership.Join(Joiner("127.0.0.1:3000"), kStart).status());
  HeartbeatRequest beat;
  beat.set_job("worker");
  beat.set_task_index(2);
  beat.set_address("127.0.0.1:3000");
  ASSERT_OK(membership.Heartbeat(beat, kStart + absl::Seconds(4)).status());
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(5)), 0);
  // Worker 1 was last heard at kStart.
  EXPECT_EQ(membership.Expire(kStart + absl::Seconds(6)), 1);
  EXPECT_THAT(Indices(membership.Members()), ElementsAre(0, 2));
  // Worker 1, alive after all, beats again: it is back.
  beat.set_task_index(1);
  beat.set_address("127.0.0.1:2224");
  ASSERT_OK_AND_ASSIGN(const HeartbeatReply reply,
                       membership.Heartbeat(beat, kStart + absl::Seconds(7)));
  EXPECT_THAT(Indices({reply.members().begin(), reply.members().end()}), ElementsAre(0, 1, 2));
  // A joiner's index is free again once it leaves; the lowest free one goes
  // to the next joiner.
  LeaveJobRequest leave;
  leave.set_job("worker");
  leave.set_task_index(2);
  leave.set_address("127.0.0.1:3000");
  ASSERT_OK(membership.Leave(leave, kStart + absl::Seconds(8)));
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
  // max_members is 4, the chief included.
  for (int port = 3000; port < 3003; ++port) {
    ASSERT_OK(membership.Join(Joiner("127.0.0.1:" + std::to_string(port)), kStart).status());
  }
  EXPECT_THAT(membership.Join(Joiner("127.0.0.1:3010"), kStart),
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
  ASSERT_OK_AND_ASSIGN(ServerConfig config, JoinJob(member, absl::Seconds(20)));
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
