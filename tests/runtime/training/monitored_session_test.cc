// Supervised sessions: the chief initializes or restores, a worker waits
// for the chief (on an in-process cluster), hooks run around every step,
// and a step that fails because a task went away runs again in a new
// session.
#include "runtime/training/monitored_session.h"

#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "ops/uninitialized_variables.h"
#include "runtime/distributed/server.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/global_step.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// w (on `device`), a global step, a step op that adds 1 to both, and the
// scaffold of a supervised session over them.
struct Model {
  explicit Model(const std::string& device = "") : root(ops::NewRootScope()) {
    const Scope on = root.WithDevice(device);
    const Variable w(on, "w", 1.f);
    const Variable step = CreateGlobalStep(on);
    const Output add_w = ops::AssignAdd(root.WithOpName("add_w"), w.ref(), 1.f);
    ops::AssignAdd(root.WithOpName("train").WithControlDependencies({add_w.op()}), step.ref(),
                   int64_t{1});
    const Operation init = GlobalVariablesInitializer(root);
    scaffold.init_op = init.name();
    scaffold.ready_op = ReportUninitializedVariables(root, {w, step}).value().name();
    scaffold.global_step = step.ref().name();
    scaffold.saver = Saver::Build(root, {w, step}).value();
    graph = root.ToGraphDef().value();
  }

  std::shared_ptr<SessionManager> Manager(const std::string& target = "") const {
    SessionManagerOptions options;
    options.session_options.target = target;
    options.recovery_wait = absl::Milliseconds(20);
    return std::make_shared<SessionManager>(graph, scaffold, options);
  }

  Scope root;
  Scaffold scaffold;
  GraphDef graph;
};

// A chief's SessionManager over `model` whose log the test reads back.
class LoggingManager {
 public:
  explicit LoggingManager(const Model& model)
      : path_(::rill::testing::MakeTempDir() + "/log"),
        log_(std::fopen(path_.c_str(), "w")),
        sink_(log_),
        manager_(model.graph, model.scaffold, Options(&sink_)) {}
  ~LoggingManager() { std::fclose(log_); }
  SessionManager& manager() { return manager_; }
  std::string Logged() {
    std::fflush(log_);
    return ::rill::testing::ReadFileOrDie(path_);
  }

 private:
  static SessionManagerOptions Options(LogSink* log) {
    SessionManagerOptions options;
    options.log = log;
    return options;
  }
  const std::string path_;
  std::FILE* const log_;
  FileLogSink sink_;
  SessionManager manager_;
};

float Fetch(Session& session, const std::string& name) {
  return session.Run({}, {name}, {}).value().at(0).scalar<float>();
}

TEST(SessionManagerTest, ChiefInitializesThenRestoresTheNewestCheckpoint) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  bool restored = true;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> first,
                       model.Manager()->PrepareSession(dir, &restored));
  EXPECT_FALSE(restored);
  ASSERT_OK(first->Run({}, {}, {"train"}));
  ASSERT_OK(model.scaffold.saver->Save(*first, dir + "/model.ckpt", 1).status());
  ASSERT_OK(first->Run({}, {}, {"train"}));
  EXPECT_EQ(Fetch(*first, "w"), 3.f);

  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> second,
                       model.Manager()->PrepareSession(dir, &restored));
  EXPECT_TRUE(restored);
  EXPECT_EQ(Fetch(*second, "w"), 2.f);
  // The saver keeps counting the checkpoints it found.
  EXPECT_THAT(model.scaffold.saver->last_checkpoints(), ElementsAre(dir + "/model.ckpt-1"));
}

// The chief names the checkpoint it restored, and says nothing when it
// initialized: how a log shows what a restart went back to.
TEST(SessionManagerTest, ChiefLogsTheCheckpointItRestored) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  LoggingManager chief(model);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> first, chief.manager().PrepareSession(dir));
  EXPECT_EQ(chief.Logged(), "");
  ASSERT_OK(first->Run({}, {}, {"train"}));
  ASSERT_OK(model.scaffold.saver->Save(*first, dir + "/model.ckpt", 1).status());
  ASSERT_OK(chief.manager().PrepareSession(dir).status());
  EXPECT_EQ(chief.Logged(), "SessionManager: restored " + dir + "/model.ckpt-1\n");
}

// Flips one bit of the byte at `offset` in `path`.
void FlipBit(const std::string& path, size_t offset) {
  std::string bytes = ::rill::testing::ReadFileOrDie(path);
  ASSERT_GT(bytes.size(), offset);
  bytes[offset] ^= 0x10;
  std::FILE* file = std::fopen(path.c_str(), "wb");
  ASSERT_NE(file, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), file);
  std::fclose(file);
}

