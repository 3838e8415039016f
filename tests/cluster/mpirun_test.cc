// distributed_mnist (RILL_BIN here) started by a real `mpirun -np 3`: the
// ranks find one another through the address exchange at --coordinator,
// train, and the job ends by itself (the ps ends once the workers have),
// as mpirun waits for every rank. Skipped where mpirun is not installed
// (scripts/setup.sh installs openmpi-bin).
#include <unistd.h>

#include <cstdlib>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

std::optional<std::string> FindOnPath(const std::string& program) {
  const char* path = std::getenv("PATH");
  if (path == nullptr) return std::nullopt;
  for (const absl::string_view dir : absl::StrSplit(path, ':')) {
    if (dir.empty()) continue;
    const std::string candidate = absl::StrFormat("%s/%s", dir, program);
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return std::nullopt;
}

// The value after "key": on the result line of worker `task`.
std::optional<double> Result(const std::string& log, int task, const std::string& key) {
  std::smatch match;
  const std::regex line(
      absl::StrFormat(R"(result: \{"task": %d, [^\n]*"%s": ([-0-9.eE]+))", task, key));
  if (!std::regex_search(log, match, line)) return std::nullopt;
  return std::stod(match[1].str());
}

TEST(Mpirun, ThreeRanksTrainAndTheJobEndsByItself) {
  const std::optional<std::string> mpirun = FindOnPath("mpirun");
  if (!mpirun) GTEST_SKIP() << "mpirun is not installed (Debian: openmpi-bin)";
  const std::string logdir = testing::MakeTempDir() + "/logs";
  const std::string coordinator = absl::StrFormat("127.0.0.1:%d", testing::FreePort());
  // `timeout` bounds a job that would never end, which is the failure this
  // test is for; mpirun then kills its ranks.
  const std::vector<std::string> argv = {
      "/usr/bin/timeout", "400", *mpirun,
      // A container's root, and three ranks whatever the core count.
      "--allow-run-as-root", "--oversubscribe",
      // OpenMPI's own traffic on loopback only: containers' other
      // interfaces may lead nowhere. The ranks never call MPI; these keep
      // mpirun's daemons from probing them.
      "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", "lo", "--mca",
      "oob_tcp_if_include", "lo", "-np", "3", std::getenv("RILL_BIN"), "--cluster_from", "mpi",
      "--coordinator", coordinator, "--num_ps", "1", "--train_steps", "600", "--logdir", logdir,
      "--log_every", "200", "--validate_every", "100000", "--quiet"};
  const testing::ProgramResult run = testing::RunProgram(argv);
  const std::string log = run.out + run.err;
  ASSERT_TRUE(run.exited) << log;
  ASSERT_EQ(run.exit_code, 0) << log;
  EXPECT_THAT(log, HasSubstr("ps 0: cluster from mpi: ps=127.0.0.1:"));
  EXPECT_THAT(log, HasSubstr("ps 0: the chief has ended and no worker answers; stopping"));
  EXPECT_TRUE(Result(log, 1, "test_accuracy").has_value()) << log;
  // Chance is 0.1; 600 asynchronous steps reach about 0.8.
  EXPECT_GE(Result(log, 0, "test_accuracy").value_or(0), 0.6) << log;
  EXPECT_GE(Result(log, 0, "global_step").value_or(0), 600) << log;
}

}  // namespace
}  // namespace rill
