// AddGradients: which nodes it adds and where, how gradients of several
// paths and ys combine, and how it fails.
#include "ops/gradients.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::AllOf;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

Output ScalarInput(const Scope& s, const char* name) {
  return ops::Placeholder(s.WithOpName(name), DT_DOUBLE, ops::Placeholder::Shape({}));
}

// Runs the scope's graph and returns the scalar value of each fetch.
std::vector<double> Evaluate(const Scope& s, const std::vector<std::pair<Output, double>>& feeds,
                             const std::vector<Output>& fetches) {
  absl::StatusOr<GraphDef> graph = s.ToGraphDef();
  EXPECT_OK(graph);
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), *graph);
  EXPECT_OK(session);
  if (!session.ok()) return {};
  std::vector<std::pair<std::string, Tensor>> inputs;
  for (const auto& [x, v] : feeds) inputs.emplace_back(x.name(), Tensor::Scalar<double>(v));
  std::vector<std::string> names;
  for (const Output& f : fetches) names.push_back(f.name());
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run(inputs, names);
  EXPECT_OK(out);
  std::vector<double> values;
  if (!out.ok()) return values;
  for (const Tensor& t : *out) values.push_back(t.scalar<double>());
  return values;
}

TEST(AddGradients, NamesNewNodesUnderAFreshGradientsScope) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Square(s, x);
  const int before = s.graph()->num_nodes();
  ASSERT_OK_AND_ASSIGN(std::vector<Output> first, AddGradients(s, {y}, {x}));
  const int after_first = s.graph()->num_nodes();
  ASSERT_OK_AND_ASSIGN(std::vector<Output> second, AddGradients(s, {y}, {x}));
  ASSERT_GT(after_first, before);
  for (int id = before; id < s.graph()->num_nodes(); ++id) {
    const std::string& name = s.graph()->nodes()[id]->name();
    EXPECT_THAT(name, StartsWith(id < after_first ? "gradients/" : "gradients_1/"));
  }
  EXPECT_THAT(first[0].name(), StartsWith("gradients/Square_grad/"));
  EXPECT_THAT(second[0].name(), StartsWith("gradients_1/Square_grad/"));
}

TEST(AddGradients, FollowsTheCallersScope) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Exp(s, x);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> dx, AddGradients(s.NewSubScope("train"), {y}, {x}));
  EXPECT_THAT(dx[0].name(), StartsWith("train/gradients/Exp_grad/"));
}

TEST(AddGradients, SumsTheGradientsOfSeveralPaths) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  // y = x * x + 3x: dy/dx = 2x + 3.
  const Output y = ops::Add(s, ops::Mul(s, x, x), ops::Mul(s, x, 3.0));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> dx, AddGradients(s, {y}, {x}));
  EXPECT_EQ(dx[0].node()->op(), "AddN");
  EXPECT_EQ(dx[0].node()->num_inputs(), 3);
  EXPECT_THAT(Evaluate(s, {{x, 2.0}}, dx), ElementsAre(7.0));
}

TEST(AddGradients, SumsOverSeveralYs) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y1 = ops::Mul(s, x, 2.0);
  const Output y2 = ops::Square(s, x);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> dx, AddGradients(s, {y1, y2}, {x}));
  EXPECT_THAT(Evaluate(s, {{x, 5.0}}, dx), ElementsAre(12.0));
}

TEST(AddGradients, WeighsEachYByItsGradY) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y1 = ops::Mul(s, x, 2.0);
  const Output y2 = ops::Square(s, x);
  const Output w1 = ops::Const(s, 10.0);
  const Output w2 = ops::Const(s, -1.0);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> dx, AddGradients(s, {y1, y2}, {x}, {w1, w2}));
  EXPECT_THAT(Evaluate(s, {{x, 5.0}}, dx), ElementsAre(10.0));
}

TEST(AddGradients, GivesEachXItsPartialDerivative) {
  const Scope s = ops::NewRootScope();
  const Output a = ScalarInput(s, "a");
  const Output b = ScalarInput(s, "b");
  const Output y = ops::Mul(s, ops::Square(s, a), b);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {a, b}));
  EXPECT_THAT(Evaluate(s, {{a, 3.0}, {b, 4.0}}, d), ElementsAre(24.0, 9.0));
}

// x2 depends on x1, so d/dx1 includes the path through x2.
TEST(AddGradients, CountsPathsThroughAnotherX) {
  const Scope s = ops::NewRootScope();
  const Output x1 = ScalarInput(s, "x1");
  const Output x2 = ops::Mul(s, x1, 3.0);
  const Output y = ops::Add(s, ops::Square(s, x2), x1);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {x1, x2}));
  // dy/dx2 = 2 x2 = 12; dy/dx1 = 1 + 3 * 12 = 37.
  EXPECT_THAT(Evaluate(s, {{x1, 2.0}}, d), ElementsAre(37.0, 12.0));
}