// A damaged newest checkpoint (a truncated data file, a bit flipped in an
// index) is passed over for the newest intact one, saying which and why;
// with none intact the chief refuses to start.
TEST(SessionManagerTest, ChiefRestoresTheNewestIntactCheckpoint) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  LoggingManager chief(model);
  SessionManager& manager = chief.manager();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, manager.PrepareSession(dir));
  for (int64_t step = 1; step <= 3; ++step) {
    ASSERT_OK(session->Run({}, {}, {"train"}));  // w = 1 + step
    ASSERT_OK(model.scaffold.saver->Save(*session, dir + "/model.ckpt", step).status());
  }
  const std::string newest = dir + "/model.ckpt-3";
  const std::string middle = dir + "/model.ckpt-2";
  ASSERT_EQ(truncate((newest + ".data-00000-of-00001").c_str(), 3), 0);
  FlipBit(middle + ".index", 8);  // In the first block: its checksum no longer holds.

  bool restored = false;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> again, manager.PrepareSession(dir, &restored));
  EXPECT_TRUE(restored);
  EXPECT_EQ(Fetch(*again, "w"), 2.f);  // model.ckpt-1's.
  const std::string logged = chief.Logged();
  EXPECT_THAT(logged, HasSubstr("checkpoint " + newest + " does not restore: "));
  EXPECT_THAT(logged, HasSubstr("checkpoint " + middle + " does not restore: "));
  EXPECT_THAT(logged, HasSubstr("SessionManager: restored " + dir +
                                "/model.ckpt-1, the newest intact checkpoint; skipped " + newest));

  ASSERT_EQ(truncate((dir + "/model.ckpt-1.index").c_str(), 10), 0);
  EXPECT_THAT(
      manager.PrepareSession(dir),
      StatusIs(absl::StatusCode::kDataLoss,
               AllOf(HasSubstr("no checkpoint listed in " + dir + "/checkpoint restores"),
                     HasSubstr(newest), HasSubstr(middle), HasSubstr(dir + "/model.ckpt-1"))));
}

TEST(SessionManagerTest, ReadinessNamesTheUninitializedVariables) {
  Model model;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), model.graph));
  const std::shared_ptr<SessionManager> manager = model.Manager();
  EXPECT_THAT(manager->ModelNotReady(*session, model.scaffold.ready_op),
              ::rill::testing::IsOkAndHolds(
                  std::optional<std::string>("Variables not initialized: w, global_step")));
  ASSERT_OK(session->Run({}, {}, {model.scaffold.init_op}));
  EXPECT_THAT(manager->ModelNotReady(*session, model.scaffold.ready_op),
              ::rill::testing::IsOkAndHolds(std::optional<std::string>()));
}

TEST(SessionManagerTest, WorkerGivesUpAfterMaxWait) {
  Model model;
  EXPECT_THAT(model.Manager()->WaitForSession(absl::Milliseconds(100)),
              StatusIs(absl::StatusCode::kDeadlineExceeded,
                       HasSubstr("Variables not initialized: w, global_step")));
}

// Variables on the ps of an in-process cluster: a worker waiting on
// worker 1 gets its session once the chief on worker 0 initialized them.
TEST(SessionManagerTest, WorkerWaitsUntilTheChiefInitializes) {
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> cluster,
                       Server::CreateLocalCluster({{"worker", 2}, {"ps", 1}}));
  Model model("/job:ps/task:0");
  absl::StatusOr<std::unique_ptr<Session>> waited;
  std::thread worker(
      [&] { waited = model.Manager(cluster[1]->target())->WaitForSession(absl::Seconds(60)); });
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> chief,
                       model.Manager(cluster[0]->target())->PrepareSession(""));
  worker.join();
  ASSERT_OK(waited);
  EXPECT_EQ(Fetch(**waited, "w"), 1.f);
}

// A session whose first `failures` runs fail with `error`.
class FlakySession final : public Session {
 public:
  FlakySession(std::unique_ptr<Session> real, int* failures, absl::Status error)
      : real_(std::move(real)), failures_(failures), error_(std::move(error)) {}
  absl::Status Extend(const GraphDef& graph) override { return real_->Extend(graph); }
  absl::StatusOr<std::vector<Tensor>> Run(const RunOptions& options,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets,
                                          RunMetadata* metadata) override {
    if (*failures_ > 0 && !targets.empty()) {
      --*failures_;
      return error_;
    }
    return real_->Run(options, feeds, fetches, targets, metadata);
  }
  absl::Status Close() override { return real_->Close(); }

