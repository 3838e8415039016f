// ops::Cond: the branch taken runs, the other does not, tensors from
// outside come through Switches, and conds nest in loops.
#include "graph/cond.h"

#include <memory>
#include <string>
#include <vector>

#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

absl::StatusOr<std::vector<Tensor>> RunScope(
    const Scope& scope, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<Output>& fetches) {
  ASSIGN_OR_RETURN(GraphDef def, scope.ToGraphDef());
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  std::vector<std::string> names;
  for (const Output& fetch : fetches) names.push_back(fetch.name());
  return session->Run(feeds, names);
}

// tf.cond(x < y, lambda: x * 17, lambda: y + 23), as in
// control_flow_ops_py_test.py's testCond cases.
TEST(CondTest, RunsOnlyTheBranchTaken) {
  Scope root = ops::NewRootScope();
  auto x = ops::Placeholder(root.WithOpName("x"), DT_INT32);
  auto y = ops::Placeholder(root.WithOpName("y"), DT_INT32);
  auto result = ops::Cond(
      root, ops::Less(root, x, y),
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Mul(s, x, 17));
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Add(s, y, 23));
        return s.status();
      });
  ASSERT_TRUE(result.ok()) << result.status();
  auto taken = RunScope(root, {{"x", Tensor::Scalar<int32_t>(2)}, {"y", Tensor::Scalar<int32_t>(5)}},
                        *result);
  ASSERT_TRUE(taken.ok()) << taken.status();
  EXPECT_EQ((*taken)[0].scalar<int32_t>(), 34);
  auto other = RunScope(root, {{"x", Tensor::Scalar<int32_t>(9)}, {"y", Tensor::Scalar<int32_t>(5)}},
                        *result);
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ((*other)[0].scalar<int32_t>(), 28);
}

// An untaken branch that would fail (a reshape to a wrong size) never runs.
TEST(CondTest, TheUntakenBranchDoesNotRun) {
  Scope root = ops::NewRootScope();
  auto p = ops::Placeholder(root.WithOpName("p"), DT_BOOL);
  auto v = ops::Const(root, Tensor::FromVector<float>({1, 2, 3, 4}, TensorShape({4})), DT_FLOAT);
  auto result = ops::Cond(
      root, p,
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Reshape(s, v, {2, 2}));
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Reshape(s, v, {2, 2}));
        return s.status();
      });
  ASSERT_TRUE(result.ok()) << result.status();
  auto out = RunScope(root, {{"p", Tensor::Scalar<bool>(true)}}, *result);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].shape(), TensorShape({2, 2}));
}

TEST(CondTest, BranchesMustAgree) {
  Scope root = ops::NewRootScope();
  auto p = ops::Placeholder(root, DT_BOOL);
  auto result = ops::Cond(
      root, p,
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Const(s, Tensor::Scalar<int32_t>(1), DT_INT32));
        return s.status();
      },
      [&](const Scope& s, std::vector<Output>* out) {
        out->push_back(ops::Const(s, Tensor::Scalar<float>(1), DT_FLOAT));
        return s.status();
      });
  EXPECT_THAT(result, StatusIs(absl::StatusCode::kInvalidArgument,
                               HasSubstr("value 0 is int32 in the then branch but float")));
}

TEST(CondTest, PredicateMustBeBool) {
  Scope root = ops::NewRootScope();
  auto p = ops::Placeholder(root, DT_INT32);
  const ops::BranchFn nothing = [](const Scope& s, std::vector<Output>*) { return s.status(); };
  EXPECT_THAT(ops::Cond(root, p, nothing, nothing),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("must be a bool scalar")));
}

// i = 0, s = 0; while i < 10: s += (i < 5 ? i : 1); i += 1  ->  10 + 5 = 15.
TEST(CondTest, CondInsideALoop) {
  Scope root = ops::NewRootScope();
  auto zero = ops::Const(root, Tensor::Scalar<int32_t>(0), DT_INT32);
  std::vector<Output> outputs;
  ASSERT_TRUE(ops::WhileLoop(
                  root, {zero, zero},
                  [](const Scope& s, const std::vector<Output>& in, Output* out) {
                    *out = ops::Less(s, in[0], 10);
                    return s.status();
                  },
                  [](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
                    auto added = ops::Cond(
                        s, ops::Less(s, in[0], 5),
                        [&](const Scope& t, std::vector<Output>* o) {
                          o->push_back(ops::Add(t, in[1], in[0]));
                          return t.status();
                        },
                        [&](const Scope& e, std::vector<Output>* o) {
                          o->push_back(ops::Add(e, in[1], 1));
                          return e.status();
                        });
                    if (!added.ok()) return added.status();
                    out->push_back(ops::Add(s, in[0], 1));
                    out->push_back((*added)[0]);
                    return s.status();
                  },
                  &outputs)
                  .ok())
      << root.status();
  auto out = RunScope(root, {}, outputs);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 10);
  EXPECT_EQ((*out)[1].scalar<int32_t>(), 15);
}

}  // namespace
}  // namespace rill
