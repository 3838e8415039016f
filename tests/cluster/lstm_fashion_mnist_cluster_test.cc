// lstm_fashion_mnist between graphs (RILL_BIN here): 1 ps and 2 workers,
// one process each on 127.0.0.1, the weights on the ps and the while loop
// and its gradient loop on each worker.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/cluster/server_process.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::HasSubstr;

// The number after "key": on the output's result line; NaN when absent.
double ResultValue(const std::string& out, const std::string& key) {
  const size_t line = out.rfind("result: {");
  if (line == std::string::npos) return std::nan("");
  std::smatch match;
  const std::string result = out.substr(line);
  if (!std::regex_search(result, match, std::regex("\"" + key + "\": (-?[0-9.eE+-]+)"))) {
    return std::nan("");
  }
  return std::strtod(match[1].str().c_str(), nullptr);
}

TEST(LstmFashionMnistCluster, TwoWorkersTrainTheWeightsOnThePs) {
  if (!std::filesystem::exists("/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz")) {
    GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  }
  const std::vector<std::string> cluster = {
      absl::StrCat("--ps_hosts=127.0.0.1:", testing::FreePort()),
      absl::StrCat("--worker_hosts=127.0.0.1:", testing::FreePort(),
                   ",127.0.0.1:", testing::FreePort())};
  const auto task = [&](const char* job, int index, std::vector<std::string> more) {
    std::vector<std::string> args = cluster;
    args.push_back(absl::StrCat("--job_name=", job));
    args.push_back(absl::StrCat("--task_index=", index));
    args.insert(args.end(), more.begin(), more.end());
    return args;
  };
  const std::vector<std::string> training = {
      "--steps", "30", "--train_rows", "1280", "--test_rows", "500", "--threads", "1", "--quiet"};
  auto ps = testing::ServerProcess::Spawn(task("ps", 0, {}));
  ASSERT_TRUE(ps.ok()) << ps.status();
  // Worker 1 waits until worker 0 has initialized the variables.
  auto worker1 = testing::ServerProcess::Spawn(task("worker", 1, training));
  ASSERT_TRUE(worker1.ok()) << worker1.status();
  const testing::BoundedRun chief =
      testing::RunRill(task("worker", 0, training), {}, absl::Seconds(120));
  const testing::ExitStatus other = (*worker1)->WaitExit(absl::Seconds(120));

  ASSERT_TRUE(chief.exit.exited) << chief.err;
  EXPECT_EQ(chief.exit.code, 0) << chief.err << (*ps)->Log();
  EXPECT_THAT(chief.out, HasSubstr("worker 0: the variables on /job:ps/task:0 are ready"));
  EXPECT_LT(ResultValue(chief.out, "last_loss"), ResultValue(chief.out, "first_loss") - 0.2)
      << chief.out;
  ASSERT_TRUE(other.exited) << (*worker1)->Log();
  EXPECT_EQ(other.code, 0) << (*worker1)->Log();
  EXPECT_THAT((*worker1)->Log(), HasSubstr("\"task\": \"worker 1\""));
  EXPECT_TRUE((*ps)->Running()) << (*ps)->Log();
}

}  // namespace
}  // namespace rill
