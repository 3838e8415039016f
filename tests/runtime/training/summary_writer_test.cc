#include "runtime/training/summary_writer.h"

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "io/fault_injection_env.h"
#include "io/histogram.h"
#include "io/record_reader.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::MakeTempDir;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

std::string Hostname() {
  char name[256] = {};
  EXPECT_EQ(::gethostname(name, sizeof(name) - 1), 0);
  return name;
}

// The events in the file so far; fails the test on a bad record.
std::vector<Event> ReadEvents(const std::string& path) {
  absl::StatusOr<std::vector<std::string>> records = ReadAllRecords(path);
  EXPECT_TRUE(records.ok()) << records.status();
  std::vector<Event> events;
  if (!records.ok()) return events;
  for (const std::string& record : *records) {
    events.emplace_back();
    EXPECT_TRUE(events.back().ParseFromString(record));
  }
  return events;
}

SummaryWriterOptions NeverByTimer(int max_queue = 10) {
  SummaryWriterOptions options;
  options.max_queue = max_queue;
  options.flush_interval = absl::Hours(1);
  return options;
}

TEST(SummaryWriter, CreatesTheLogdirAndAFileThatStartsWithItsVersion) {
  const std::string logdir = MakeTempDir() + "/run/1";
  const int64_t before = absl::ToUnixSeconds(absl::Now());
  SummaryWriterOptions options;
  options.filename_suffix = ".worker0";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(logdir, options));
  const int64_t after = absl::ToUnixSeconds(absl::Now());

  std::smatch match;
  const std::regex pattern("events\\.out\\.tfevents\\.([0-9]{10})\\.(.*)\\.worker0");
  const std::string name = std::filesystem::path(writer->path()).filename().string();
  ASSERT_TRUE(std::regex_match(name, match, pattern)) << name;
  EXPECT_EQ(std::filesystem::path(writer->path()).parent_path(), logdir);
  EXPECT_EQ(match[2].str(), Hostname());
  const int64_t seconds = std::stoll(match[1].str());
  EXPECT_GE(seconds, before);
  EXPECT_LE(seconds, after);

  // On disk before anything else is written, with the file's time.
  const std::vector<Event> events = ReadEvents(writer->path());
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].file_version(), "brain.Event:2");
  EXPECT_EQ(events[0].wall_time(), static_cast<double>(seconds));
  EXPECT_EQ(events[0].step(), 0);
}

TEST(SummaryWriter, WritesScalarsHistogramsGraphsAndSessionLogs) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), NeverByTimer()));
  GraphDef graph;
  graph.add_node()->set_name("x");
  graph.add_node()->set_name("y");
  graph.mutable_node(1)->set_op("Identity");
  graph.mutable_node(1)->add_input("x");
  ASSERT_OK(writer->AddSessionLog(SessionLog::START, 0));
  ASSERT_OK(writer->AddGraph(graph));
  ASSERT_OK(writer->AddScalar("loss", 0.5f, 1));
  ASSERT_OK(writer->AddScalar("loss", 0.25f, 2));
  ASSERT_OK(writer->AddHistogram("weights", {-1.0, 0.5, 2.0}, 2));
  ASSERT_OK(writer->Close());

  const std::vector<Event> events = ReadEvents(writer->path());
  ASSERT_EQ(events.size(), 6u);
  for (size_t i = 1; i < events.size(); ++i) {
    EXPECT_GE(events[i].wall_time(), events[0].wall_time()) << i;
    EXPECT_GE(events[i].wall_time(), events[i - 1].wall_time()) << i;
  }
  EXPECT_EQ(events[1].session_log().status(), SessionLog::START);
  EXPECT_EQ(events[1].step(), 0);

  GraphDef read_graph;
  ASSERT_TRUE(read_graph.ParseFromString(events[2].graph_def()));
  EXPECT_EQ(read_graph.SerializeAsString(), graph.SerializeAsString());

  for (int i : {3, 4}) {
    ASSERT_EQ(events[i].summary().value_size(), 1);
    EXPECT_EQ(events[i].summary().value(0).tag(), "loss");
    EXPECT_EQ(events[i].step(), i - 2);
  }
  EXPECT_EQ(events[3].summary().value(0).simple_value(), 0.5f);
  EXPECT_EQ(events[4].summary().value(0).simple_value(), 0.25f);

  Histogram expected;
  for (double v : {-1.0, 0.5, 2.0}) expected.Add(v);
  HistogramProto expected_proto;
  expected.EncodeToProto(&expected_proto);
  ASSERT_EQ(events[5].summary().value_size(), 1);
  EXPECT_EQ(events[5].step(), 2);
  EXPECT_EQ(events[5].summary().value(0).tag(), "weights");
  EXPECT_EQ(events[5].summary().value(0).histo().SerializeAsString(),
            expected_proto.SerializeAsString());
}

