// Variables through a Session: reference variables (VariableV2 with Assign,
// AssignAdd, AssignSub) and resource variables (VarHandleOp with
// AssignVariableOp and ReadVariableOp).
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

template <typename T>
Tensor MakeTensor(const TensorShape& shape, std::vector<T> values) {
  return Tensor::FromVector<T>(absl::MakeConstSpan(values), shape);
}

MATCHER_P(TensorEq, expected, "") {
  *result_listener << arg.DebugString();
  return TensorsEqual(arg, expected);
}

std::unique_ptr<Session> MakeSession(const Scope& scope, SessionOptions options = {}) {
  absl::StatusOr<GraphDef> def = scope.ToGraphDef();
  EXPECT_OK(def);
  if (!def.ok()) return nullptr;
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(options, *def);
  EXPECT_OK(session);
  return session.ok() ? *std::move(session) : nullptr;
}

// The single fetch `name` of a run with no feeds.
absl::StatusOr<Tensor> Fetch(Session& session, const std::string& name) {
  absl::StatusOr<std::vector<Tensor>> out = session.Run({}, {name});
  if (!out.ok()) return out.status();
  return (*out)[0];
}

TEST(Variables, StateSurvivesAcrossRuns) {
  Scope scope = ops::NewRootScope();
  Variable v(scope, "v", MakeTensor<float>({2}, {1, 2}));
  ops::AssignAdd add(scope.WithOpName("add"), v.ref(), MakeTensor<float>({2}, {10, 20}));
  GlobalVariablesInitializer(scope);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init"}));
  EXPECT_THAT(Fetch(*session, "add"), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {11, 22}))));
  EXPECT_THAT(Fetch(*session, "add"), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {21, 42}))));
  EXPECT_THAT(Fetch(*session, "v/read"), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {21, 42}))));
}

TEST(Variables, ReadingBeforeInitializationFailsNamingTheVariable) {
  Scope scope = ops::NewRootScope();
  Variable v(scope, "hidden/weights", MakeTensor<float>({2}, {1, 2}));
  ops::Identity use(scope.WithOpName("use"), v);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(Fetch(*session, "use"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("hidden/weights")));
}

TEST(Variables, UpdatingBeforeInitializationFailsNamingTheVariable) {
  Scope scope = ops::NewRootScope();
  Variable v(scope, "counter", Tensor::Scalar<int64_t>(0));
  ops::AssignAdd add(scope.WithOpName("add"), v.ref(), Tensor::Scalar<int64_t>(1));
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(session->Run({}, {}, {"add"}),
              StatusIs(absl::StatusCode::kFailedPrecondition,
                       HasSubstr("Attempting to use uninitialized value counter")));
}

TEST(Variables, InitOpAssignsEveryInitialValue) {
  Scope scope = ops::NewRootScope();
  Variable a(scope, "a", MakeTensor<double>({2, 2}, {1, 2, 3, 4}));
  Variable b(scope, "b", Tensor::Scalar<int32_t>(7));
  ops::IsVariableInitialized a_ready(scope.WithOpName("a_ready"), a.ref());
  GlobalVariablesInitializer(scope);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(Fetch(*session, "a_ready"), IsOkAndHolds(TensorEq(Tensor::Scalar(false))));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  EXPECT_THAT(Fetch(*session, "a_ready"), IsOkAndHolds(TensorEq(Tensor::Scalar(true))));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> values, session->Run({}, {"a/read", "b/read"}));
  EXPECT_THAT(values[0], TensorEq(MakeTensor<double>({2, 2}, {1, 2, 3, 4})));
  EXPECT_THAT(values[1], TensorEq(Tensor::Scalar<int32_t>(7)));
}

TEST(Variables, AssignFromAFeedAndAssignSub) {
  Scope scope = ops::NewRootScope();
  Variable v(scope, "v", MakeTensor<float>({3}, {0, 0, 0}));
  ops::Placeholder fed(scope.WithOpName("fed"), DT_FLOAT);
  ops::Assign set(scope.WithOpName("set"), v.ref(), fed);
  ops::AssignSub sub(scope.WithOpName("sub"), v.ref(), MakeTensor<float>({3}, {1, 1, 1}));
  GlobalVariablesInitializer(scope);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init"}));
  ASSERT_OK(session->Run({{"fed", MakeTensor<float>({3}, {5, 6, 7})}}, {}, {"set"}));
  ASSERT_OK(session->Run({}, {}, {"sub"}));
  EXPECT_THAT(Fetch(*session, "v/read"), IsOkAndHolds(TensorEq(MakeTensor<float>({3}, {4, 5, 6}))));
  // The variable keeps its own copy: changing the fed tensor afterwards
  // does not change it.
  Tensor fed_value = MakeTensor<float>({3}, {9, 9, 9});
  ASSERT_OK(session->Run({{"fed", fed_value}}, {}, {"set"}));
  fed_value.data<float>()[0] = -1;
  EXPECT_THAT(Fetch(*session, "v/read"), IsOkAndHolds(TensorEq(MakeTensor<float>({3}, {9, 9, 9}))));
}

