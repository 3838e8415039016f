// Runs `rill report` (the real binary, RILL_BIN) on log directories written
// here as training writes them: event files of several tasks, a checkpoint
// state and a Chrome trace; and on damaged ones.
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/training/summary_writer.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::AllOf;
using ::testing::EndsWith;
using ::testing::HasSubstr;
using ::testing::Not;

using RunResult = testing::ProgramResult;

// Quiet: the tests read stderr for warnings, not for the progress line.
RunResult RunReport(std::vector<std::string> args, bool quiet = true) {
  args.insert(args.begin(), {std::getenv("RILL_BIN"), "report"});
  if (quiet) args.insert(args.begin() + 2, "--quiet");
  return testing::RunProgram(args);
}

void WriteBytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

int Count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// Two processes (a worker and a ps), nested slices, a send joined to its
// receive by a flow, and a memory counter per device.
constexpr char kTrace[] = R"({"traceEvents": [
  {"ph": "M", "pid": 1, "name": "process_name", "args": {"name": "/job:worker/task:0"}},
  {"ph": "M", "pid": 1, "tid": 0, "name": "thread_name", "args": {"name": "CPU:0 compute"}},
  {"ph": "M", "pid": 1, "tid": 1, "name": "thread_name", "args": {"name": "CPU:0 transfers"}},
  {"ph": "M", "pid": 2, "name": "process_name", "args": {"name": "/job:ps/task:0"}},
  {"ph": "M", "pid": 2, "tid": 0, "name": "thread_name", "args": {"name": "ps CPU:0"}},
  {"ph": "X", "pid": 1, "tid": 0, "ts": 1000, "dur": 900, "name": "step", "cat": "step"},
  {"ph": "X", "pid": 1, "tid": 0, "ts": 1100, "dur": 300, "name": "MatMul", "cat": "op",
   "args": {"shape": "[64,784]"}},
  {"ph": "X", "pid": 1, "tid": 1, "ts": 1450, "dur": 50, "name": "_Send", "cat": "transfer"},
  {"ph": "X", "pid": 2, "tid": 0, "ts": 1520, "dur": 60, "name": "_Recv", "cat": "transfer"},
  {"ph": "s", "pid": 1, "tid": 1, "ts": 1460, "id": 7, "name": "w/read", "cat": "tensor"},
  {"ph": "f", "pid": 2, "tid": 0, "ts": 1530, "id": 7, "name": "w/read", "cat": "tensor",
   "bp": "e"},
  {"ph": "C", "pid": 1, "ts": 1000, "name": "memory", "args": {"CPU:0": 1024}},
  {"ph": "C", "pid": 1, "ts": 1400, "name": "memory", "args": {"CPU:0": 4096}},
  {"ph": "C", "pid": 2, "ts": 1500, "name": "memory", "args": {"CPU:0": 2048}}
], "displayTimeUnit": "ms"})";

class ReportCommand : public ::testing::Test {
 protected:
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // The event file of a task that logged every 100 steps up to 500 and
  // saved a checkpoint at step 300; returns its path.
  std::string WriteTask(const std::string& task, double scale) {
    auto writer = SummaryWriter::Create(logdir_ + "/" + task);
    EXPECT_OK(writer.status());
    if (!writer.ok()) return "";
    for (int step = 0; step <= 500; step += 100) {
      EXPECT_OK((*writer)->AddScalar("loss", static_cast<float>(scale / (1 + step)), step));
      EXPECT_OK((*writer)->AddScalar("accuracy", static_cast<float>(step / 600.0), step));
      EXPECT_OK((*writer)->AddScalar("global_step/sec", static_cast<float>(40 + scale), step));
      std::vector<double> weights;
      for (int i = 0; i < 200; ++i) weights.push_back(std::sin(i * 0.7) * (1 + step / 250.0));
      EXPECT_OK((*writer)->AddHistogram("dense/weights", weights, step));
      EXPECT_OK((*writer)->AddHistogram("dense/gradients", {0.1 * scale, -0.2, 0.3}, step));
    }
    SessionLog log;
    log.set_status(SessionLog::CHECKPOINT);
    log.set_checkpoint_path(logdir_ + "/model.ckpt-300");
    EXPECT_OK((*writer)->AddSessionLog(log, 300));
    EXPECT_OK((*writer)->Close());
    return (*writer)->path();
  }

