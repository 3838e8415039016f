// Helpers shared by the tests: status assertions and the location of the
// shared test data.
#ifndef RILL_TESTS_TEST_UTIL_H_
#define RILL_TESTS_TEST_UTIL_H_

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gmock/gmock.h"
#include "graph/allocator.h"
#include "graph/log_sink.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"

namespace rill::testing {

// ../shared/testdata (from RILL_TESTDATA, set by meson).
std::string TestDataDir();
// The source tree root (from RILL_SOURCE_ROOT).
std::string SourceRoot();
// A port of 127.0.0.1 that nobody listened on a moment ago (0 if none).
int FreePort();
// Where server log lines that would clutter the test's output go: nowhere.
LogSink* QuietLog();
// A log for the code under test, read back by the test.
class CapturedLog {
 public:
  CapturedLog();
  ~CapturedLog();
  CapturedLog(const CapturedLog&) = delete;
  CapturedLog& operator=(const CapturedLog&) = delete;
  LogSink* sink() { return &sink_; }
  // Everything written so far.
  std::string Read() const;

 private:
  std::FILE* const file_;
  FileLogSink sink_;
};

// The data the regression graphs' users feed (testdata/tf_graphs/README):
// 100 points x in [-1, 1) and y = 0.1 x + 0.3.
Tensor RegressionXs();
Tensor RegressionYs();
// The seed scripts' line: 16 points x in [-2, 2) and y = 2 x + 10.
Tensor LineXs();
Tensor LineYs();
// Floats in [-0.5, 0.5) from a fixed generator: the same for a seed on
// every machine.
Tensor RandomTensor(const TensorShape& shape, int seed);
// A tensor's elements as a vector, for matchers.
template <typename T>
std::vector<T> Values(const Tensor& t) {
  return std::vector<T>(t.data<T>(), t.data<T>() + t.NumElements());
}

// Reads a whole file; fails the test when it cannot.
std::string ReadFileOrDie(const std::string& path);
// A fresh directory under the system temp dir, removed by nobody (tests
// name files under it uniquely).
std::string MakeTempDir();

// Lowers the process's limit on one tensor's bytes (MaxTensorBytes) for
// its lifetime, so that a test can show a refusal without the memory a
// real one would take; the default comes back after.
class ScopedMaxTensorBytes {
 public:
  explicit ScopedMaxTensorBytes(size_t bytes) { SetMaxTensorBytes(bytes); }
  ~ScopedMaxTensorBytes() { SetMaxTensorBytes(0); }
  ScopedMaxTensorBytes(const ScopedMaxTensorBytes&) = delete;
  ScopedMaxTensorBytes& operator=(const ScopedMaxTensorBytes&) = delete;
};

struct ProgramResult {
  bool exited = false;  // False when killed by a signal.
  int exit_code = -1;
  std::string out;
  std::string err;
};
// Runs argv[0] with the arguments and waits for it. stdout and stderr go
// to files, so a chatty child cannot block on a pipe.
ProgramResult RunProgram(const std::vector<std::string>& argv);

inline const absl::Status& GetStatus(const absl::Status& s) { return s; }
template <typename T>
const absl::Status& GetStatus(const absl::StatusOr<T>& s) {
  return s.status();
}

// EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument,
//                              ::testing::HasSubstr("node 'a'")));
MATCHER_P2(StatusIs, code, message_matcher, "") {
  const absl::Status& status = ::rill::testing::GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.code() == code &&
         ::testing::ExplainMatchResult(message_matcher, std::string(status.message()),
                                       result_listener);
}

MATCHER(IsOk, "") {
  const absl::Status& status = ::rill::testing::GetStatus(arg);
  *result_listener << "status is " << status.ToString();
  return status.ok();
}

// EXPECT_THAT(GetTypeAttr(node, "T"), IsOkAndHolds(DT_FLOAT));
MATCHER_P(IsOkAndHolds, matcher, "") {
  if (!arg.ok()) {
    *result_listener << "status is " << arg.status().ToString();
    return false;
  }
  return ::testing::ExplainMatchResult(matcher, *arg, result_listener);
}

}  // namespace rill::testing

#define EXPECT_OK(expr) EXPECT_THAT((expr), ::rill::testing::IsOk())
#define ASSERT_OK(expr) ASSERT_THAT((expr), ::rill::testing::IsOk())

#define RILL_TEST_CONCAT_INNER_(a, b) a##b
#define RILL_TEST_CONCAT_(a, b) RILL_TEST_CONCAT_INNER_(a, b)
// ASSERT_OK_AND_ASSIGN(auto graph, ImportGraphDef(def, registry));
#define ASSERT_OK_AND_ASSIGN(lhs, expr) \
  RILL_ASSERT_OK_AND_ASSIGN_IMPL_(RILL_TEST_CONCAT_(rill_test_statusor_, __LINE__), lhs, expr)
#define RILL_ASSERT_OK_AND_ASSIGN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                    \
  ASSERT_OK(statusor);                                       \
  lhs = std::move(statusor).value()

#endif  // RILL_TESTS_TEST_UTIL_H_