TEST(SummaryWriter, AddsSerializedSummariesAndRejectsBadInput) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), NeverByTimer()));
  Summary summary;
  summary.add_value()->set_tag("a");
  summary.mutable_value(0)->set_simple_value(1.0f);
  summary.add_value()->set_tag("b");
  summary.mutable_value(1)->set_simple_value(2.0f);
  ASSERT_OK(writer->AddSummary(summary.SerializeAsString(), 7));
  ASSERT_OK(writer->AddSummary(summary, 8));
  EXPECT_THAT(writer->AddSummary(std::string("\xff\xff not a summary"), 9),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(writer->path())));
  EXPECT_THAT(
      writer->AddHistogram("w", {1.0, std::nan("")}, 9),
      StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("Nan in summary histogram for: w")));
  EXPECT_THAT(writer->AddHistogram("w", {-INFINITY}, 9),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Infinity in summary histogram for: w")));
  ASSERT_OK(writer->Close());

  const std::vector<Event> events = ReadEvents(writer->path());
  ASSERT_EQ(events.size(), 3u);
  EXPECT_EQ(events[1].step(), 7);
  EXPECT_EQ(events[1].summary().SerializeAsString(), summary.SerializeAsString());
  EXPECT_EQ(events[2].step(), 8);
  EXPECT_EQ(events[2].summary().SerializeAsString(), summary.SerializeAsString());
}

TEST(SummaryWriter, WriteEventKeepsTheEventAsGiven) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), NeverByTimer()));
  Event event;
  event.set_wall_time(1.5e9);
  event.set_step(42);
  event.mutable_log_message()->set_message("hello");
  ASSERT_OK(writer->WriteEvent(event));
  ASSERT_OK(writer->Close());
  const std::vector<Event> events = ReadEvents(writer->path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].SerializeAsString(), event.SerializeAsString());
}

TEST(SummaryWriter, FlushesWhenMaxQueueEventsArePending) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), NeverByTimer(/*max_queue=*/3)));
  ASSERT_OK(writer->AddScalar("x", 1, 1));
  ASSERT_OK(writer->AddScalar("x", 2, 2));
  EXPECT_EQ(ReadEvents(writer->path()).size(), 1u);
  ASSERT_OK(writer->AddScalar("x", 3, 3));
  EXPECT_EQ(ReadEvents(writer->path()).size(), 4u);
  ASSERT_OK(writer->AddScalar("x", 4, 4));
  EXPECT_EQ(ReadEvents(writer->path()).size(), 4u);
}

TEST(SummaryWriter, TimerFlushMakesEventsVisibleWithoutClose) {
  SummaryWriterOptions options;
  options.flush_interval = absl::Milliseconds(20);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), options));
  const uintmax_t version_size = std::filesystem::file_size(writer->path());
  ASSERT_OK(writer->AddScalar("loss", 0.5f, 1));
  // The background thread flushes within the interval; the deadline only
  // bounds a hang.
  const absl::Time deadline = absl::Now() + absl::Seconds(30);
  while (std::filesystem::file_size(writer->path()) == version_size && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }
  const std::vector<Event> events = ReadEvents(writer->path());
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].summary().value(0).tag(), "loss");
  EXPECT_EQ(events[1].step(), 1);
}

TEST(SummaryWriter, FlushAndCloseWriteWhatIsPending) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), NeverByTimer()));
  ASSERT_OK(writer->AddScalar("x", 1, 1));
  EXPECT_EQ(ReadEvents(writer->path()).size(), 1u);
  ASSERT_OK(writer->Flush());
  EXPECT_EQ(ReadEvents(writer->path()).size(), 2u);
  ASSERT_OK(writer->AddScalar("x", 2, 2));
  ASSERT_OK(writer->Close());
  EXPECT_EQ(ReadEvents(writer->path()).size(), 3u);

  EXPECT_THAT(writer->AddScalar("x", 3, 3),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("closed")));
  EXPECT_OK(writer->Flush());
  EXPECT_OK(writer->Close());
  EXPECT_EQ(ReadEvents(writer->path()).size(), 3u);
}

TEST(SummaryWriter, DestructionFlushes) {
  std::string path;
  {
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                         SummaryWriter::Create(MakeTempDir(), NeverByTimer()));
    path = writer->path();
    ASSERT_OK(writer->AddScalar("x", 1, 1));
  }
  EXPECT_EQ(ReadEvents(path).size(), 2u);
}