TEST(AddGradients, GivesAnUnreachableXZeros) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output unused = ScalarInput(s, "unused");
  const Output y = ops::Exp(s, x);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {unused}));
  EXPECT_EQ(d[0].node()->op(), "ZerosLike");
  EXPECT_THAT(d[0].name(), StartsWith("gradients/"));
  EXPECT_THAT(Evaluate(s, {{x, 1.0}, {unused, 4.0}}, d), ElementsAre(0.0));
}

TEST(AddGradients, OfXWithRespectToItselfIsOne) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {x}, {x}));
  EXPECT_EQ(d[0].node()->op(), "OnesLike");
  EXPECT_THAT(Evaluate(s, {{x, 4.0}}, d), ElementsAre(1.0));
}

TEST(AddGradients, OnlyBackpropagatesThroughNodesBetweenXsAndYs) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output c = ScalarInput(s, "c");
  // Log(c) does not depend on x, so its gradient is never built.
  const Output y = ops::Mul(s, x, ops::Log(s, c));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {x}));
  for (const Node* node : s.graph()->nodes()) {
    EXPECT_THAT(node->name(), ::testing::Not(HasSubstr("Log_grad")));
  }
}

TEST(AddGradients, FailsNamingTheOpWithoutAGradient) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Tanh(s.WithOpName("act"), ops::Mul(s, x, x));
  GradientRegistry registry;
  RegisterMathGradients(registry);
  GradientRegistry without_tanh;
  without_tanh.Register("Mul", *registry.Lookup("Mul").value());
  EXPECT_THAT(AddGradients(s, {y}, {x}, {}, without_tanh),
              StatusIs(absl::StatusCode::kNotFound,
                       HasSubstr("No gradient defined for operation 'act' (op type: Tanh)")));
}

// OnesLike(Square(x)) depends on x but is declared to have no gradient:
// nothing flows through it, without an error, and Square's gradient is
// never built.
TEST(AddGradients, StopsSilentlyAtNoGradientOps) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Mul(s, x, ops::OnesLike(s, ops::Square(s, x)));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {x}));
  for (const Node* node : s.graph()->nodes()) {
    EXPECT_THAT(node->name(), ::testing::Not(HasSubstr("Square_grad")));
  }
  EXPECT_THAT(Evaluate(s, {{x, 3.0}}, d), ElementsAre(1.0));
}

TEST(AddGradients, StopsAtStopGradient) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Mul(s, x, ops::StopGradient(s, ops::Square(s, x)));
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {x}));
  EXPECT_THAT(Evaluate(s, {{x, 3.0}}, d), ElementsAre(9.0));
}

// The int32 edge between the casts carries nothing, so even a registry
// that knows no op at all succeeds.
TEST(AddGradients, IntegerEdgesCarryNoGradient) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Cast(s, ops::Cast(s, x, DT_INT32), DT_DOUBLE);
  const GradientRegistry empty;
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {y}, {x}, {}, empty));
  EXPECT_EQ(d[0].node()->op(), "ZerosLike");
}

// Runs `targets`, then returns the elements of `fetch` (a double tensor).
std::vector<double> RunAfter(const Scope& s, const std::vector<std::string>& targets,
                             const Output& fetch) {
  absl::StatusOr<std::unique_ptr<Session>> session =
      NewSession(SessionOptions(), s.ToGraphDef().value());
  EXPECT_OK(session);
  if (!session.ok()) return {};
  EXPECT_OK((*session)->Run({}, {}, targets).status());
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run({}, {fetch.name()});
  EXPECT_OK(out);
  if (!out.ok()) return {};
  const Tensor& t = out->front();
  return std::vector<double>(t.data<double>(), t.data<double>() + t.NumElements());
}

// As with tf.Variable: the read ("w/read") is what the gradient is taken
// with respect to.
TEST(AddGradients, DifferentiatesWithRespectToAVariableRead) {
  const Scope s = ops::NewRootScope();
  const Variable w(s, "w", Tensor::FromVector<double>({1, 2}, {2}));
  const Output loss = ops::Sum(s, ops::Square(s, w), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {loss}, {w.value()}));
  EXPECT_EQ(w.value().name(), "w/read");
  const Operation init = GlobalVariablesInitializer(s);
  EXPECT_THAT(RunAfter(s, {init.name()}, d[0]), ElementsAre(2.0, 4.0));
}

// A resource variable's read passes the gradient on to its handle.
TEST(AddGradients, DifferentiatesWithRespectToAResourceHandle) {
  const Scope s = ops::NewRootScope();
  const Output handle =
      ops::VarHandleOp(s, DT_DOUBLE, PartialTensorShape({2}), ops::VarHandleOp::SharedName("v"));
  const Operation assign =
      ops::AssignVariableOp(s, handle, Tensor::FromVector<double>({3, -1}, {2})).operation;
  const Output loss = ops::Sum(s, ops::Square(s, ops::ReadVariableOp(s, handle, DT_DOUBLE)), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {loss}, {handle}));
  EXPECT_EQ(d[0].type(), DT_DOUBLE);
  EXPECT_THAT(RunAfter(s, {assign.name()}, d[0]), ElementsAre(6.0, -2.0));
}

