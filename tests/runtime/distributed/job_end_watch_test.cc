#include "runtime/distributed/job_end_watch.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "absl/strings/str_format.h"
#include "tests/test_util.h"
#include "transport/rpc.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

// A stand-in for a worker task: a server that answers the transport's ping.
std::unique_ptr<RpcServer> StartWorker() {
  RpcServerOptions options;
  options.bind_address = "tcp://127.0.0.1:0";
  options.bind_ipc = false;
  absl::StatusOr<std::unique_ptr<RpcServer>> server = RpcServer::Start(options);
  EXPECT_OK(server);
  return server.ok() ? *std::move(server) : nullptr;
}

std::string Address(const RpcServer& server) {
  return absl::StrFormat("127.0.0.1:%d", server.port());
}

JobEndWatchOptions QuickOptions() {
  JobEndWatchOptions options;
  options.grace = absl::Milliseconds(1);
  return options;
}

TEST(JobEndWatch, TheJobEndsOnceTheChiefWasSeenAndNoWorkerAnswers) {
  std::unique_ptr<RpcServer> chief = StartWorker();
  std::unique_ptr<RpcServer> worker = StartWorker();
  ASSERT_NE(chief, nullptr);
  ASSERT_NE(worker, nullptr);
  ASSERT_OK_AND_ASSIGN(const ClusterSpec cluster,
                       ClusterSpec::FromJobs({{"ps", {"127.0.0.1:1"}},
                                              {"worker", {Address(*chief), Address(*worker)}}}));
  ASSERT_OK_AND_ASSIGN(auto watch, JobEndWatch::Create(cluster, QuickOptions()));
  EXPECT_FALSE(watch->Poll());
  // The chief is done; the other worker still evaluates.
  chief.reset();
  EXPECT_FALSE(watch->Poll());
  EXPECT_FALSE(watch->Poll());
  worker.reset();
  bool ended = false;
  for (int i = 0; i < 100 && !ended; ++i) ended = watch->Poll();
  EXPECT_TRUE(ended);
}

TEST(JobEndWatch, AChiefNeverSeenDoesNotEndTheJob) {
  const std::string nobody = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  ASSERT_OK_AND_ASSIGN(const ClusterSpec cluster, ClusterSpec::FromJobs({{"worker", {nobody}}}));
  ASSERT_OK_AND_ASSIGN(auto watch, JobEndWatch::Create(cluster, QuickOptions()));
  EXPECT_FALSE(watch->Poll());
  EXPECT_FALSE(watch->Poll());
}

TEST(JobEndWatch, TfConfigsChiefJobIsTheChief) {
  std::unique_ptr<RpcServer> chief = StartWorker();
  ASSERT_NE(chief, nullptr);
  const std::string nobody = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  ASSERT_OK_AND_ASSIGN(const ClusterSpec cluster,
                       ClusterSpec::FromJobs({{"chief", {Address(*chief)}}, {"worker", {nobody}}}));
  ASSERT_OK_AND_ASSIGN(auto watch, JobEndWatch::Create(cluster, QuickOptions()));
  EXPECT_FALSE(watch->Poll());
  chief.reset();
  bool ended = false;
  for (int i = 0; i < 100 && !ended; ++i) ended = watch->Poll();
  EXPECT_TRUE(ended);
}

TEST(JobEndWatch, AClusterWithoutWorkersIsRefused) {
  ASSERT_OK_AND_ASSIGN(const ClusterSpec cluster,
                       ClusterSpec::FromJobs({{"ps", {"127.0.0.1:2222"}}}));
  EXPECT_THAT(JobEndWatch::Create(cluster, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no chief or worker")));
}

}  // namespace
}  // namespace rill
