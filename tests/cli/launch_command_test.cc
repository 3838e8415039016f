// `rill launch` (the real binary, RILL_BIN) on small shell programs: the
// TF_CONFIG each task gets, its prefixed lines, binary output, a reader that
// stops reading, restarts, the job's end with its chief, signals (what the
// tasks started ends with them), and bad input.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/distributed/tf_config.h"
#include "tests/test_util.h"

extern char** environ;

namespace rill {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;
using ::testing::Not;

// A shell program's case on its task, from TF_CONFIG.
std::string ForTask(const std::string& type, int index) {
  return absl::StrCat("*'\"type\": \"", type, "\", \"index\": ", index, "'*");
}

// A running `rill launch`, its stdout and stderr in files (its stdout a pipe
// that the test reads, with `stdout_pipe`: the test holds its write end too,
// until CloseOutPipeWriteEnd, to tell when it is full); SIGKILLed and reaped
// when the handle goes (it takes its tasks with it).
class Launcher {
 public:
  explicit Launcher(const std::vector<std::string>& args, bool stdout_pipe = false)
      : dir_(testing::MakeTempDir()) {
    std::vector<std::string> strings = {std::getenv("RILL_BIN"), "launch"};
    strings.insert(strings.end(), args.begin(), args.end());
    std::vector<char*> argv;
    for (std::string& arg : strings) argv.push_back(arg.data());
    argv.push_back(nullptr);
    // The tasks inherit the launcher's environment: a task can read what
    // the launcher said.
    std::vector<std::string> env = {"LAUNCH_ERR=" + ErrPath()};
    for (char** entry = environ; *entry != nullptr; ++entry) env.emplace_back(*entry);
    std::vector<char*> envp;
    for (std::string& entry : env) envp.push_back(entry.data());
    envp.push_back(nullptr);
    int out = open(OutPath().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (stdout_pipe) {
      int ends[2];
      if (pipe2(ends, O_CLOEXEC) == 0) {
        close(out);
        out_pipe_ = ends[0];
        out = ends[1];
        out_pipe_write_end_ = fcntl(out, F_DUPFD_CLOEXEC, 0);
      }
    }
    const int err = open(ErrPath().c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t parent = getpid();
    pid_ = fork();
    if (pid_ == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (getppid() != parent) _exit(127);
      if (dup2(out, STDOUT_FILENO) < 0 || dup2(err, STDERR_FILENO) < 0) _exit(127);
      execve(argv[0], argv.data(), envp.data());
      _exit(127);
    }
    close(out);
    close(err);
  }
  ~Launcher() {
    if (!reaped_) {
      kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
    }
    if (out_pipe_ >= 0) close(out_pipe_);
    CloseOutPipeWriteEnd();
  }

  pid_t pid() const { return pid_; }
  // The ends of its stdout, with `stdout_pipe`.
  int out_pipe() const { return out_pipe_; }
  int out_pipe_write_end() const { return out_pipe_write_end_; }
  // So that the read end sees the end of the launcher's output.
  void CloseOutPipeWriteEnd() {
    if (out_pipe_write_end_ >= 0) close(out_pipe_write_end_);
    out_pipe_write_end_ = -1;
  }
  std::string dir() const { return dir_; }
  std::string ErrPath() const { return dir_ + "/launch.err"; }
  std::string Out() const { return testing::ReadFileOrDie(OutPath()); }
  std::string Err() const { return testing::ReadFileOrDie(ErrPath()); }

  // Waits (at most 60 s) until stderr matches `pattern` `count` times.
  bool WaitForErr(const std::string& pattern, int count = 1) const {
    const std::regex re(pattern);
    for (const absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;
         absl::SleepFor(absl::Milliseconds(20))) {
      const std::string err = Err();
      if (std::distance(std::sregex_iterator(err.begin(), err.end(), re), std::sregex_iterator()) >=
          count) {
        return true;
      }
    }
    return false;
  }

  // The exit code (128 + signal when killed); -1 when it still ran after
  // 60 s (then it is killed).
  int Wait() {
    int status = 0;
    for (const absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;
         absl::SleepFor(absl::Milliseconds(20))) {
      if (waitpid(pid_, &status, WNOHANG) == pid_) {
        reaped_ = true;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      }
    }
    return -1;
  }

  // The pids of its tasks, from its "[launch] NAME started, pid N" lines.
  std::vector<pid_t> TaskPids() const {
    std::vector<pid_t> pids;
    const std::string err = Err();
    const std::regex re("\\[launch\\] [a-z]+ [0-9]+ started, pid ([0-9]+)");
    for (auto it = std::sregex_iterator(err.begin(), err.end(), re); it != std::sregex_iterator();
         ++it) {
      pids.push_back(std::stoi((*it)[1].str()));
    }
    return pids;
  }

 private:
  std::string OutPath() const { return dir_ + "/launch.out"; }

  const std::string dir_;
  pid_t pid_ = -1;
  int out_pipe_ = -1;
  int out_pipe_write_end_ = -1;
  bool reaped_ = false;
};

// The fields of /proc/PID/stat after the command's name: state, ppid,
// process group...; empty when it is gone.
std::vector<std::string> StatFields(pid_t pid) {
  std::ifstream stat(absl::StrCat("/proc/", pid, "/stat"));
  std::string text((std::istreambuf_iterator<char>(stat)), std::istreambuf_iterator<char>());
  const size_t paren = text.rfind(')');
  if (paren == std::string::npos) return {};
  return absl::StrSplit(text.substr(paren + 1), ' ', absl::SkipEmpty());
}

// Whether `pid` no longer runs: gone, or a zombie that init has yet to reap.
bool Gone(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  const std::vector<std::string> fields = StatFields(pid);
  return fields.empty() || fields[0] == "Z";
}

// The process group of `pid`, which runs; -1 when it does not.
pid_t ProcessGroupOf(pid_t pid) {
  const std::vector<std::string> fields = StatFields(pid);
  return fields.size() > 2 ? std::stoi(fields[2]) : -1;
}

// The processes that run in one of `groups` (not zombies).
std::vector<pid_t> RunningIn(const std::set<pid_t>& groups) {
  std::vector<pid_t> found;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    int pid = 0;
    if (!absl::SimpleAtoi(entry.path().filename().string(), &pid)) continue;
    const std::vector<std::string> fields = StatFields(pid);
    if (fields.size() > 2 && fields[0] != "Z" && groups.count(std::stoi(fields[2])) > 0) {
      found.push_back(pid);
    }
  }
  return found;
}

// Waits (at most 20 s) until nothing runs in `groups`.
void ExpectGroupsEmpty(const std::set<pid_t>& groups) {
  ASSERT_FALSE(groups.empty());
  const absl::Time deadline = absl::Now() + absl::Seconds(20);
  while (!RunningIn(groups).empty() && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(20));
  }
  EXPECT_THAT(RunningIn(groups), ::testing::IsEmpty()) << "outlived the launcher";
}

// The pids of `tasks` running tasks and of the child each started, which it
// wrote as "child PID" on stdout or stderr; waits (at most 60 s) for all.
std::vector<pid_t> TasksAndTheirChildren(const Launcher& launch, size_t tasks) {
  const std::regex child_re("child ([0-9]+)");
  std::vector<pid_t> pids;
  for (const absl::Time deadline = absl::Now() + absl::Seconds(60);
       absl::Now() < deadline && pids.size() < 2 * tasks; absl::SleepFor(absl::Milliseconds(20))) {
    pids = launch.TaskPids();
    const std::string out = launch.Out() + launch.Err();
    for (auto it = std::sregex_iterator(out.begin(), out.end(), child_re);
         it != std::sregex_iterator(); ++it) {
      pids.push_back(std::stoi((*it)[1].str()));
    }
  }
  EXPECT_EQ(pids.size(), 2 * tasks) << launch.Out() << launch.Err();
  return pids;
}

// The lines that binary output must come out as: every byte, each line
// after the prefix, a '\n' added only to a last line without one.
std::string Framed(std::string_view prefix, std::string_view bytes) {
  std::string out;
  while (!bytes.empty()) {
    const size_t end = bytes.find('\n');
    out += prefix;
    out += bytes.substr(0, end);
    out += '\n';
    bytes.remove_prefix(end == std::string_view::npos ? bytes.size() : end + 1);
  }
  return out;
}

// Waits (at most 60 s) until the pipe whose write end is `fd` takes no more.
bool WaitUntilFull(int fd) {
  for (const absl::Time deadline = absl::Now() + absl::Seconds(60); absl::Now() < deadline;
       absl::SleepFor(absl::Milliseconds(20))) {
    pollfd writable = {.fd = fd, .events = POLLOUT, .revents = 0};
    if (poll(&writable, 1, 0) == 0) return true;
  }
  return false;
}

// Waits (at most 20 s) until every one of `pids` is gone.
void ExpectAllGone(const std::vector<pid_t>& pids) {
  ASSERT_FALSE(pids.empty());
  for (const pid_t pid : pids) {
    const absl::Time deadline = absl::Now() + absl::Seconds(20);
    while (!Gone(pid) && absl::Now() < deadline) absl::SleepFor(absl::Milliseconds(20));
    EXPECT_TRUE(Gone(pid)) << "process " << pid << " outlived the launcher";
  }
}

TEST(LaunchCommand, GivesEachTaskTheClusterAndItsTaskInTfConfig) {
  Launcher launch(
      {"--ps", "2", "--workers", "3", "--", "/bin/sh", "-c", "printf '%s\\n' \"$TF_CONFIG\""});
  ASSERT_EQ(launch.Wait(), 0) << launch.Err();
  const std::string out = launch.Out();
  std::set<std::string> seen;
  std::optional<std::string> cluster;
  const std::regex line_re("^\\[(ps|worker) ([0-9]+)\\] (.*)$");
  for (const absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::smatch match;
    const std::string text(line);
    ASSERT_TRUE(std::regex_match(text, match, line_re)) << text;
    ASSERT_OK_AND_ASSIGN(const ServerConfig config, ServerConfigFromTfConfig(match[3].str()));
    EXPECT_EQ(config.task.job, match[1].str());
    EXPECT_EQ(config.task.index, std::stoi(match[2].str()));
    seen.insert(absl::StrCat(config.task.job, " ", config.task.index));
    // Every task sees the same cluster: 2 ps tasks and 3 workers on
    // distinct ports of 127.0.0.1.
    if (!cluster) cluster = config.cluster.ToString();
    EXPECT_EQ(config.cluster.ToString(), *cluster);
    EXPECT_EQ(config.cluster.TaskIndices("ps"), (std::vector<int>{0, 1}));
    EXPECT_EQ(config.cluster.TaskIndices("worker"), (std::vector<int>{0, 1, 2}));
    std::set<std::string> addresses;
    for (const std::string job : {"ps", "worker"}) {
      for (const int task : config.cluster.TaskIndices(job)) {
        ASSERT_OK_AND_ASSIGN(const std::string address, config.cluster.TaskAddress(job, task));
        EXPECT_THAT(address, ContainsRegex("^127\\.0\\.0\\.1:[0-9]+$"));
        addresses.insert(address);
      }
    }
    EXPECT_EQ(addresses.size(), 5u) << *cluster;
  }
  EXPECT_EQ(seen, (std::set<std::string>{"ps 0", "ps 1", "worker 0", "worker 1", "worker 2"}));
  EXPECT_THAT(launch.Err(), HasSubstr("[launch] cluster ps=127.0.0.1:"));
}

TEST(LaunchCommand, PrefixesEachLineOnTheStreamTheTaskWroteIt) {
  Launcher launch({"--ps", "0", "--workers", "2", "--", "/bin/sh", "-c",
                   "echo to stdout; echo to stderr >&2; echo; printf '10%%\\r50%%\\r100%%\\n'; "
                   "printf 'no newline'"});
  ASSERT_EQ(launch.Wait(), 0) << launch.Err();
  const std::string out = launch.Out(), err = launch.Err();
  for (const std::string task : {"worker 0", "worker 1"}) {
    const std::string prefix = "[" + task + "] ";
    EXPECT_THAT(out, HasSubstr(prefix + "to stdout\n"));
    EXPECT_THAT(out, HasSubstr(prefix + "\n"));
    // A line redrawn in place is its last redraw.
    EXPECT_THAT(out, HasSubstr(prefix + "100%\n"));
    EXPECT_THAT(out, Not(HasSubstr("50%")));
    // A partial last line is ended at the task's exit.
    EXPECT_THAT(out, HasSubstr(prefix + "no newline\n"));
    EXPECT_THAT(err, HasSubstr(prefix + "to stderr\n"));
    EXPECT_THAT(err,
                ContainsRegex("\\[launch\\] " + task + " \\(pid [0-9]+\\) exited with status 0"));
  }
  EXPECT_THAT(out, Not(HasSubstr("to stderr")));
  EXPECT_THAT(err, Not(HasSubstr("to stdout")));
  // Every line is whole and prefixed.
  for (const absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    EXPECT_THAT(std::string(line), ContainsRegex("^\\[worker [01]\\] ")) << line;
  }
  for (const absl::string_view line : absl::StrSplit(err, '\n', absl::SkipEmpty())) {
    EXPECT_THAT(std::string(line), ContainsRegex("^\\[(worker [01]|launch)\\] ")) << line;
  }
}

// Worker 1 fails on its first run; it is restarted with the same TF_CONFIG;
// the chief finishes once worker 1's second run has begun; the ps task,
// which serves until stopped, is stopped; the job succeeds.
TEST(LaunchCommand, RestartsATaskThatFailsAndTheJobSucceeds) {
  const std::string dir = testing::MakeTempDir();
  const std::string program = absl::StrCat(
      "case \"$TF_CONFIG\" in ", ForTask("ps", 0), ") exec sleep 1000;; ", ForTask("worker", 1),
      ") printf 'run with %s\\n' \"$TF_CONFIG\"; if [ -e ", dir, "/failed ]; then touch ", dir,
      "/second; echo second run; else touch ", dir, "/failed; echo failing; exit 3; fi;; ",
      ForTask("worker", 0), ") while [ ! -e ", dir, "/second ]; do sleep 0.05; done;; esac");
  Launcher launch({"--ps", "1", "--workers", "2", "--", "/bin/sh", "-c", program});
  ASSERT_EQ(launch.Wait(), 0) << launch.Err();
  const std::string out = launch.Out(), err = launch.Err();
  EXPECT_THAT(err, ContainsRegex("\\[launch\\] worker 1 \\(pid [0-9]+\\) exited with status 3"));
  EXPECT_THAT(err, HasSubstr("[launch] restarting worker 1 in 1s (attempt 1 of 3)"));
  EXPECT_THAT(out, HasSubstr("[worker 1] failing\n"));
  EXPECT_THAT(out, HasSubstr("[worker 1] second run\n"));
  EXPECT_THAT(err, HasSubstr("[launch] stopping ps 0 (SIGTERM)"));
  EXPECT_THAT(err, ContainsRegex("\\[launch\\] ps 0 \\(pid [0-9]+\\) was killed by SIGTERM"));
  // Both runs had the same address and task.
  std::vector<std::string> runs;
  for (const absl::string_view line : absl::StrSplit(out, '\n')) {
    if (absl::StartsWith(line, "[worker 1] run with ")) runs.emplace_back(line);
  }
  ASSERT_EQ(runs.size(), 2u) << out;
  EXPECT_EQ(runs[0], runs[1]);
  EXPECT_EQ(launch.TaskPids().size(), 4u) << err;
}

TEST(LaunchCommand, AChiefThatAlwaysFailsEndsTheJobWithItsCodeAfterItsRestarts) {
  const std::string program = absl::StrCat("case \"$TF_CONFIG\" in ", ForTask("worker", 0),
                                           ") echo failing; exit 7;; *) exec sleep 1000;; esac");
  Launcher launch(
      {"--ps", "1", "--workers", "2", "--max_restarts", "2", "--", "/bin/sh", "-c", program});
  EXPECT_EQ(launch.Wait(), 7) << launch.Err();
  const std::string err = launch.Err();
  EXPECT_THAT(err, HasSubstr("[launch] restarting worker 0 in 1s (attempt 1 of 2)"));
  EXPECT_THAT(err, HasSubstr("[launch] restarting worker 0 in 2s (attempt 2 of 2)"));
  EXPECT_THAT(err, HasSubstr("[launch] giving up on worker 0, the chief (restarted 2 times "
                             "already): stopping the job with its status 7"));
  EXPECT_THAT(launch.Out(), HasSubstr("[worker 0] failing\n"));
  // 1 ps, worker 1, and the chief's three runs.
  EXPECT_EQ(launch.TaskPids().size(), 5u) << err;
  ExpectAllGone(launch.TaskPids());
}

TEST(LaunchCommand, AChiefKilledBySignalGivesTheShellsCodeWithoutRestarts) {
  Launcher launch({"--ps", "0", "--workers", "1", "--restart", "never", "--", "/bin/sh", "-c",
                   "kill -KILL $$"});
  EXPECT_EQ(launch.Wait(), 128 + SIGKILL) << launch.Err();
  EXPECT_THAT(launch.Err(), ContainsRegex("worker 0 \\(pid [0-9]+\\) was killed by SIGKILL"));
  EXPECT_THAT(launch.Err(), HasSubstr("giving up on worker 0, the chief (--restart never)"));
  EXPECT_THAT(launch.Err(), Not(HasSubstr("restarting")));
}

// Another worker that fails for good does not end the job; the chief
// (which waits to see the launcher give up on it) still finishes it.
TEST(LaunchCommand, AWorkerThatFailsForGoodDoesNotEndTheJob) {
  Launcher launch({"--ps", "0", "--workers", "2", "--restart", "never", "--", "/bin/sh", "-c",
                   absl::StrCat("case \"$TF_CONFIG\" in ", ForTask("worker", 1),
                                ") exit 4;; *) until grep -q 'giving up on worker 1' "
                                "\"$LAUNCH_ERR\"; do sleep 0.05; done; echo done;; esac")});
  EXPECT_EQ(launch.Wait(), 0) << launch.Err();
  EXPECT_THAT(launch.Err(), HasSubstr("[launch] giving up on worker 1 (--restart never); the job "
                                      "goes on without it: only the chief ends it"));
  EXPECT_THAT(launch.Out(), HasSubstr("[worker 0] done\n"));
}

TEST(LaunchCommand, TheOtherWorkersGetTheGraceTimeThenAreStopped) {
  const std::string program = absl::StrCat("case \"$TF_CONFIG\" in ", ForTask("worker", 0),
                                           ") echo chief done;; *) exec sleep 1000;; esac");
  Launcher launch(
      {"--ps", "1", "--workers", "2", "--grace_secs", "0.2", "--", "/bin/sh", "-c", program});
  EXPECT_EQ(launch.Wait(), 0) << launch.Err();
  const std::string err = launch.Err();
  EXPECT_THAT(err, HasSubstr("[launch] the chief has finished; waiting up to 200ms for the other "
                             "workers"));
  EXPECT_THAT(err, HasSubstr("[launch] workers still running 200ms after the chief finished"));
  EXPECT_THAT(err, HasSubstr("[launch] stopping worker 1 (SIGTERM)"));
  EXPECT_THAT(err, HasSubstr("[launch] stopping ps 0 (SIGTERM)"));
  ExpectAllGone(launch.TaskPids());
}

// SIGTERM to the launcher stops every task, and what each task started
// (its process group), then the launcher exits 143.
TEST(LaunchCommand, SigtermStopsEveryTaskAndItsChildren) {
  Launcher launch({"--ps", "1", "--workers", "2", "--", "/bin/sh", "-c",
                   "sleep 1000 & echo \"child $!\"; wait"});
  const std::vector<pid_t> pids = TasksAndTheirChildren(launch, 3);
  ASSERT_EQ(kill(launch.pid(), SIGTERM), 0);
  EXPECT_EQ(launch.Wait(), 143) << launch.Err();
  EXPECT_THAT(launch.Err(), HasSubstr("[launch] SIGTERM: stopping every task"));
  EXPECT_THAT(launch.Err(), Not(HasSubstr("restarting")));
  ExpectAllGone(pids);
}

// When the chief finishes, what every task started ends with the job: the
// chief's and a worker's background children, and the ps task's.
TEST(LaunchCommand, WhatTheTasksStartedEndsWithTheJob) {
  const std::string program = absl::StrCat(
      "sleep 1000 & echo \"child $!\" >&2; case \"$TF_CONFIG\" in ", ForTask("worker", 0),
      ") until [ \"$(grep -c '] child' \"$LAUNCH_ERR\")\" -ge 3 ]; do sleep 0.05; done;; "
      "*) wait;; esac");
  Launcher launch(
      {"--ps", "1", "--workers", "2", "--grace_secs", "0.2", "--", "/bin/sh", "-c", program});
  const std::vector<pid_t> pids = TasksAndTheirChildren(launch, 3);
  EXPECT_EQ(launch.Wait(), 0) << launch.Err();
  ExpectAllGone(pids);
}

// Ctrl-C: SIGINT, exit 130; a task that ignores SIGTERM is killed after a few seconds.
TEST(LaunchCommand, SigintStopsEveryTaskAndKillsOneThatIgnoresSigterm) {
  Launcher launch({"--ps", "0", "--workers", "2", "--", "/bin/sh", "-c",
                   "trap '' TERM; echo ready; while true; do sleep 0.05; done"});
  ASSERT_TRUE(launch.WaitForErr("\\[worker [01]\\] ready|started, pid", 2)) << launch.Err();
  ASSERT_TRUE(launch.WaitForErr("started, pid", 2)) << launch.Err();
  ASSERT_EQ(kill(launch.pid(), SIGINT), 0);
  EXPECT_EQ(launch.Wait(), 130) << launch.Err();
  EXPECT_THAT(launch.Err(), HasSubstr("[launch] SIGINT: stopping every task"));
  EXPECT_THAT(launch.Err(), HasSubstr("still running 5s after SIGTERM: SIGKILL"));
  ExpectAllGone(launch.TaskPids());
}

// What leaves its task's process group (setsid) comes back to the launcher
// when its parent ends, and goes with the job.
TEST(LaunchCommand, WhatLeftItsTasksGroupEndsWithTheJobToo) {
  // The task ends once its child has left the group.
  const std::string pid_file = testing::MakeTempDir() + "/pid";
  Launcher launch(
      {"--ps", "0", "--workers", "1", "--", "/bin/sh", "-c",
       absl::StrCat("setsid sh -c 'echo $$ > ", pid_file, "; exec sleep 1000' & until [ -s ",
                    pid_file, " ]; do sleep 0.05; done; echo \"child $(cat ", pid_file, ")\"")});
  const std::vector<pid_t> pids = TasksAndTheirChildren(launch, 1);
  ASSERT_EQ(pids.size(), 2u);
  EXPECT_EQ(launch.Wait(), 0) << launch.Err();
  EXPECT_THAT(launch.Err(), HasSubstr(absl::StrCat("[launch] pid ", pids[1],
                                                   " left its task's process group and outlived "
                                                   "it: killed")));
  ExpectAllGone(pids);
}

// A launcher killed outright runs no code: its tasks die of their death
// signal, and what they started of their guards, which kill their process
// groups (themselves too).
TEST(LaunchCommand, ALauncherKilledOutrightTakesItsTasksAndTheirChildrenWithIt) {
  Launcher launch({"--ps", "1", "--workers", "2", "--", "/bin/sh", "-c",
                   "sleep 1000 & echo \"child $!\"; wait"});
  const std::vector<pid_t> pids = TasksAndTheirChildren(launch, 3);
  std::set<pid_t> groups;
  for (const pid_t pid : launch.TaskPids()) groups.insert(ProcessGroupOf(pid));
  ASSERT_EQ(groups.size(), 3u);
  ASSERT_EQ(groups.count(-1), 0u);
  ASSERT_EQ(kill(launch.pid(), SIGKILL), 0);
  EXPECT_EQ(launch.Wait(), 128 + SIGKILL);
  ExpectAllGone(pids);
  ExpectGroupsEmpty(groups);
}

TEST(LaunchCommand, BinaryOutputComesThroughWhole) {
  const std::string dir = testing::MakeTempDir();
  std::mt19937 random(1);
  std::string bytes(2 << 20, '\0');
  for (char& c : bytes) c = static_cast<char>(random());
  std::ofstream(dir + "/random.bin", std::ios::binary) << bytes;
  Launcher launch({"--ps", "0", "--workers", "1", "--", "/bin/cat", dir + "/random.bin"});
  ASSERT_EQ(launch.Wait(), 0) << launch.Err();
  const std::string out = launch.Out(), expected = Framed("[worker 0] ", bytes);
  EXPECT_TRUE(out == expected) << out.size() << " bytes out, " << expected.size() << " expected";
}

// A reader that does not keep up holds the tasks back, as it would hold
// them writing to it themselves, and loses nothing.
TEST(LaunchCommand, ASlowReaderGetsEveryLine) {
  Launcher launch(
      {"--ps", "0", "--workers", "2", "--", "/bin/sh", "-c", "yes 0123456789 | head -n 200000"},
      /*stdout_pipe=*/true);
  // The launcher holds what the pipe cannot, up to a bound, then stops
  // reading the tasks; the test reads only then.
  ASSERT_TRUE(WaitUntilFull(launch.out_pipe_write_end()));
  launch.CloseOutPipeWriteEnd();
  std::string out;
  char buffer[64 * 1024];
  ssize_t n;
  while ((n = read(launch.out_pipe(), buffer, sizeof(buffer))) > 0) out.append(buffer, n);
  EXPECT_EQ(launch.Wait(), 0) << launch.Err();
  std::map<std::string, int> lines;
  for (const absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    ++lines[std::string(line)];
  }
  EXPECT_EQ(lines, (std::map<std::string, int>{{"[worker 0] 0123456789", 200000},
                                               {"[worker 1] 0123456789", 200000}}));
  EXPECT_THAT(launch.Err(), Not(HasSubstr("dropped")));
}

// A reader that stops reading does not keep the launcher from its signals:
// SIGTERM stops every task, and the launcher exits 143, dropping (and
// counting) what the reader did not take.
TEST(LaunchCommand, AReaderThatStopsReadingDoesNotKeepTheLauncherFromSigterm) {
  Launcher launch({"--ps", "1", "--workers", "2", "--", "/bin/sh", "-c", "yes a line of output"},
                  /*stdout_pipe=*/true);
  ASSERT_TRUE(launch.WaitForErr("started, pid", 3)) << launch.Err();
  ASSERT_TRUE(WaitUntilFull(launch.out_pipe_write_end()));
  ASSERT_EQ(kill(launch.pid(), SIGTERM), 0);
  EXPECT_EQ(launch.Wait(), 143) << launch.Err();
  EXPECT_THAT(launch.Err(), HasSubstr("[launch] SIGTERM: stopping every task"));
  EXPECT_THAT(launch.Err(),
              ContainsRegex("\\[launch\\] dropped [0-9]+ bytes of output to stdout: its reader "
                            "did not take them"));
  ExpectAllGone(launch.TaskPids());
}

TEST(LaunchCommand, RejectsBadInputWithAOneLineReason) {
  const std::string rill = std::getenv("RILL_BIN");
  const struct {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
  } cases[] = {
      {{"--ps", "-1", "--workers", "1", "--", "true"}, 2, "--ps must be a number in 0..256"},
      {{"--ps", "1", "--workers", "0", "--", "true"}, 2, "--workers must be a number in 1..256"},
      {{"--ps", "x", "--workers", "1", "--", "true"}, 2, "--ps must be a number"},
      {{"--workers", "1", "--", "true"}, 2, "--ps is required"},
      {{"--ps", "1", "--", "true"}, 2, "--workers is required"},
      {{"--ps", "1", "--workers", "1", "--bogus", "--", "true"}, 2, "unknown option '--bogus'"},
      {{"--ps", "1", "--workers", "1"}, 2, "no program: expected -- PROGRAM"},
      {{"--ps", "1", "--workers", "1", "--"}, 2, "no PROGRAM after --"},
      {{"--ps", "1", "--workers", "1", "true"}, 2, "unexpected argument 'true' (the program goes"},
      {{"--ps", "1", "--workers", "1", "--restart", "always", "--", "true"},
       2,
       "--restart must be on-failure or never, got 'always'"},
      {{"--ps", "1", "--workers", "1", "--max_restarts", "-2", "--", "true"},
       2,
       "--max_restarts must be a number"},
      {{"--ps", "1", "--workers", "1", "--grace_secs", "soon", "--", "true"},
       2,
       "--grace_secs must be a number of seconds"},
      {{"--ps", "1", "--workers", "1", "--host", "localhost", "--", "true"},
       2,
       "--host 'localhost' is not a numeric IPv4 or IPv6 address"},
      {{"--ps", "200", "--workers", "200", "--", "true"},
       2,
       "--ps 200 and --workers 200: at most 256 tasks in all"},
      {{"--ps", "1", "--workers", "1", "--", "/nonexistent/program"},
       1,
       "PROGRAM /nonexistent/program: No such file or directory"},
      {{"--ps", "1", "--workers", "1", "--", "no-such-program-anywhere"},
       1,
       "PROGRAM no-such-program-anywhere: no executable of that name in PATH"},
      {{"--ps", "1", "--workers", "1", "--", "/"}, 1, "PROGRAM /: is a directory"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {rill, "launch"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    const testing::ProgramResult result = testing::RunProgram(argv);
    const std::string what = absl::StrJoin(c.args, " ");
    EXPECT_TRUE(result.exited) << what;
    EXPECT_EQ(result.exit_code, c.exit_code) << what << "\n" << result.err;
    EXPECT_THAT(result.err, HasSubstr("rill launch: " + c.message)) << what;
    EXPECT_THAT(result.err, Not(HasSubstr("started, pid"))) << what << ": a task started";
  }
  // --help after -- is the program's.
  const testing::ProgramResult help = testing::RunProgram({rill, "launch", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_THAT(help.out, HasSubstr("usage: rill launch --ps N --workers M"));
  const testing::ProgramResult program_help =
      testing::RunProgram({rill, "launch", "--ps", "0", "--workers", "1", "--", "/bin/sh", "-c",
                           "echo \"$1\"", "sh", "--help"});
  EXPECT_EQ(program_help.exit_code, 0) << program_help.err;
  EXPECT_EQ(program_help.out, "[worker 0] --help\n");
}

}  // namespace
}  // namespace rill