  void WriteCheckpointState() {
    WriteBytes(logdir_ + "/checkpoint",
               "model_checkpoint_path: \"model.ckpt-500\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-200\"\n"
               "all_model_checkpoint_paths: \"model.ckpt-500\"\n");
  }

  const std::string dir_ = testing::MakeTempDir();
  const std::string logdir_ = dir_ + "/logs";
  const std::string out_ = dir_ + "/report.html";
};

TEST_F(ReportCommand, DrawsScalarsCheckpointsHistogramsAndTheTimeline) {
  WriteTask("worker0", 1.0);
  WriteTask("worker1", 2.0);
  WriteTask("chief", 3.0);
  WriteCheckpointState();
  WriteBytes(logdir_ + "/step_42.trace.json", kTrace);

  const RunResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, EndsWith("report: " + out_ + "\n"));
  EXPECT_EQ(r.err, "");
  // Without --quiet the event files read are counted on stderr.
  const RunResult counted = RunReport({logdir_, "--out", out_}, /*quiet=*/false);
  ASSERT_EQ(counted.exit_code, 0) << counted.err;
  EXPECT_THAT(counted.err, HasSubstr("report  3/3 event files 100%"));
  const std::string html = testing::ReadFileOrDie(out_);

  // Self-contained: nothing to fetch.
  for (const char* outside : {"http://", "https://", "<script src", "<link", "url(http"}) {
    EXPECT_THAT(html, Not(HasSubstr(outside))) << outside;
  }
  // Each scalar tag against step and against wall time; a series per task.
  EXPECT_EQ(Count(html, "<svg class=\"scalar-plot"), 6);
  for (const char* title : {">loss vs step<", ">loss vs wall time<", ">accuracy vs step<",
                            ">global_step/sec (rate) vs step<"}) {
    EXPECT_THAT(html, HasSubstr(title));
  }
  for (const char* task : {">worker0<", ">worker1<", ">chief<"}) EXPECT_THAT(html, HasSubstr(task));
  EXPECT_THAT(html, HasSubstr("worker0 (mean 41/s)"));
  // Checkpoints from the state file (200, 500) and the events (300, told
  // by three tasks but listed once), marked on the step axes.
  EXPECT_EQ(Count(html, "<tr class=\"checkpoint\">"), 3);
  for (const char* step : {">200<", ">300<", ">500<"}) EXPECT_THAT(html, HasSubstr(step));
  EXPECT_THAT(html, HasSubstr("<td>checkpoint state</td>"));
  EXPECT_THAT(html, HasSubstr("events of chief, events of worker0, events of worker1"));
  EXPECT_THAT(html, HasSubstr("checkpoint at step 300"));
  EXPECT_GT(Count(html, "class=\"checkpoint-marker\""), 0);
  // A small multiple per histogram tag and task, with its statistics.
  EXPECT_EQ(Count(html, "<svg class=\"histogram\""), 6);
  EXPECT_THAT(html, HasSubstr(">dense/weights<"));
  EXPECT_THAT(html, HasSubstr(">dense/gradients<"));
  EXPECT_THAT(html, HasSubstr("mean"));
  EXPECT_THAT(html, HasSubstr(">step 500<"));
  // The timeline: a row per thread, under its process, bars, a flow, counters.
  EXPECT_EQ(Count(html, "<svg class=\"timeline\""), 1);
  EXPECT_EQ(Count(html, "<g class=\"track\""), 3);
  for (const char* label : {">/job:worker/task:0<", ">/job:ps/task:0<", ">CPU:0 compute<",
                            ">CPU:0 transfers<", ">ps CPU:0<"}) {
    EXPECT_THAT(html, HasSubstr(label));
  }
  EXPECT_THAT(html, HasSubstr("<title>MatMul (op)\nstart +100 \u00b5s, duration 300 \u00b5s\n"
                              "shape: [64,784]</title>"));
  EXPECT_EQ(Count(html, "<path class=\"flow\""), 1);
  EXPECT_EQ(Count(html, "<svg class=\"counter-chart\""), 2);
}

