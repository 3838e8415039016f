// `rill launch` (RILL_BIN) running the between-graph training program
// (RILL_MNIST, examples/distributed_mnist) as users run it, each task
// configured by its TF_CONFIG alone: a worker killed while it trains is
// restarted on its address, rejoins, and the job ends with the chief.
#include <signal.h>

#include <cstdlib>
#include <iterator>
#include <memory>
#include <optional>
#include <regex>
#include <string>

#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::ContainsRegex;
using ::testing::HasSubstr;

// The first match of `pattern` in the launcher's output within 60 s.
std::optional<std::smatch> WaitForLog(testing::ServerProcess& launch, const std::string& pattern,
                                      std::string& log) {
  const std::regex re(pattern);
  const absl::Time deadline = absl::Now() + absl::Seconds(60);
  while (absl::Now() < deadline) {
    log = launch.Log();
    std::smatch match;
    if (std::regex_search(log, match, re)) return match;
    if (!launch.Running()) break;
    absl::SleepFor(absl::Milliseconds(50));
  }
  return std::nullopt;
}

int Count(const std::string& text, const std::string& pattern) {
  const std::regex re(pattern);
  return static_cast<int>(
      std::distance(std::sregex_iterator(text.begin(), text.end(), re), std::sregex_iterator()));
}

TEST(LaunchMnist, AWorkerKilledWhileTrainingIsRestartedAndTheJobFinishes) {
  const std::string logdir = testing::MakeTempDir() + "/logs";
  // Each step waits 10 ms, so that the chief alone still has many seconds
  // of training left when the killed worker comes back.
  ASSERT_OK_AND_ASSIGN(
      std::unique_ptr<testing::ServerProcess> launch,
      testing::ServerProcess::Spawn({"launch", "--ps", "1", "--workers", "2", "--",
                                     std::getenv("RILL_MNIST"), "--train_steps=1200", "--issync=0",
                                     "--logdir=" + logdir, "--log_every=100",
                                     "--validate_every=100000", "--step_delay_ms=10", "--quiet"}));
  std::string log;
  const std::optional<std::smatch> started =
      WaitForLog(*launch, "\\[launch\\] worker 1 started, pid ([0-9]+)", log);
  ASSERT_TRUE(started.has_value()) << log;
  const pid_t worker1 = std::stoi((*started)[1].str());
  ASSERT_TRUE(WaitForLog(*launch, "\\[worker 1\\] Worker 1: local step 100,", log)) << log;
  ASSERT_EQ(kill(worker1, SIGKILL), 0);

  const testing::ExitStatus exit = launch->WaitExit(absl::Seconds(240));
  log = launch->Log();
  ASSERT_TRUE(exit.exited) << log;
  EXPECT_EQ(exit.code, 0) << log;
  EXPECT_THAT(log, HasSubstr("[launch] worker 1 (pid " + std::to_string(worker1) +
                             ") was killed by SIGKILL"));
  EXPECT_THAT(log, HasSubstr("[launch] restarting worker 1 in 1s (attempt 1 of 3)"));
  EXPECT_EQ(Count(log, "\\[launch\\] worker 1 started, pid"), 2) << log;
  // The restarted worker found the model ready and trained to the end.
  EXPECT_EQ(Count(log, "\\[worker 1\\] Worker 1: Session initialization complete\\."), 2) << log;
  EXPECT_THAT(log, ContainsRegex("\\[worker 1\\] result: \\{\"task\": 1,"));
  // The chief's result: well above chance (0.1) after 1200 steps.
  std::smatch result;
  ASSERT_TRUE(std::regex_search(
      log, result,
      std::regex("\\[worker 0\\] result: \\{\"task\": 0, .*\"test_accuracy\": ([0-9.]+), "
                 ".*\"global_step\": ([0-9]+)")))
      << log;
  EXPECT_GE(std::stod(result[1].str()), 0.7) << log;
  EXPECT_GE(std::stoi(result[2].str()), 1200) << log;
  // The ps task, serving until stopped, was stopped cleanly.
  EXPECT_THAT(log, HasSubstr("[launch] stopping ps 0 (SIGTERM)"));
  EXPECT_THAT(log, ContainsRegex("\\[launch\\] ps 0 \\(pid [0-9]+\\) exited with status 0"));
}

}  // namespace
}  // namespace rill
