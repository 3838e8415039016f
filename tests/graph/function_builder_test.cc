// Functions defined from C++ (a Scope's graph turned into a FunctionDef)
// and called with PartitionedCall / StatefulPartitionedCall.
#include "graph/function_builder.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// y = x * x + x.
absl::StatusOr<FunctionDef> SquarePlus() {
  const Scope s = ops::NewRootScope();
  const Output x = ops::Placeholder(s.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Add(s.WithOpName("y"), ops::Mul(s, x, x), x);
  return GraphToFunctionDef(*s.graph(), "SquarePlus", {x}, {.values = {y}, .names = {"y"}});
}

absl::StatusOr<std::vector<Tensor>> RunScope(const Scope& scope,
                                             const std::vector<std::string>& fetches) {
  ASSIGN_OR_RETURN(GraphDef def, scope.ToGraphDef());
  ASSIGN_OR_RETURN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  return session->Run({}, fetches);
}

TEST(FunctionBuilderTest, AFunctionFromAScopeRunsWhereItIsCalled) {
  auto fdef = SquarePlus();
  ASSERT_TRUE(fdef.ok()) << fdef.status();
  EXPECT_EQ(fdef->signature().input_arg(0).name(), "x");
  EXPECT_EQ(fdef->signature().output_arg(0).name(), "y");
  EXPECT_FALSE(fdef->signature().is_stateful());

  const Scope s = ops::NewRootScope();
  const Output a = ops::Const(s, {1.f, 2.f, 3.f});
  auto once = CallFunction(s.WithOpName("once"), *fdef, {a});
  ASSERT_TRUE(once.ok()) << once.status();
  auto twice = CallFunction(s.WithOpName("twice"), *fdef, {(*once)[0]});
  ASSERT_TRUE(twice.ok()) << twice.status();
  EXPECT_EQ((*once)[0].node()->op(), "PartitionedCall");
  EXPECT_EQ(s.graph()->library().function_size(), 1);

  auto out = RunScope(s, {(*once)[0].name(), (*twice)[0].name()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(testing::Values<float>((*out)[0]), ElementsAre(2, 6, 12));
  EXPECT_THAT(testing::Values<float>((*out)[1]), ElementsAre(6, 42, 156));
}

// A function that updates a variable through a resource argument: a
// StatefulPartitionedCall that a later read waits for.
TEST(FunctionBuilderTest, AStatefulFunctionUpdatesAVariable) {
  const Scope f = ops::NewRootScope();
  const Output handle = ops::Placeholder(f.WithOpName("v"), DT_RESOURCE);
  const Output delta = ops::Placeholder(f.WithOpName("delta"), DT_FLOAT);
  const Output sum = ops::Add(f, ops::ReadVariableOp(f, handle, DT_FLOAT), delta);
  const Operation assign = ops::AssignVariableOp(f.WithOpName("add"), handle, sum).operation;
  auto fdef = GraphToFunctionDef(*f.graph(), "AddTo", {handle, delta},
                                 {.values = {}, .names = {}, .control = {assign}});
  ASSERT_TRUE(fdef.ok()) << fdef.status();
  EXPECT_TRUE(fdef->signature().is_stateful());

  const Scope s = ops::NewRootScope();
  const Output v = ops::VarHandleOp(s.WithOpName("var"), DT_FLOAT, PartialTensorShape({}),
                                    ops::VarHandleOp::SharedName("var"));
  const Operation init =
      ops::AssignVariableOp(s.WithOpName("init"), v, ops::Const(s, 40.f)).operation;
  auto call = CallFunction(s.WithOpName("call").WithControlDependencies({init}), *fdef,
                           {v, ops::Const(s, 2.f)});
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->empty());
  const Output read = ops::ReadVariableOp(
      s.WithOpName("read").WithControlDependencies({Operation(s.graph()->FindNode("call"))}), v,
      DT_FLOAT);
  auto out = RunScope(s, {read.name()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<float>(), 42);
}

TEST(FunctionBuilderTest, MistakesAreNamed) {
  const Scope f = ops::NewRootScope();
  const Output x = ops::Placeholder(f.WithOpName("x"), DT_FLOAT);
  const Output stray = ops::Placeholder(f.WithOpName("stray"), DT_FLOAT);
  EXPECT_THAT(
      GraphToFunctionDef(*f.graph(), "F", {x}, {.values = {ops::Add(f, x, stray)}}).status(),
      StatusIs(absl::StatusCode::kInvalidArgument,
               HasSubstr("function 'F': it reads Placeholder 'stray', which is not among "
                         "its inputs")));
  EXPECT_THAT(GraphToFunctionDef(*f.graph(), "Neg", {x}, {.values = {x}}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("the name of an op")));

  auto fdef = SquarePlus();
  ASSERT_TRUE(fdef.ok()) << fdef.status();
  const Scope s = ops::NewRootScope();
  EXPECT_THAT(CallFunction(s, *fdef, {}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("function 'SquarePlus' takes 1 arguments; the call passes 0")));
  EXPECT_THAT(CallFunction(s, *fdef, {ops::Const(s, 1)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("argument 0 is int32, the function takes float")));
  FunctionDef other = *fdef;
  (*other.mutable_ret())["y"] = "x";
  EXPECT_THAT(CallFunction(s, other, {ops::Const(s, 1.f)}).status(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("another definition")));
}

}  // namespace
}  // namespace rill