// TensorFlow's saver hook logs the saver's base path with the step beside
// it; the checkpoint state names the same checkpoint with its step.
TEST_F(ReportCommand, OneCheckpointLoggedByBasePathAndListedByStepIsOneRow) {
  {
    auto writer = SummaryWriter::Create(logdir_ + "/chief");
    ASSERT_OK(writer.status());
    ASSERT_OK((*writer)->AddScalar("loss", 1.0f, 500));
    SessionLog log;
    log.set_status(SessionLog::CHECKPOINT);
    log.set_checkpoint_path(logdir_ + "/model.ckpt");
    ASSERT_OK((*writer)->AddSessionLog(log, 500));
    ASSERT_OK((*writer)->Close());
  }
  WriteBytes(logdir_ + "/checkpoint", "model_checkpoint_path: \"model.ckpt-500\"\n");
  const RunResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = testing::ReadFileOrDie(out_);
  size_t rows = 0;
  for (size_t at = html.find("<tr class=\"checkpoint\">"); at != std::string::npos;
       at = html.find("<tr class=\"checkpoint\">", at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 1u) << html;
  EXPECT_THAT(html, HasSubstr("<code>model.ckpt-500</code>"));
}

TEST_F(ReportCommand, WritesIntoTheLogDirectoryByDefault) {
  WriteTask("worker0", 1.0);
  const RunResult r = RunReport({logdir_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.out, EndsWith("report: " + logdir_ + "/report.html\n"));
  EXPECT_THAT(testing::ReadFileOrDie(logdir_ + "/report.html"), HasSubstr("<svg"));
  // A report of a directory the report is in: the page itself is not read.
  EXPECT_EQ(RunReport({logdir_}).exit_code, 0);
}

TEST_F(ReportCommand, NamesATaskWithoutDirectoryByItsHost) {
  auto writer = SummaryWriter::Create(logdir_, {.filename_suffix = ".v2"});
  ASSERT_OK(writer.status());
  ASSERT_OK((*writer)->AddScalar("loss", 1, 1));
  ASSERT_OK((*writer)->Close());
  const std::string name = std::filesystem::path((*writer)->path()).filename().string();
  const std::string host = name.substr(name.find('.', name.find("tfevents.") + 9) + 1);

  ASSERT_EQ(RunReport({logdir_, "--out", out_}).exit_code, 0);
  EXPECT_THAT(testing::ReadFileOrDie(out_), HasSubstr("<td>" + host + "</td>"));
}

TEST_F(ReportCommand, SkipsTheRestOfAnEventFileAfterABadRecord) {
  WriteTask("worker0", 1.0);
  const std::string damaged = WriteTask("worker1", 2.0);
  std::string bytes = testing::ReadFileOrDie(damaged);
  bytes[bytes.size() - 6] ^= 0x20;  // In the last record's data.
  WriteBytes(damaged, bytes);

  const RunResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, AllOf(HasSubstr("warning: skipped the rest of " + damaged +
                                     ": corrupted record at offset "),
                           HasSubstr("data CRC mismatch"), HasSubstr("kept the")));
  const std::string html = testing::ReadFileOrDie(out_);
  EXPECT_THAT(html, HasSubstr("corrupted record at offset"));  // Among the page's warnings.
  EXPECT_THAT(html, HasSubstr(">worker1<"));
}

TEST_F(ReportCommand, SkipsATruncatedEventFileAmongGoodOnes) {
  WriteTask("worker0", 1.0);
  const std::string damaged = WriteTask("worker1", 2.0);
  std::filesystem::resize_file(damaged, 5);

  const RunResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err, HasSubstr("warning: skipped " + damaged +
                               ": truncated record at offset 0: header has 5 of 12 bytes"));
}

TEST_F(ReportCommand, FailsNamingTheFileWhenNothingCanBeRead) {
  const std::string damaged = WriteTask("worker0", 1.0);
  std::string bytes = testing::ReadFileOrDie(damaged);
  bytes[2] ^= 0x01;  // The first record's length.
  WriteBytes(damaged, bytes);

  const RunResult r = RunReport({logdir_, "--out", out_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.out, "");
  EXPECT_THAT(r.err, HasSubstr("rill report: " + damaged +
                               ": corrupted record at offset 0: length CRC mismatch"));
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out_));
}

