// The standard hooks driven as a MonitoredSession drives them, over a real
// local Session: a global step that each "train" step increments, a loss
// and its summary. Time comes from a fake clock, so no test sleeps.
#include "runtime/training/basic_session_run_hooks.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "gmock/gmock.h"
#include "graph/graph_io.h"
#include "graph/proto/event.pb.h"
#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "io/record_reader.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/meta_graph.h"
#include "runtime/training/saver.h"
#include "runtime/training/summary_writer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::MakeTempDir;
using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Optional;

class FakeClock {
 public:
  HookClock AsHookClock() {
    return [this] { return now_; };
  }
  void Advance(absl::Duration d) { now_ += d; }

 private:
  absl::Time now_ = absl::FromUnixSeconds(1'500'000'000);
};

// global_step (int64, 0) which "train" increments, w (float, 0.5), the
// loss w * w and its summary "loss_summary"; "set_step" and "set_w"
// assign the placeholders "new_step" and "new_w".
struct Model {
  Model()
      : scope(ops::NewRootScope()),
        global_step(scope, "global_step", int64_t{0}),
        w(scope, "w", 0.5f) {
    ops::AssignAdd(scope.WithOpName("train"), global_step.ref(), int64_t{1});
    ops::Assign(scope.WithOpName("set_step"), global_step.ref(),
                ops::Placeholder(scope.WithOpName("new_step"), DT_INT64));
    ops::Assign(scope.WithOpName("set_w"), w.ref(),
                ops::Placeholder(scope.WithOpName("new_w"), DT_FLOAT));
    const Output loss = ops::Mul(scope.WithOpName("loss"), w, w);
    ops::ScalarSummary(scope.WithOpName("loss_summary"), "loss", loss);
    GlobalVariablesInitializer(scope);
    saver = Saver::Build(scope, {global_step, w}).value();
    graph = scope.ToGraphDef().value();
  }

  // A session with the variables initialized.
  std::unique_ptr<Session> Start() const {
    std::unique_ptr<Session> session = NewSession(SessionOptions(), graph).value();
    EXPECT_OK(session->Run({}, {}, {"init"}));
    return session;
  }

  Scope scope;
  Variable global_step;
  Variable w;
  std::unique_ptr<Saver> saver;
  GraphDef graph;
};

int64_t GlobalStep(Session& session) {
  return session.Run({}, {"global_step:0"}, {}).value().at(0).scalar<int64_t>();
}

void SetGlobalStep(Session& session, int64_t step) {
  ASSERT_OK(session.Run({{"new_step", Tensor::Scalar<int64_t>(step)}}, {}, {"set_step"}));
}

// One step as a MonitoredSession runs it: every hook's BeforeRun, one Run
// of the caller's targets with every hook's fetches, every hook's AfterRun
// with its own values. Returns whether a hook requested a stop.
absl::StatusOr<bool> RunStep(Session& session, const std::vector<SessionRunHook*>& hooks,
                             const std::vector<std::string>& targets = {"train"}) {
  SessionRunArgs args;
  args.targets = targets;
  SessionRunContext context(args, &session);
  std::vector<std::string> fetches;
  std::vector<std::pair<size_t, size_t>> ranges;  // (first, count) per hook.
  for (SessionRunHook* hook : hooks) {
    std::vector<std::string> extra = hook->BeforeRun(context);
    ranges.emplace_back(fetches.size(), extra.size());
    fetches.insert(fetches.end(), extra.begin(), extra.end());
  }
  ASSIGN_OR_RETURN(const std::vector<Tensor> values, session.Run({}, fetches, targets));
  for (size_t i = 0; i < hooks.size(); ++i) {
    const auto first = values.begin() + static_cast<ptrdiff_t>(ranges[i].first);
    RETURN_IF_ERROR(hooks[i]->AfterRun(
        context, std::vector<Tensor>(first, first + static_cast<ptrdiff_t>(ranges[i].second))));
  }
  return context.stop_requested();
}

absl::Status BeginAndCreate(Session& session, const std::vector<SessionRunHook*>& hooks) {
  for (SessionRunHook* hook : hooks) RETURN_IF_ERROR(hook->Begin());
  for (SessionRunHook* hook : hooks) RETURN_IF_ERROR(hook->AfterCreateSession(session));
  return absl::OkStatus();
}

// An event file that only Flush writes, so a test sees exactly what the
// hooks flushed.
std::unique_ptr<SummaryWriter> NewWriter(const std::string& logdir) {
  SummaryWriterOptions options;
  options.max_queue = 1000;
  options.flush_interval = absl::Hours(1);
  return SummaryWriter::Create(logdir, options).value();
}

// The events of the file after its file_version record.
std::vector<Event> ReadEvents(SummaryWriter& writer) {
  EXPECT_OK(writer.Flush());
  absl::StatusOr<std::vector<std::string>> records = ReadAllRecords(writer.path());
  EXPECT_OK(records);
  std::vector<Event> events;
  if (!records.ok()) return events;
  for (size_t i = 1; i < records->size(); ++i) {
    events.emplace_back();
    EXPECT_TRUE(events.back().ParseFromString((*records)[i]));
  }
  return events;
}

std::string Describe(const Event& event) {
  std::string s = "step " + std::to_string(event.step()) + " ";
  if (event.has_session_log()) {
    s += SessionLog::SessionStatus_Name(event.session_log().status());
    if (!event.session_log().checkpoint_path().empty()) {
      s += " " + event.session_log().checkpoint_path();
    }
  } else if (event.has_summary()) {
    for (const Summary::Value& value : event.summary().value()) {
      s += value.tag() + "=" + std::to_string(value.simple_value());
    }
  } else if (!event.graph_def().empty()) {
    s += "graph_def";
  } else if (!event.meta_graph_def().empty()) {
    s += "meta_graph_def";
  }
  return s;
}

std::vector<std::string> DescribeAll(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const Event& event : events) out.push_back(Describe(event));
  return out;
}

