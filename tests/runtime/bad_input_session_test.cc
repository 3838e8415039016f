// A local session given hostile sizes and values ends each step with a clean
// error naming the node, computes the integer quotients that trap in plain
// C++, and keeps running good steps afterwards.
#include <memory>
#include <string>
#include <vector>

#include "graph/tensor.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/runtime/bad_input_graphs.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::BadInputCase;
using ::rill::testing::BadInputCases;
using ::rill::testing::ExpectGoodStepRuns;
using ::rill::testing::kBadInputTensorLimit;
using ::rill::testing::ScopedMaxTensorBytes;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

SessionOptions LimitedOptions() {
  SessionOptions options;
  options.max_tensor_bytes = kBadInputTensorLimit;
  return options;
}

TEST(BadInputSession, EachCaseFailsNamingItsNodeAndGoodStepsStillRun) {
  // The session's limit is process-wide; it goes back to the default after.
  const ScopedMaxTensorBytes restore_default(kBadInputTensorLimit);
  const SessionOptions options = LimitedOptions();
  for (const BadInputCase& c : BadInputCases("")) {
    SCOPED_TRACE(c.name);
    EXPECT_THAT(RunBadInputCase(options, c), StatusIs(c.code, HasSubstr("'" + c.node + "'")));
    ExpectGoodStepRuns(options, "");
  }
}

TEST(BadInputSession, SessionOptionsSetTheLimitOnOneTensor) {
  const ScopedMaxTensorBytes restore_default(kBadInputTensorLimit);
  SessionOptions options;
  options.max_tensor_bytes = 4096;
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, GraphDef()));
  EXPECT_EQ(MaxTensorBytes(), 4096u);
}

TEST(BadInputSession, MostNegativeOverMinusOneWrapsInEveryDivisionOp) {
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session,
                       NewSession(SessionOptions(), testing::MostNegativeOverMinusOneGraph("")));
  const std::vector<std::string> fetches = testing::MostNegativeOverMinusOneFetches();
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, session->Run({}, fetches));
  testing::ExpectWrappedQuotients(fetches, values);
}

}  // namespace
}  // namespace rill