TEST_F(ReportCommand, WarnsAboutABadTraceAndDrawsTheRest) {
  WriteTask("worker0", 1.0);
  WriteBytes(logdir_ + "/bad.trace.json", "{\"traceEvents\": [{\"ph\": \"X\", ");

  const RunResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_THAT(r.err,
              HasSubstr("warning: skipped trace '" + logdir_ + "/bad.trace.json': not valid JSON"));
  const std::string html = testing::ReadFileOrDie(out_);
  EXPECT_THAT(html, HasSubstr("No trace file could be read"));
  EXPECT_EQ(Count(html, "<svg class=\"scalar-plot"), 6);
}

TEST_F(ReportCommand, FailsWhenTheOnlyTraceIsNotATrace) {
  std::filesystem::create_directories(logdir_);
  WriteBytes(logdir_ + "/step.trace.json", "[1, 2");
  RunResult r = RunReport({logdir_, "--out", out_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'" + logdir_ + "/step.trace.json': not valid JSON"));

  WriteBytes(logdir_ + "/step.trace.json", "{\"events\": []}");
  r = RunReport({logdir_, "--out", out_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("step.trace.json': no trace events"));
}

TEST_F(ReportCommand, AcceptsATraceThatIsABareArray) {
  std::filesystem::create_directories(logdir_);
  WriteBytes(logdir_ + "/step.trace.json",
             R"([{"ph": "X", "pid": 3, "tid": 9, "ts": 5, "dur": 2, "name": "Add"}])");
  const RunResult r = RunReport({logdir_, "--out", out_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string html = testing::ReadFileOrDie(out_);
  EXPECT_THAT(html, AllOf(HasSubstr(">pid 3<"), HasSubstr(">tid 9<"), HasSubstr("<title>Add\n")));
  EXPECT_THAT(html, HasSubstr("No scalar summaries"));
}

TEST_F(ReportCommand, FailsOnAMissingOrEmptyDirectory) {
  RunResult r = RunReport({dir_ + "/missing"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "rill report: '" + dir_ + "/missing' does not exist\n");

  std::filesystem::create_directories(logdir_);
  r = RunReport({logdir_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err, HasSubstr("'" + logdir_ + "' holds no event files"));
}

// --out over a device (a private node here, never one in /dev) or a FIFO
// is refused before the log directory is read, and the node stays.
TEST_F(ReportCommand, OutRefusesToReplaceADeviceOrAFifo) {
  WriteTask("worker0", 1.0);
  const std::string fifo = dir_ + "/fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  RunResult r = RunReport({logdir_, "--out", fifo});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("'" + fifo + "' is a FIFO, not a regular file: refusing to replace it"));
  struct stat st {};
  ASSERT_EQ(lstat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));

  const std::string device = dir_ + "/null";
  if (mknod(device.c_str(), S_IFCHR | 0600, makedev(1, 3)) != 0) {
    GTEST_SKIP() << "mknod refused (it needs root): " << std::strerror(errno);
  }
  r = RunReport({logdir_, "--out", device});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_THAT(r.err,
              HasSubstr("'" + device +
                        "' is a character device, not a regular file: refusing to replace it"));
  ASSERT_EQ(lstat(device.c_str(), &st), 0);
  EXPECT_TRUE(S_ISCHR(st.st_mode));
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) {
    EXPECT_THAT(entry.path().string(), Not(HasSubstr(".tempstate")));
  }
}

TEST_F(ReportCommand, UsageErrorsExitWithTwo) {
  EXPECT_EQ(RunReport({}).exit_code, 2);
  EXPECT_EQ(RunReport({logdir_, logdir_}).exit_code, 2);
  const RunResult unknown = RunReport({logdir_, "--output", out_});
  EXPECT_EQ(unknown.exit_code, 2);
  EXPECT_THAT(unknown.err, HasSubstr("--output"));
  EXPECT_EQ(RunReport({logdir_, "--out"}).exit_code, 2);

  const RunResult help = RunReport({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: rill report LOGDIR [--out FILE.html]"));
}

}  // namespace
}  // namespace rill