// A temporary file for what a hook prints; closed with the test.
class LogFile {
 public:
  LogFile() : file_(std::tmpfile()), sink_(file_) {}
  ~LogFile() { std::fclose(file_); }
  LogSink* get() { return &sink_; }
  std::string Contents() const {
    std::fflush(file_);
    std::rewind(file_);
    std::string s;
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file_)) > 0) s.append(buffer, n);
    return s;
  }

 private:
  std::FILE* const file_;
  FileLogSink sink_;
};

TEST(SecondOrStepTimer, FiresFirstThenEveryNStepsAndReportsWhatPassed) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(SecondOrStepTimer timer,
                       SecondOrStepTimer::Create(std::nullopt, 3, clock.AsHookClock()));
  EXPECT_TRUE(timer.ShouldTriggerForStep(5));
  EXPECT_EQ(timer.last_triggered_step(), std::nullopt);
  EXPECT_EQ(timer.UpdateLastTriggeredStep(5), std::nullopt);
  EXPECT_THAT(timer.last_triggered_step(), Optional(5));
  EXPECT_FALSE(timer.ShouldTriggerForStep(6));
  EXPECT_FALSE(timer.ShouldTriggerForStep(7));
  clock.Advance(absl::Hours(1));  // Time does not matter with every_steps.
  EXPECT_FALSE(timer.ShouldTriggerForStep(7));
  EXPECT_TRUE(timer.ShouldTriggerForStep(8));
  EXPECT_TRUE(timer.ShouldTriggerForStep(20));
  const std::optional<SecondOrStepTimer::Elapsed> elapsed = timer.UpdateLastTriggeredStep(9);
  ASSERT_TRUE(elapsed.has_value());
  EXPECT_EQ(elapsed->steps, 4);
  EXPECT_EQ(elapsed->time, absl::Hours(1));
}

TEST(SecondOrStepTimer, FiresWhenTheSecondsHavePassedButNeverTwiceForAStep) {
  FakeClock clock;
  ASSERT_OK_AND_ASSIGN(SecondOrStepTimer timer,
                       SecondOrStepTimer::Create(10.0, std::nullopt, clock.AsHookClock()));
  EXPECT_TRUE(timer.ShouldTriggerForStep(0));
  timer.UpdateLastTriggeredStep(0);
  clock.Advance(absl::Seconds(9));
  EXPECT_FALSE(timer.ShouldTriggerForStep(1000));  // Steps do not matter with every_secs.
  clock.Advance(absl::Seconds(1));
  EXPECT_TRUE(timer.ShouldTriggerForStep(1));
  EXPECT_FALSE(timer.ShouldTriggerForStep(0));  // The step it last fired for.
  const std::optional<SecondOrStepTimer::Elapsed> elapsed = timer.UpdateLastTriggeredStep(4);
  ASSERT_TRUE(elapsed.has_value());
  EXPECT_EQ(elapsed->steps, 4);
  EXPECT_EQ(elapsed->time, absl::Seconds(10));
  clock.Advance(absl::Seconds(30));
  EXPECT_FALSE(timer.ShouldTriggerForStep(4));
  EXPECT_TRUE(timer.ShouldTriggerForStep(5));

  timer.Reset();
  EXPECT_EQ(timer.last_triggered_step(), std::nullopt);
  EXPECT_TRUE(timer.ShouldTriggerForStep(4));
}