TEST(Variables, ConcurrentLockedIncrementsAreNotLost) {
  Scope scope = ops::NewRootScope();
  Variable counter(scope, "counter", Tensor::Scalar<int64_t>(0));
  ops::AssignAdd add(scope.WithOpName("add"), counter.ref(), Tensor::Scalar<int64_t>(1),
                     ops::AssignAdd::UseLocking(true));
  GlobalVariablesInitializer(scope);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"init"}));
  constexpr int kThreads = 4, kRuns = 50;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < kRuns; ++i) EXPECT_OK(session->Run({}, {}, {"add"}));
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_THAT(Fetch(*session, "counter/read"),
              IsOkAndHolds(TensorEq(Tensor::Scalar<int64_t>(kThreads * kRuns))));
}

TEST(Variables, TwoSessionsDoNotShareState) {
  Scope scope = ops::NewRootScope();
  Variable v(scope, "v", Tensor::Scalar<float>(1));
  ops::AssignAdd add(scope.WithOpName("add"), v.ref(), Tensor::Scalar<float>(1));
  GlobalVariablesInitializer(scope);
  std::unique_ptr<Session> first = MakeSession(scope);
  std::unique_ptr<Session> second = MakeSession(scope);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_OK(first->Run({}, {}, {"init"}));
  ASSERT_OK(first->Run({}, {}, {"add"}));
  EXPECT_THAT(Fetch(*second, "v/read"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("v")));
  ASSERT_OK(second->Run({}, {}, {"init"}));
  EXPECT_THAT(Fetch(*second, "v/read"), IsOkAndHolds(TensorEq(Tensor::Scalar<float>(1))));
  EXPECT_THAT(Fetch(*first, "v/read"), IsOkAndHolds(TensorEq(Tensor::Scalar<float>(2))));
}

TEST(ResourceVariables, AssignThenReadAcrossRuns) {
  Scope scope = ops::NewRootScope();
  ops::VarHandleOp handle(scope.WithOpName("rv"), DT_FLOAT, PartialTensorShape({2}),
                          ops::VarHandleOp::SharedName("rv"));
  ops::AssignVariableOp assign(scope.WithOpName("assign"), handle, MakeTensor<float>({2}, {3, 4}));
  ops::ReadVariableOp read(scope.WithOpName("read"), handle, DT_FLOAT);
  ops::Mul twice(scope.WithOpName("twice"), read, 2.0f);
  ops::AssignVariableOp update(scope.WithOpName("update"), handle, twice);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"assign"}));
  EXPECT_THAT(Fetch(*session, "read"), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {3, 4}))));
  ASSERT_OK(session->Run({}, {}, {"update"}));
  ASSERT_OK(session->Run({}, {}, {"update"}));
  EXPECT_THAT(Fetch(*session, "read"), IsOkAndHolds(TensorEq(MakeTensor<float>({2}, {12, 16}))));
}

TEST(ResourceVariables, ReadBeforeAssignFailsNamingTheVariable) {
  Scope scope = ops::NewRootScope();
  ops::VarHandleOp handle(scope.WithOpName("handle"), DT_FLOAT, PartialTensorShape({}),
                          ops::VarHandleOp::SharedName("learning_rate"));
  ops::ReadVariableOp read(scope.WithOpName("read"), handle, DT_FLOAT);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  EXPECT_THAT(Fetch(*session, "read"),
              StatusIs(absl::StatusCode::kFailedPrecondition, HasSubstr("learning_rate")));
}

TEST(ResourceVariables, ReadWithAnotherDtypeIsInvalidArgument) {
  Scope scope = ops::NewRootScope();
  ops::VarHandleOp handle(scope.WithOpName("handle"), DT_FLOAT, PartialTensorShape({}));
  ops::AssignVariableOp assign(scope.WithOpName("assign"), handle, 1.0f);
  ops::ReadVariableOp read(scope.WithOpName("read"), handle, DT_INT32);
  std::unique_ptr<Session> session = MakeSession(scope);
  ASSERT_NE(session, nullptr);
  ASSERT_OK(session->Run({}, {}, {"assign"}));
  EXPECT_THAT(Fetch(*session, "read"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("int32")));
}

TEST(ResourceVariables, TwoSessionsDoNotShareState) {
  Scope scope = ops::NewRootScope();
  ops::VarHandleOp handle(scope.WithOpName("handle"), DT_INT64, PartialTensorShape({}),
                          ops::VarHandleOp::SharedName("steps"));
  ops::Placeholder fed(scope.WithOpName("fed"), DT_INT64);
  ops::AssignVariableOp assign(scope.WithOpName("assign"), handle, fed);
  ops::ReadVariableOp read(scope.WithOpName("read"), handle, DT_INT64);
  std::unique_ptr<Session> first = MakeSession(scope);
  std::unique_ptr<Session> second = MakeSession(scope);
  ASSERT_NE(first, nullptr);
  ASSERT_NE(second, nullptr);
  ASSERT_OK(first->Run({{"fed", Tensor::Scalar<int64_t>(5)}}, {}, {"assign"}));
  ASSERT_OK(second->Run({{"fed", Tensor::Scalar<int64_t>(9)}}, {}, {"assign"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> a, first->Run({}, {"read"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> b, second->Run({}, {"read"}));
  EXPECT_THAT(a, ElementsAre(TensorEq(Tensor::Scalar<int64_t>(5))));
  EXPECT_THAT(b, ElementsAre(TensorEq(Tensor::Scalar<int64_t>(9))));
}

}  // namespace
}  // namespace rill