 private:
  std::unique_ptr<Session> real_;
  int* failures_;
  const absl::Status error_;
};

class FlakyCreator final : public SessionCreator {
 public:
  FlakyCreator(std::shared_ptr<SessionManager> manager, std::string dir, int* failures,
               absl::Status error)
      : chief_(std::move(manager), std::move(dir)), failures_(failures), error_(std::move(error)) {}
  absl::StatusOr<std::unique_ptr<Session>> CreateSession() override {
    ASSIGN_OR_RETURN(std::unique_ptr<Session> real, chief_.CreateSession());
    return std::unique_ptr<Session>(new FlakySession(std::move(real), failures_, error_));
  }

 private:
  ChiefSessionCreator chief_;
  int* failures_;
  const absl::Status error_;
};

// Records the calls it gets, asks for w in every step and stops after two.
class RecordingHook final : public SessionRunHook {
 public:
  explicit RecordingHook(std::vector<std::string>* calls) : calls_(calls) {}
  absl::Status Begin() override {
    calls_->push_back("Begin");
    return absl::OkStatus();
  }
  absl::Status AfterCreateSession(Session&) override {
    calls_->push_back("AfterCreateSession");
    return absl::OkStatus();
  }
  std::vector<std::string> BeforeRun(SessionRunContext&) override {
    calls_->push_back("BeforeRun");
    return {"w"};
  }
  absl::Status AfterRun(SessionRunContext& context, const std::vector<Tensor>& values) override {
    calls_->push_back("AfterRun w=" + std::to_string(static_cast<int>(values[0].scalar<float>())));
    if (++runs_ == 2) context.RequestStop();
    return absl::OkStatus();
  }
  absl::Status End(Session&) override {
    calls_->push_back("End");
    return absl::OkStatus();
  }

 private:
  std::vector<std::string>* calls_;
  int runs_ = 0;
};

TEST(MonitoredSessionTest, RunsHooksAroundEveryStepAndStopsWhenAsked) {
  Model model;
  int failures = 0;
  std::vector<std::string> calls;
  std::vector<std::unique_ptr<SessionRunHook>> hooks;
  hooks.push_back(std::make_unique<RecordingHook>(&calls));
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<MonitoredSession> session,
      MonitoredSession::Create(
          std::make_unique<FlakyCreator>(model.Manager(), "", &failures, absl::OkStatus()),
          std::move(hooks)));
  while (!session->ShouldStop()) ASSERT_OK(session->Run({}, {}, {"train"}));
  ASSERT_OK(session->Close());
  // A variable fetched in the step that updates it shows its value before.
  EXPECT_THAT(calls, ElementsAre("Begin", "AfterCreateSession", "BeforeRun", "AfterRun w=1",
                                 "BeforeRun", "AfterRun w=2", "End"));
}

// A step that fails because a task went away runs again in a new session
// from the same creator: the chief's restores the newest checkpoint.
TEST(MonitoredSessionTest, RecoversFromUnavailableByRestoringTheLastCheckpoint) {
  Model model;
  const std::string dir = ::rill::testing::MakeTempDir();
  int failures = 0;
  MonitoredSessionOptions options;
  options.recovery_wait = absl::Milliseconds(1);
  options.log = LogSink::Discard();
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<MonitoredSession> session,
      MonitoredSession::Create(
          std::make_unique<FlakyCreator>(model.Manager(), dir, &failures,
                                         absl::UnavailableError("task /job:ps/task:0 is gone")),
          {}, options));
  ASSERT_OK(session->Run({}, {}, {"train"}));  // w = 2
  ASSERT_OK(model.scaffold.saver->Save(*session->raw_session(), dir + "/model.ckpt", 1).status());
  ASSERT_OK(session->Run({}, {}, {"train"}));  // w = 3, not saved
  failures = 2;
  ASSERT_OK(session->Run({}, {}, {"train"}));  // Fails twice, then w = 2 + 1.
  EXPECT_EQ(session->sessions_created(), 3);
  EXPECT_EQ(Fetch(*session->raw_session(), "w"), 3.f);

  // Other errors end the session's use.
  failures = 1;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<MonitoredSession> strict,
      MonitoredSession::Create(std::make_unique<FlakyCreator>(model.Manager(), dir, &failures,
                                                              absl::InternalError("broken")),
                               {}, options));
  EXPECT_THAT(strict->Run({}, {}, {"train"}),
              StatusIs(absl::StatusCode::kInternal, HasSubstr("broken")));
}

}  // namespace
}  // namespace rill