TEST(SecondOrStepTimer, RejectsNeitherBothAndNonPositiveIntervals) {
  EXPECT_THAT(
      SecondOrStepTimer::Create(std::nullopt, std::nullopt),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("give every_secs or every_steps")));
  EXPECT_THAT(SecondOrStepTimer::Create(1.0, 1),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not both")));
  EXPECT_THAT(SecondOrStepTimer::Create(std::nullopt, 0),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("every_steps must be positive, got 0")));
  EXPECT_THAT(SecondOrStepTimer::Create(-1.0, std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("every_secs must be")));
  EXPECT_THAT(SecondOrStepTimer::Create(std::nan(""), std::nullopt),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("every_secs must be")));
  EXPECT_THAT(SecondOrStepTimer::CreateFor({"SomeHook", "save_secs", "save_steps"}, 2.0, 3),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("SomeHook: give save_secs or save_steps, not both")));
}

TEST(StopAtStepHook, StopsWhenTheGlobalStepReachesLastStep) {
  Model model;
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StopAtStepHook> hook,
                       StopAtStepHook::Create({.last_step = 2}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  EXPECT_THAT(hook->last_step(), Optional(2));
  EXPECT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));  // Step 0 -> 1.
  // A step that does not advance the global step: fetched 1 + 1 reaches
  // last_step, but the real step (1) does not.
  EXPECT_THAT(RunStep(*session, {hook.get()}, {"loss"}), IsOkAndHolds(false));
  EXPECT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(true));  // 1 -> 2.
  EXPECT_EQ(GlobalStep(*session), 2);
}

TEST(StopAtStepHook, NumStepsCountsFromTheStepOfTheFirstSession) {
  Model model;
  std::unique_ptr<Session> session = model.Start();
  SetGlobalStep(*session, 10);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StopAtStepHook> hook,
                       StopAtStepHook::Create({.num_steps = 3}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  EXPECT_THAT(hook->last_step(), Optional(13));
  int steps = 0;
  for (bool stop = false; !stop; ++steps) {
    ASSERT_OK_AND_ASSIGN(stop, RunStep(*session, {hook.get()}));
    ASSERT_LE(steps, 5);
  }
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(GlobalStep(*session), 13);

  // A recreated session (a recovery) keeps the goal.
  std::unique_ptr<Session> recovered = model.Start();
  SetGlobalStep(*recovered, 11);
  ASSERT_OK(hook->AfterCreateSession(*recovered));
  EXPECT_THAT(hook->last_step(), Optional(13));
  EXPECT_THAT(RunStep(*recovered, {hook.get()}), IsOkAndHolds(false));
  EXPECT_THAT(RunStep(*recovered, {hook.get()}), IsOkAndHolds(true));
}

TEST(StopAtStepHook, RejectsNeitherOrBothOfNumStepsAndLastStep) {
  EXPECT_THAT(StopAtStepHook::Create({}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("StopAtStepHook: give num_steps or last_step")));
  EXPECT_THAT(StopAtStepHook::Create({.num_steps = 1, .last_step = 2}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("StopAtStepHook: give num_steps or last_step, not both")));
  EXPECT_THAT(StopAtStepHook::Create({.num_steps = -1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("num_steps")));
}

TEST(BasicSessionRunHooks, EveryGlobalStepHookNeedsAGlobalStep) {
  Scope scope = ops::NewRootScope();
  Variable w(scope, "w", 0.5f);
  GlobalVariablesInitializer(scope);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Saver> saver, Saver::Build(scope, {w}));
  ASSERT_OK_AND_ASSIGN(GraphDef graph, scope.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), graph));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());

  std::vector<std::pair<std::string, std::unique_ptr<SessionRunHook>>> hooks;
  hooks.emplace_back("StopAtStepHook", StopAtStepHook::Create({.num_steps = 1}).value());
  hooks.emplace_back("CheckpointSaverHook",
                     CheckpointSaverHook::Create(
                         {.checkpoint_dir = MakeTempDir(), .save_steps = 1, .saver = saver.get()})
                         .value());
  hooks.emplace_back(
      "SummarySaverHook",
      SummarySaverHook::Create({.save_steps = 1, .summary_writer = writer.get(), .summary_op = "w"})
          .value());
  hooks.emplace_back("StepCounterHook",
                     StepCounterHook::Create({.log = LogSink::Discard()}).value());
  for (auto& [name, hook] : hooks) {
    EXPECT_OK(hook->Begin()) << name;
    EXPECT_THAT(hook->AfterCreateSession(*session),
                StatusIs(absl::StatusCode::kFailedPrecondition,
                         HasSubstr("Global step should be created to use " + name + ".")))
        << name;
  }
}