TEST(SummaryWriter, ConcurrentAddsLoseNothing) {
  SummaryWriterOptions options;
  options.max_queue = 7;
  options.flush_interval = absl::Milliseconds(1);
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(MakeTempDir(), options));
  constexpr int kThreads = 4;
  constexpr int kSteps = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int step = 0; step < kSteps; ++step) {
        EXPECT_OK(
            writer->AddScalar(absl::StrFormat("thread%d", t), static_cast<float>(step), step));
      }
    });
  }
  for (std::thread& t : threads) t.join();
  ASSERT_OK(writer->Close());

  const std::vector<Event> events = ReadEvents(writer->path());
  ASSERT_EQ(events.size(), 1u + kThreads * kSteps);
  std::set<std::pair<std::string, int64_t>> seen;
  std::vector<int64_t> last_step(kThreads, -1);
  for (size_t i = 1; i < events.size(); ++i) {
    const std::string& tag = events[i].summary().value(0).tag();
    seen.emplace(tag, events[i].step());
    // Each thread's events stay in the order it added them.
    const int t = tag.back() - '0';
    EXPECT_GT(events[i].step(), last_step[t]);
    last_step[t] = events[i].step();
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(kThreads * kSteps));
}

TEST(SummaryWriter, ErrorsNameTheFile) {
  const std::string dir = MakeTempDir();
  const std::string not_a_dir = dir + "/plain_file";
  std::ofstream(not_a_dir) << "x";
  EXPECT_THAT(SummaryWriter::Create(not_a_dir),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr(not_a_dir)));

  // A file of the name a writer would pick is never appended to or
  // overwritten (names for the next seconds too, in case one passes).
  const int64_t now = absl::ToUnixSeconds(absl::Now());
  for (int64_t s = now; s <= now + 2; ++s) {
    std::ofstream(absl::StrFormat("%s/events.out.tfevents.%010d.%s", dir, s, Hostname()))
        << "taken";
  }
  EXPECT_THAT(SummaryWriter::Create(dir),
              StatusIs(absl::StatusCode::kAlreadyExists, HasSubstr(dir + "/events.out.tfevents.")));
}

// What Flush reported written survives a crash of the machine: the event
// file's bytes and its name (its directory is synced when it is made).
TEST(SummaryWriter, FlushedEventsSurviveACrash) {
  io::FaultInjectionEnv env(io::Env::Posix());
  SummaryWriterOptions options = NeverByTimer();
  options.env = &env;
  const std::string logdir = MakeTempDir() + "/run";
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                       SummaryWriter::Create(logdir, options));
  const std::string path = writer->path();
  ASSERT_OK(writer->AddScalar("loss", 1, 1));
  ASSERT_OK(writer->Flush());
  ASSERT_OK(writer->AddScalar("loss", 2, 2));
  env.CrashBeforeNthOp(1);
  EXPECT_THAT(writer->Close(), StatusIs(absl::StatusCode::kUnavailable, HasSubstr(path)));
  writer.reset();
  ASSERT_OK(env.SimulateCrash());
  const std::vector<Event> events = ReadEvents(path);
  ASSERT_EQ(events.size(), 2u);
  EXPECT_EQ(events[1].step(), 1);
}

// A failed write or fsync is returned by that call and every later one,
// naming the file.
TEST(SummaryWriter, AFailedWriteOrSyncIsReportedNamingTheFile) {
  for (const io::FileOp op : {io::FileOp::kWrite, io::FileOp::kSync}) {
    io::FaultInjectionEnv env(io::Env::Posix());
    SummaryWriterOptions options = NeverByTimer();
    options.env = &env;
    ASSERT_OK_AND_ASSIGN(std::unique_ptr<SummaryWriter> writer,
                         SummaryWriter::Create(MakeTempDir(), options));
    env.FailNth(op, 1);
    ASSERT_OK(writer->AddScalar("loss", 1, 1));
    EXPECT_THAT(writer->Flush(), StatusIs(absl::StatusCode::kInternal, HasSubstr(writer->path())))
        << io::FileOpName(op);
    EXPECT_THAT(writer->AddScalar("loss", 2, 2),
                StatusIs(absl::StatusCode::kInternal, HasSubstr(writer->path())));
    EXPECT_THAT(writer->Close(), StatusIs(absl::StatusCode::kInternal, HasSubstr(writer->path())));
  }
}

}  // namespace
}  // namespace rill