// ResourceGather's gradient reaches the handle as a dense tensor shaped
// like the variable, rows gathered twice summed.
TEST(AddGradients, ResourceGatherScattersIntoTheVariablesShape) {
  const Scope s = ops::NewRootScope();
  const Output handle =
      ops::VarHandleOp(s, DT_DOUBLE, PartialTensorShape({3}), ops::VarHandleOp::SharedName("v"));
  const Operation assign =
      ops::AssignVariableOp(s, handle, Tensor::FromVector<double>({3, -1, 2}, {3})).operation;
  const Output rows = ops::ResourceGather(s, handle, {2, 0, 2}, DT_DOUBLE);
  const Output loss = ops::Sum(s, ops::Square(s, rows), 0);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> d, AddGradients(s, {loss}, {handle}));
  EXPECT_THAT(RunAfter(s, {assign.name()}, d[0]), ElementsAre(6.0, 0.0, 8.0));
}

TEST(AddGradients, BuildsTheSameGraphEveryTime) {
  const auto build = [] {
    const Scope s = ops::NewRootScope();
    const Output x = ScalarInput(s, "x");
    const Output a = ops::Square(s, x);
    const Output b = ops::Exp(s, x);
    const Output y = ops::AddN(s, {a, b, ops::Mul(s, a, b)});
    EXPECT_OK(AddGradients(s, {y, a}, {x}).status());
    const GraphDef graph = s.ToGraphDef().value();
    std::vector<std::string> nodes;
    for (const NodeDef& node : graph.node()) {
      std::string line = node.name() + " = " + node.op() + "(";
      for (const std::string& input : node.input()) line += input + ",";
      nodes.push_back(line + ")");
    }
    return nodes;
  };
  EXPECT_EQ(build(), build());
}

TEST(AddGradients, RejectsMismatchedGradYs) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  const Output y = ops::Square(s, x);
  EXPECT_THAT(AddGradients(s, {y}, {x}, {x, x}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("2 grad_ys for 1 ys")));
  const Output int_dy = ops::Const(s, 1);
  EXPECT_THAT(AddGradients(s, {y}, {x}, {int_dy}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("grad_ys[0]"), HasSubstr("int32"), HasSubstr("double"))));
}

TEST(AddGradients, RejectsNullOutputs) {
  const Scope s = ops::NewRootScope();
  const Output x = ScalarInput(s, "x");
  EXPECT_THAT(AddGradients(s, {Output()}, {x}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("ys[0] is null")));
  EXPECT_THAT(AddGradients(s, {}, {x}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("at least one y")));
}

TEST(GradientRegistry, TellsNoGradientFromUnknown) {
  GradientRegistry r;
  r.RegisterNoGradient("Shape");
  EXPECT_THAT(r.Lookup("Shape"), IsOkAndHolds(::testing::IsNull()));
  EXPECT_THAT(r.Lookup("Tanh"), StatusIs(absl::StatusCode::kNotFound, HasSubstr("op type 'Tanh'")));
}

// Every standard op has a gradient or is declared to have none, except
// these: sources, state updates, I/O and transfers, which no path from an
// x to a y crosses, MaxPoolGrad (no MaxPoolGradGrad op to build it), and
// Mod and TruncateMod, which TensorFlow cannot differentiate either.
TEST(StandardGradients, CoverEveryStandardOp) {
  const std::vector<std::string> without = {
      "Const", "Placeholder", "NoOp", "VariableV2", "Variable", "VarHandleOp", "AssignVariableOp",
      "AssignAddVariableOp", "AssignSubVariableOp", "Assign", "AssignAdd", "AssignSub",
      "ApplyGradientDescent", "ApplyMomentum", "ApplyAdam", "SaveV2", "RestoreV2",
      "MergeV2Checkpoints", "ShardedFilename", "ShardedFilespec", "StringJoin", "_Send", "_Recv",
      "MaxPoolGrad", "Mod", "TruncateMod",
      // As in TensorFlow's C++ API: no gradient through a call or functional control flow.
      "PartitionedCall", "StatefulPartitionedCall", "If", "StatelessIf", "Case", "StatelessCase",
      "While", "StatelessWhile"};
  for (const std::string& op : StandardOps().OpNames()) {
    if (std::find(without.begin(), without.end(), op) != without.end()) continue;
    EXPECT_OK(StandardGradients().Lookup(op).status()) << op;
  }
}

}  // namespace
}  // namespace rill