TEST(BasicSessionRunHooks, GlobalStepMustBeAnIntegerScalar) {
  EXPECT_THAT(GlobalStepValue(Tensor::Scalar<int32_t>(7), "s:0"), IsOkAndHolds(7));
  EXPECT_THAT(GlobalStepValue(Tensor::Scalar<int64_t>(int64_t{1} << 40), "s:0"),
              IsOkAndHolds(int64_t{1} << 40));
  EXPECT_THAT(GlobalStepValue(Tensor::Scalar<float>(1.f), "s:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("global step s:0 must be an int32 or int64 scalar")));
  EXPECT_THAT(GlobalStepValue(Tensor::FromVector<int64_t>({1, 2}, TensorShape({2})), "s:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("s:0")));
}

TEST(CheckpointSaverHook, SavesAtCreationEveryNStepsAndAtEnd) {
  Model model;
  const std::string dir = MakeTempDir() + "/train";
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointSaverHook> hook,
                       CheckpointSaverHook::Create({.checkpoint_dir = dir,
                                                    .save_steps = 2,
                                                    .saver = model.saver.get(),
                                                    .graph = model.graph}));
  EXPECT_EQ(hook->save_path(), dir + "/model.ckpt");
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-0");
  // graph.pbtxt is the text GraphDef of the session's graph.
  EXPECT_THAT(::rill::testing::ReadFileOrDie(dir + "/graph.pbtxt"),
              HasSubstr("name: \"global_step\""));
  ASSERT_OK_AND_ASSIGN(GraphDef written, ReadGraphDef(dir + "/graph.pbtxt"));
  EXPECT_EQ(written.node_size(), model.graph.node_size());
  // Each checkpoint has its .meta, with the saver.
  ASSERT_OK_AND_ASSIGN(MetaGraphDef meta, ReadMetaGraph(dir + "/model.ckpt-0.meta"));
  EXPECT_EQ(meta.saver_def().save_tensor_name(), model.saver->saver_def().save_tensor_name());

  for (int i = 0; i < 5; ++i) ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-4");
  ASSERT_OK(hook->End(*session));
  ASSERT_OK_AND_ASSIGN(std::optional<CheckpointState> state, GetCheckpointState(dir));
  ASSERT_TRUE(state.has_value());
  EXPECT_EQ(state->model_checkpoint_path(), dir + "/model.ckpt-5");
  EXPECT_THAT(state->all_model_checkpoint_paths(),
              ElementsAre(dir + "/model.ckpt-0", dir + "/model.ckpt-2", dir + "/model.ckpt-4",
                          dir + "/model.ckpt-5"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/model.ckpt-5.meta"));

  // The last checkpoint holds the state after the fifth step.
  std::unique_ptr<Session> restored = model.Start();
  ASSERT_OK(model.saver->Restore(*restored, *LatestCheckpoint(dir)));
  EXPECT_EQ(GlobalStep(*restored), 5);
}

TEST(CheckpointSaverHook, EndDoesNotSaveAStepThatWasSaved) {
  Model model;
  const std::string dir = MakeTempDir();
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointSaverHook> hook,
                       CheckpointSaverHook::Create({.checkpoint_dir = dir,
                                                    .save_steps = 2,
                                                    .saver = model.saver.get(),
                                                    .summary_writer = writer.get()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 2; ++i) ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  ASSERT_OK(hook->End(*session));
  EXPECT_THAT(model.saver->last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-0", dir + "/model.ckpt-2"));
  // Without a graph: no graph.pbtxt, .meta or graph events; one CHECKPOINT
  // event per save, naming the save path.
  EXPECT_FALSE(std::filesystem::exists(dir + "/graph.pbtxt"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/model.ckpt-0.meta"));
  EXPECT_THAT(DescribeAll(ReadEvents(*writer)),
              ElementsAre("step 0 CHECKPOINT " + dir + "/model.ckpt",
                          "step 2 CHECKPOINT " + dir + "/model.ckpt"));
}

// Each save is acknowledged on the log once the checkpoint state names it.
TEST(CheckpointSaverHook, AcknowledgesEverySaveOnItsLog) {
  Model model;
  const std::string dir = MakeTempDir();
  LogFile log;
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CheckpointSaverHook> hook,
      CheckpointSaverHook::Create(
          {.checkpoint_dir = dir, .save_steps = 2, .saver = model.saver.get(), .log = log.get()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 3; ++i) ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  ASSERT_OK(hook->End(*session));
  const std::string saved = "CheckpointSaverHook: saved " + dir + "/model.ckpt-";
  EXPECT_EQ(log.Contents(), saved + "0\n" + saved + "2\n" + saved + "3\n");
}

ino_t Inode(const std::string& path) {
  struct stat st;
  EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
  return st.st_ino;
}

// A chief whose session was restored from the newest checkpoint does not
// write that checkpoint again: its files stay the ones acknowledged (a
// rewrite replaces them one by one, and a crash in between would leave the
// index and the data of two saves). The timer counts from the restored step.
TEST(CheckpointSaverHook, DoesNotRewriteTheCheckpointItsSessionWasRestoredFrom) {
  Model model;
  const std::string dir = MakeTempDir();
  std::unique_ptr<Session> first = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointSaverHook> hook,
                       CheckpointSaverHook::Create({.checkpoint_dir = dir,
                                                    .save_steps = 2,
                                                    .saver = model.saver.get(),
                                                    .log = LogSink::Discard()}));
  ASSERT_OK(BeginAndCreate(*first, {hook.get()}));
  for (int i = 0; i < 2; ++i) ASSERT_THAT(RunStep(*first, {hook.get()}), IsOkAndHolds(false));
  ASSERT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-2");
  const std::string index = dir + "/model.ckpt-2.index";
  const std::string data = dir + "/model.ckpt-2.data-00000-of-00001";
  const ino_t index_inode = Inode(index);
  const ino_t data_inode = Inode(data);

  // A restarted chief: a new session restored from the newest checkpoint.
  std::unique_ptr<Session> second = model.Start();
  ASSERT_OK(model.saver->Restore(*second, dir + "/model.ckpt-2"));
  LogFile log;
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<CheckpointSaverHook> restarted,
      CheckpointSaverHook::Create(
          {.checkpoint_dir = dir, .save_steps = 2, .saver = model.saver.get(), .log = log.get()}));
  ASSERT_OK(BeginAndCreate(*second, {restarted.get()}));
  EXPECT_EQ(log.Contents(), "");
  EXPECT_EQ(Inode(index), index_inode);
  EXPECT_EQ(Inode(data), data_inode);
  EXPECT_EQ(LatestCheckpoint(dir), dir + "/model.ckpt-2");
  for (int i = 0; i < 2; ++i) {
    ASSERT_THAT(RunStep(*second, {restarted.get()}), IsOkAndHolds(false));
  }
  EXPECT_EQ(log.Contents(), "CheckpointSaverHook: saved " + dir + "/model.ckpt-4\n");
}

TEST(CheckpointSaverHook, SavesEverySecondsByItsClock) {
  Model model;
  FakeClock clock;
  const std::string dir = MakeTempDir();
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointSaverHook> hook,
                       CheckpointSaverHook::Create({.checkpoint_dir = dir,
                                                    .save_secs = 600,
                                                    .saver = model.saver.get(),
                                                    .clock = clock.AsHookClock()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 3; ++i) {
    clock.Advance(absl::Seconds(100));
    ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  }
  EXPECT_THAT(model.saver->last_checkpoints(), ElementsAre(dir + "/model.ckpt-0"));
  clock.Advance(absl::Seconds(300));
  ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));  // 3 -> 4, at 600 s.
  ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  EXPECT_THAT(model.saver->last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-0", dir + "/model.ckpt-4"));
}

TEST(CheckpointSaverHook, WritesTheGraphEventsOnceAndACheckpointEventPerSave) {
  Model model;
  const std::string dir = MakeTempDir();
  std::unique_ptr<SummaryWriter> writer = NewWriter(dir);
  MetaGraphDef meta = MakeMetaGraph(model.graph, &model.saver->saver_def());
  meta.mutable_meta_info_def()->add_tags("custom");
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<CheckpointSaverHook> hook,
                       CheckpointSaverHook::Create({.checkpoint_dir = dir,
                                                    .save_steps = 100,
                                                    .saver = model.saver.get(),
                                                    .checkpoint_basename = "m",
                                                    .meta_graph = meta,
                                                    .summary_writer = writer.get()}));
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  // A second session (a recovery) saves again but adds no graph events.
  std::unique_ptr<Session> recovered = model.Start();
  SetGlobalStep(*recovered, 1);
  ASSERT_OK(hook->AfterCreateSession(*recovered));
  ASSERT_OK(hook->End(*recovered));

  const std::vector<Event> events = ReadEvents(*writer);
  EXPECT_THAT(DescribeAll(events),
              ElementsAre("step 0 graph_def", "step 0 meta_graph_def",
                          "step 0 CHECKPOINT " + dir + "/m", "step 1 CHECKPOINT " + dir + "/m"));
  GraphDef graph;
  ASSERT_TRUE(graph.ParseFromString(events[0].graph_def()));
  EXPECT_EQ(graph.node_size(), model.graph.node_size());
  // The given meta graph is the one written, as an event and as .meta;
  // its graph is graph.pbtxt.
  MetaGraphDef event_meta;
  ASSERT_TRUE(event_meta.ParseFromString(events[1].meta_graph_def()));
  EXPECT_THAT(event_meta.meta_info_def().tags(), ::testing::Contains("custom"));
  ASSERT_OK_AND_ASSIGN(MetaGraphDef file_meta, ReadMetaGraph(dir + "/m-1.meta"));
  EXPECT_THAT(file_meta.meta_info_def().tags(), ::testing::Contains("custom"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/graph.pbtxt"));
}

TEST(CheckpointSaverHook, RejectsBadOptions) {
  Model model;
  EXPECT_THAT(CheckpointSaverHook::Create({.save_steps = 1, .saver = model.saver.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("checkpoint_dir")));
  EXPECT_THAT(CheckpointSaverHook::Create({.checkpoint_dir = "/tmp/x", .save_steps = 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no saver")));
  EXPECT_THAT(CheckpointSaverHook::Create({.checkpoint_dir = "/tmp/x",
                                           .save_secs = 1,
                                           .save_steps = 1,
                                           .saver = model.saver.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("CheckpointSaverHook: give save_secs or save_steps, not both")));
  EXPECT_THAT(CheckpointSaverHook::Create({.checkpoint_dir = "/tmp/x", .saver = model.saver.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("CheckpointSaverHook: give save_secs or save_steps")));
  EXPECT_THAT(CheckpointSaverHook::Create(
                  {.checkpoint_dir = "/tmp/x", .save_steps = 0, .saver = model.saver.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("save_steps must be")));
}

TEST(SummarySaverHook, WritesStartThenSummariesEveryNSteps) {
  Model model;
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());
  std::unique_ptr<Session> session = model.Start();
  SetGlobalStep(*session, 10);
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<SummarySaverHook> hook,
      SummarySaverHook::Create(
          {.save_steps = 2, .summary_writer = writer.get(), .summary_op = "loss_summary:0"}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  // Which steps fetch the summary op.
  std::vector<size_t> fetched;
  for (int i = 0; i < 6; ++i) {
    SessionRunArgs args;
    SessionRunContext context(args, session.get());
    const std::vector<std::string> fetches = hook->BeforeRun(context);
    fetched.push_back(fetches.size());
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, session->Run({}, fetches, {"train"}));
    ASSERT_OK(hook->AfterRun(context, values));
  }
  EXPECT_THAT(fetched, ElementsAre(2, 1, 2, 1, 2, 1));
  ASSERT_OK(hook->End(*session));
  const std::vector<Event> events = ReadEvents(*writer);
  EXPECT_THAT(DescribeAll(events), ElementsAre("step 11 START", "step 11 loss=0.250000",
                                               "step 13 loss=0.250000", "step 15 loss=0.250000"));
}

TEST(SummarySaverHook, WritesEverySecondsAndIsFlushedByEnd) {
  Model model;
  FakeClock clock;
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummarySaverHook> hook,
                       SummarySaverHook::Create({.save_secs = 120,
                                                 .summary_writer = writer.get(),
                                                 .summary_op = "loss_summary",
                                                 .clock = clock.AsHookClock()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
    clock.Advance(absl::Seconds(60));
  }
  ASSERT_OK(hook->End(*session));
  // Read without Flush: End flushed.
  ASSERT_OK_AND_ASSIGN(std::vector<std::string> records, ReadAllRecords(writer->path()));
  std::vector<std::string> described;
  for (size_t i = 1; i < records.size(); ++i) {
    Event event;
    ASSERT_TRUE(event.ParseFromString(records[i]));
    described.push_back(Describe(event));
  }
  // Written at 0 s (step 1), 120 s (step 3), 240 s (step 5).
  EXPECT_THAT(described, ElementsAre("step 1 START", "step 1 loss=0.250000", "step 3 loss=0.250000",
                                     "step 5 loss=0.250000"));
}

TEST(SummarySaverHook, RejectsBadOptions) {
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());
  EXPECT_THAT(SummarySaverHook::Create({.save_steps = 1, .summary_op = "s"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no summary_writer")));
  EXPECT_THAT(SummarySaverHook::Create({.save_steps = 1, .summary_writer = writer.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no summary_op")));
  EXPECT_THAT(
      SummarySaverHook::Create(
          {.save_steps = 1, .save_secs = 1, .summary_writer = writer.get(), .summary_op = "s"}),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("SummarySaverHook: give save_secs or save_steps, not both")));
}

TEST(SummarySaverHook, RejectsASummaryOpThatIsNotAString) {
  Model model;
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<SummarySaverHook> hook,
      SummarySaverHook::Create(
          {.save_steps = 1, .summary_writer = writer.get(), .summary_op = "loss:0"}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  EXPECT_THAT(RunStep(*session, {hook.get()}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("summary_op loss:0 must be a string tensor")));
}

TEST(StepCounterHook, WritesAndLogsGlobalStepsPerSecond) {
  Model model;
  FakeClock clock;
  LogFile log;
  std::unique_ptr<SummaryWriter> writer = NewWriter(MakeTempDir());
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StepCounterHook> hook,
                       StepCounterHook::Create({.every_n_steps = 2,
                                                .summary_writer = writer.get(),
                                                .log = log.get(),
                                                .clock = clock.AsHookClock()}));
  EXPECT_EQ(hook->summary_tag(), "global_step/sec");
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  // The first trigger (step 1) starts the count; step 3 reports 2 steps in
  // 0.5 s, step 5 2 steps in 4 s.
  for (absl::Duration d : {absl::Seconds(1), absl::Milliseconds(250), absl::Milliseconds(250),
                           absl::Seconds(2), absl::Seconds(2)}) {
    clock.Advance(d);
    ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  }
  EXPECT_THAT(DescribeAll(ReadEvents(*writer)),
              ElementsAre("step 3 global_step/sec=4.000000", "step 5 global_step/sec=0.500000"));
  EXPECT_EQ(log.Contents(), "global_step/sec: 4\nglobal_step/sec: 0.5\n");
}

TEST(StepCounterHook, CountsEverySecondsWithoutAWriter) {
  Model model;
  FakeClock clock;
  LogFile log;
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StepCounterHook> hook,
                       StepCounterHook::Create(
                           {.every_n_secs = 10, .log = log.get(), .clock = clock.AsHookClock()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
    clock.Advance(absl::Seconds(5));
  }
  // Triggers at 0 s (step 1), 10 s (step 3), 20 s (step 5).
  EXPECT_EQ(log.Contents(), "global_step/sec: 0.2\nglobal_step/sec: 0.2\n");
}

TEST(StepCounterHook, WarnsAFewTimesWhenTheGlobalStepDoesNotAdvance) {
  Model model;
  LogFile log;
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StepCounterHook> hook,
                       StepCounterHook::Create({.log = log.get()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 8; ++i) {
    ASSERT_THAT(RunStep(*session, {hook.get()}, {"loss"}), IsOkAndHolds(false));
  }
  const std::string text = log.Contents();
  EXPECT_THAT(text, HasSubstr("the global step global_step:0 has not increased (still 0)"));
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 5);
}

TEST(StepCounterHook, TagsTheRateWithTheGlobalStepOpName) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<StepCounterHook> hook,
                       StepCounterHook::Create({.global_step_tensor = "train/counter:0"}));
  EXPECT_EQ(hook->summary_tag(), "train/counter/sec");
  EXPECT_THAT(StepCounterHook::Create({.every_n_steps = 10, .every_n_secs = 10}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("StepCounterHook: give every_n_secs or every_n_steps, not both")));
  EXPECT_THAT(StepCounterHook::Create({.global_step_tensor = "^step"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("global_step_tensor")));
}

TEST(LoggingTensorHook, LogsTheTensorsEveryNIterations) {
  Model model;
  FakeClock clock;
  LogFile log;
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<LoggingTensorHook> hook,
                       LoggingTensorHook::Create({.tensors = {"loss:0", "global_step"},
                                                  .every_n_iter = 2,
                                                  .log = log.get(),
                                                  .clock = clock.AsHookClock()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 5; ++i) {
    ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
    clock.Advance(absl::Milliseconds(1500));
  }
  ASSERT_OK(hook->End(*session));  // Not at_end: nothing more.
  EXPECT_EQ(log.Contents(),
            "loss:0 = 0.25, global_step = 0\n"
            "loss:0 = 0.25, global_step = 2 (3.000 sec)\n"
            "loss:0 = 0.25, global_step = 4 (3.000 sec)\n");
}

TEST(LoggingTensorHook, LogsOnlyAtTheEnd) {
  Model model;
  LogFile log;
  std::unique_ptr<Session> session = model.Start();
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<LoggingTensorHook> hook,
      LoggingTensorHook::Create({.tensors = {"global_step:0"}, .at_end = true, .log = log.get()}));
  ASSERT_OK(BeginAndCreate(*session, {hook.get()}));
  for (int i = 0; i < 3; ++i) ASSERT_THAT(RunStep(*session, {hook.get()}), IsOkAndHolds(false));
  EXPECT_EQ(log.Contents(), "");
  ASSERT_OK(hook->End(*session));
  EXPECT_EQ(log.Contents(), "global_step:0 = 3\n");
}

TEST(LoggingTensorHook, RejectsBadOptions) {
  EXPECT_THAT(LoggingTensorHook::Create({.every_n_iter = 1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("no tensors")));
  EXPECT_THAT(LoggingTensorHook::Create({.tensors = {"a"}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("LoggingTensorHook: give every_n_secs or every_n_iter")));
  EXPECT_THAT(LoggingTensorHook::Create({.tensors = {"a"}, .every_n_iter = 0}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("every_n_iter must be")));
}

TEST(LoggingTensorHook, FormatsScalarsBareAndOtherTensorsInBrackets) {
  EXPECT_EQ(FormatTensorValue(Tensor::Scalar<float>(0.5f)), "0.5");
  EXPECT_EQ(FormatTensorValue(Tensor::Scalar<int64_t>(7)), "7");
  EXPECT_EQ(FormatTensorValue(Tensor::FromVector<int32_t>({1, 2, 3}, TensorShape({3}))), "[1 2 3]");
  EXPECT_EQ(FormatTensorValue(Tensor::FromVector<int32_t>({1, 2, 3}, TensorShape({3})), 2),
            "[1 2...]");
}

TEST(NanTensorHook, FailsOnANanLoss) {
  Model model;
  std::unique_ptr<Session> session = model.Start();
  NanTensorHook hook("loss:0");
  EXPECT_THAT(RunStep(*session, {&hook}), IsOkAndHolds(false));
  ASSERT_OK(session->Run({{"new_w", Tensor::Scalar<float>(std::nanf(""))}}, {}, {"set_w"}));
  EXPECT_THAT(RunStep(*session, {&hook}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("NaN loss during training.")));
}

TEST(NanTensorHook, RequestsAStopWhenNotFailing) {
  Model model;
  LogFile log;
  std::unique_ptr<Session> session = model.Start();
  NanTensorHook hook("loss:0", /*fail_on_nan_loss=*/false, log.get());
  ASSERT_OK(session->Run({{"new_w", Tensor::Scalar<float>(std::nanf(""))}}, {}, {"set_w"}));
  EXPECT_THAT(RunStep(*session, {&hook}), IsOkAndHolds(true));
  EXPECT_THAT(log.Contents(), HasSubstr("NaN"));
  NanTensorHook not_float("global_step:0");
  EXPECT_THAT(RunStep(*session, {&not_float}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be float or double")));
}

TEST(BasicSessionRunHooks, RunTogetherInOneLoop) {
  Model model;
  FakeClock clock;
  const std::string dir = MakeTempDir();
  std::unique_ptr<SummaryWriter> writer = NewWriter(dir);
  std::unique_ptr<Session> session = model.Start();
  std::vector<std::unique_ptr<SessionRunHook>> owned;
  owned.push_back(StopAtStepHook::Create({.last_step = 7}).value());
  owned.push_back(CheckpointSaverHook::Create({.checkpoint_dir = dir,
                                               .save_steps = 3,
                                               .saver = model.saver.get(),
                                               .graph = model.graph,
                                               .summary_writer = writer.get()})
                      .value());
  owned.push_back(
      SummarySaverHook::Create(
          {.save_steps = 3, .summary_writer = writer.get(), .summary_op = "loss_summary"})
          .value());
  owned.push_back(StepCounterHook::Create({.every_n_steps = 3,
                                           .summary_writer = writer.get(),
                                           .log = LogSink::Discard(),
                                           .clock = clock.AsHookClock()})
                      .value());
  owned.push_back(std::make_unique<NanTensorHook>("loss"));
  std::vector<SessionRunHook*> hooks;
  for (const auto& hook : owned) hooks.push_back(hook.get());
  ASSERT_OK(BeginAndCreate(*session, hooks));
  int steps = 0;
  for (bool stop = false; !stop; ++steps) {
    clock.Advance(absl::Seconds(1));
    ASSERT_OK_AND_ASSIGN(stop, RunStep(*session, hooks));
    ASSERT_LT(steps, 20);
  }
  for (SessionRunHook* hook : hooks) ASSERT_OK(hook->End(*session));
  EXPECT_EQ(steps, 7);
  EXPECT_THAT(model.saver->last_checkpoints(),
              ElementsAre(dir + "/model.ckpt-0", dir + "/model.ckpt-3", dir + "/model.ckpt-6",
                          dir + "/model.ckpt-7"));
  // In hook order within a step; End saves step 7.
  const std::string ckpt = "CHECKPOINT " + dir + "/model.ckpt";
  EXPECT_THAT(
      DescribeAll(ReadEvents(*writer)),
      ElementsAre("step 0 graph_def", "step 0 meta_graph_def", "step 0 " + ckpt, "step 1 START",
                  "step 1 loss=0.250000", "step 3 " + ckpt, "step 4 loss=0.250000",
                  "step 4 global_step/sec=1.000000", "step 6 " + ckpt, "step 7 loss=0.250000",
                  "step 7 global_step/sec=1.000000", "step 7 " + ckpt));
}

}  // namespace
}  // namespace rill
