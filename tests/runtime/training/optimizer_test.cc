// Optimizers through a Session on loss = sum((w - target)^2) (gradient
// 2 (w - target)), step by step against the update formulas computed here.
#include "runtime/training/optimizer.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "gmock/gmock.h"
#include "graph/status_macros.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "ops/ops.h"
#include "runtime/distributed/server.h"
#include "runtime/session.h"
#include "runtime/training/gradient_compression.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::rill::testing::Values;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

// A step of an optimizer on the values of w, given the gradient.
template <typename T>
using ReferenceStep = std::function<void(int step, const std::vector<T>& grad, std::vector<T>& w)>;

// Builds loss = sum((w - target)^2), minimizes it with `optimizer` for
// `steps` runs and checks w after each against `reference`.
template <typename T>
void CheckAgainstReference(Optimizer& optimizer, const ReferenceStep<T>& reference,
                           double tolerance, int steps = 4) {
  const std::vector<T> w0 = {T(1.5), T(-2), T(0.25)};
  const std::vector<T> target = {T(0.5), T(1), T(-1)};
  Scope scope = ops::NewRootScope();
  Variable w(scope, "w", Tensor::FromVector<T>(absl::MakeConstSpan(w0), TensorShape({3})));
  const ops::Sub diff(scope, w,
                      Tensor::FromVector<T>(absl::MakeConstSpan(target), TensorShape({3})));
  const ops::Sum loss(scope.WithOpName("loss"), ops::Square(scope, diff), 0);
  ASSERT_OK_AND_ASSIGN(Operation train, optimizer.Minimize(scope, loss, {w}));
  GlobalVariablesInitializer(scope);
  ASSERT_OK_AND_ASSIGN(GraphDef def, scope.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  ASSERT_OK(session->Run({}, {}, {"init"}));

  std::vector<T> expected = w0;
  for (int step = 1; step <= steps; ++step) {
    SCOPED_TRACE(absl::StrFormat("step %d", step));
    std::vector<T> grad(3);
    for (int i = 0; i < 3; ++i) grad[i] = T(2) * (expected[i] - target[i]);
    reference(step, grad, expected);
    ASSERT_OK(session->Run({}, {}, {train.name()}));
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"w/read"}));
    const std::vector<T> got = Values<T>(out[0]);
    for (int i = 0; i < 3; ++i) {
      EXPECT_NEAR(got[i], expected[i], tolerance * (1 + std::abs(expected[i]))) << "element " << i;
    }
  }
}

// In double precision, to a rounding: whether the multiply and the
// subtraction fuse (an FMA) is the compiler's choice on either side, so
// the last bit may differ; a step done in float would be off by 1e-8.
TEST(GradientDescentOptimizer, MatchesTheUpdateRuleInDoublePrecision) {
  GradientDescentOptimizer optimizer(0.1);
  CheckAgainstReference<double>(
      optimizer,
      [](int, const std::vector<double>& grad, std::vector<double>& w) {
        for (int i = 0; i < 3; ++i) w[i] -= grad[i] * 0.1;
      },
      1e-15);
}

TEST(GradientDescentOptimizer, UpdatesFloatVariables) {
  GradientDescentOptimizer optimizer(0.25);
  CheckAgainstReference<float>(
      optimizer,
      [](int, const std::vector<float>& grad, std::vector<float>& w) {
        for (int i = 0; i < 3; ++i) w[i] -= grad[i] * 0.25f;
      },
      1e-6);
}

template <typename T>
ReferenceStep<T> MomentumReference(T lr, T momentum, bool nesterov) {
  auto accum = std::make_shared<std::vector<T>>(3, T(0));
  return [=](int, const std::vector<T>& grad, std::vector<T>& w) {
    for (int i = 0; i < 3; ++i) {
      T& a = (*accum)[i];
      a = a * momentum + grad[i];
      w[i] -= nesterov ? grad[i] * lr + a * momentum * lr : a * lr;
    }
  };
}

TEST(MomentumOptimizer, MatchesTheUpdateRule) {
  MomentumOptimizer optimizer(0.05, 0.9);
  CheckAgainstReference<float>(optimizer, MomentumReference<float>(0.05f, 0.9f, false), 1e-5);
}

TEST(MomentumOptimizer, MatchesTheNesterovUpdateRule) {
  MomentumOptimizer optimizer(0.05, 0.9, /*use_nesterov=*/true);
  CheckAgainstReference<double>(optimizer, MomentumReference<double>(0.05, 0.9, true), 1e-12);
}

template <typename T>
ReferenceStep<T> AdamReference(double lr, double beta1, double beta2, double epsilon) {
  auto m = std::make_shared<std::vector<double>>(3, 0.0);
  auto v = std::make_shared<std::vector<double>>(3, 0.0);
  return [=](int step, const std::vector<T>& grad, std::vector<T>& w) {
    const double lr_t = lr * std::sqrt(1 - std::pow(beta2, step)) / (1 - std::pow(beta1, step));
    for (int i = 0; i < 3; ++i) {
      const double g = grad[i];
      (*m)[i] += (g - (*m)[i]) * (1 - beta1);
      (*v)[i] += (g * g - (*v)[i]) * (1 - beta2);
      w[i] = static_cast<T>(w[i] - lr_t * (*m)[i] / (std::sqrt((*v)[i]) + epsilon));
    }
  };
}

TEST(AdamOptimizer, MatchesTheUpdateRule) {
  AdamOptimizer optimizer(0.1, 0.9, 0.999, 1e-8);
  CheckAgainstReference<double>(optimizer, AdamReference<double>(0.1, 0.9, 0.999, 1e-8), 1e-12);
}

TEST(AdamOptimizer, MatchesTheUpdateRuleForFloat) {
  AdamOptimizer optimizer(0.01, 0.8, 0.99, 1e-7);
  CheckAgainstReference<float>(optimizer, AdamReference<float>(0.01, 0.8, 0.99, 1e-7), 1e-5);
}

// A graph with two variables, w (in the loss) and unused (not), and a
// loss over w only.
struct TwoVariables {
  Scope scope = ops::NewRootScope();
  Variable w{scope, "w", Tensor::FromVector<float>({1.f, 2.f}, TensorShape({2}))};
  Variable unused{scope, "unused", Tensor::FromVector<float>({5.f}, TensorShape({1}))};
  Output loss = ops::Sum(scope.WithOpName("loss"), ops::Square(scope, w), 0);
};

TEST(Optimizer, MinimizeIncrementsTheGlobalStep) {
  TwoVariables g;
  Variable global_step = CreateGlobalStep(g.scope);
  GradientDescentOptimizer optimizer(0.5);
  ASSERT_OK_AND_ASSIGN(Operation train, optimizer.Minimize(g.scope, g.loss, {g.w}, &global_step));
  EXPECT_EQ(train.name(), "GradientDescent");
  EXPECT_EQ(train.node()->op(), "AssignAdd");
  GlobalVariablesInitializer(g.scope);
  ASSERT_OK_AND_ASSIGN(GraphDef def, g.scope.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  for (int i = 0; i < 3; ++i) ASSERT_OK(session->Run({}, {}, {"GradientDescent"}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"global_step/read", "w/read"}));
  EXPECT_EQ(out[0].dtype(), DT_INT64);
  EXPECT_EQ(out[0].scalar<int64_t>(), 3);
  // w -= 0.5 * 2w zeroes w in one step.
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(0.f, 0.f));
}

TEST(Optimizer, VariablesTheLossDoesNotReadGetNoGradient) {
  TwoVariables g;
  GradientDescentOptimizer optimizer(0.1);
  ASSERT_OK_AND_ASSIGN(std::vector<GradientAndVariable> grads,
                       optimizer.ComputeGradients(g.scope, g.loss, {g.w, g.unused}));
  ASSERT_EQ(grads.size(), 2u);
  EXPECT_TRUE(grads[0].gradient.ok());
  EXPECT_FALSE(grads[1].gradient.ok());
  EXPECT_EQ(grads[1].variable.name(), "unused");

  ASSERT_OK_AND_ASSIGN(Operation train, optimizer.ApplyGradients(g.scope, grads));
  GlobalVariablesInitializer(g.scope);
  ASSERT_OK_AND_ASSIGN(GraphDef def, g.scope.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  ASSERT_OK(session->Run({}, {}, {train.name()}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {"w/read", "unused/read"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(0.8f, 1.6f));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(5.f));
}

TEST(Optimizer, MinimizeFailsWhenNoVariableHasAGradient) {
  TwoVariables g;
  MomentumOptimizer optimizer(0.1, 0.9);
  EXPECT_THAT(optimizer.Minimize(g.scope, g.loss, {g.unused}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("No gradients provided for any variable"),
                                        HasSubstr("unused"))));
  EXPECT_THAT(optimizer.Minimize(g.scope, g.loss, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("No variables")));
}

TEST(Optimizer, RejectsAGradientOfAnotherDtype) {
  TwoVariables g;
  GradientDescentOptimizer optimizer(0.1);
  const Output wrong =
      ops::Const(g.scope, Tensor::FromVector<double>({1, 2}, TensorShape({2})), DT_DOUBLE);
  EXPECT_THAT(optimizer.ApplyGradients(g.scope, {{wrong, g.w}}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       ::testing::AllOf(HasSubstr("w"), HasSubstr("double"), HasSubstr("float"))));
}

bool HasNode(const Scope& scope, const std::string& name, const std::string& op) {
  const Node* node = scope.graph()->FindNode(name);
  return node != nullptr && node->op() == op;
}

TEST(Optimizer, SlotsAndUpdatesAreNamedAsInTensorFlow) {
  TwoVariables g;
  MomentumOptimizer momentum(0.1, 0.9);
  ASSERT_OK(momentum.Minimize(g.scope, g.loss, {g.w}));
  EXPECT_TRUE(HasNode(g.scope, "w/Momentum", "VariableV2"));
  EXPECT_TRUE(HasNode(g.scope, "Momentum/update_w/ApplyMomentum", "ApplyMomentum"));
  EXPECT_TRUE(HasNode(g.scope, "Momentum", "NoOp"));

  AdamOptimizer adam;
  ASSERT_OK(adam.Minimize(g.scope, g.loss, {g.w}));
  EXPECT_TRUE(HasNode(g.scope, "w/Adam", "VariableV2"));
  EXPECT_TRUE(HasNode(g.scope, "w/Adam_1", "VariableV2"));
  EXPECT_TRUE(HasNode(g.scope, "beta1_power", "VariableV2"));
  EXPECT_TRUE(HasNode(g.scope, "beta2_power", "VariableV2"));
  EXPECT_TRUE(HasNode(g.scope, "Adam/update_w/ApplyAdam", "ApplyAdam"));
  EXPECT_TRUE(HasNode(g.scope, "Adam", "NoOp"));

  // A second Minimize with the same optimizer reuses its slots.
  ASSERT_OK(momentum.Minimize(g.scope, g.loss, {g.w}));
  EXPECT_TRUE(HasNode(g.scope, "Momentum_1/update_w/ApplyMomentum", "ApplyMomentum"));
  EXPECT_TRUE(HasNode(g.scope, "Momentum_1", "NoOp"));
  EXPECT_EQ(g.scope.graph()->FindNode("w/Momentum_1"), nullptr);
  const Node* apply = g.scope.graph()->FindNode("Momentum_1/update_w/ApplyMomentum");
  ASSERT_NE(apply, nullptr);
  EXPECT_EQ(apply->input_edge(1)->src->name(), "w/Momentum");
}

TEST(Optimizer, UpdatesAndSlotsGoOnTheVariablesDevice) {
  Scope scope = ops::NewRootScope();
  const std::string device = "/job:ps/replica:0/task:0/device:CPU:0";
  Variable w(scope.WithDevice(device), "w", Tensor::FromVector<float>({1.f}, TensorShape({1})));
  const Output loss = ops::Sum(scope, ops::Square(scope, w), 0);
  AdamOptimizer adam;
  ASSERT_OK(adam.Minimize(scope.WithDevice("/job:worker/task:0"), loss, {w}));
  EXPECT_THAT(w.ref().node()->requested_device(), HasSubstr("/job:ps"));
  for (const char* name : {"w/Adam", "w/Adam_1", "beta1_power", "Adam/update_w/ApplyAdam"}) {
    const Node* node = scope.graph()->FindNode(name);
    ASSERT_NE(node, nullptr) << name;
    EXPECT_EQ(node->requested_device(), w.ref().node()->requested_device()) << name;
  }
}

TEST(Optimizer, SlotsAreInitializedByTheInitOp) {
  TwoVariables g;
  AdamOptimizer adam(0.1);
  ASSERT_OK(adam.Minimize(g.scope, g.loss, {g.w}));
  GlobalVariablesInitializer(g.scope);
  ASSERT_OK_AND_ASSIGN(GraphDef def, g.scope.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  ASSERT_OK(session->Run({}, {}, {"init"}));
  ASSERT_OK_AND_ASSIGN(
      std::vector<Tensor> out,
      session->Run({}, {"w/Adam/read", "w/Adam_1/read", "beta1_power/read", "beta2_power/read"}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(0.f, 0.f));
  EXPECT_THAT(Values<float>(out[1]), ElementsAre(0.f, 0.f));
  EXPECT_FLOAT_EQ(out[2].scalar<float>(), 0.9f);
  EXPECT_FLOAT_EQ(out[3].scalar<float>(), 0.999f);
  ASSERT_OK(session->Run({}, {}, {"Adam"}));
  ASSERT_OK(session->Run({}, {}, {"Adam"}));
  ASSERT_OK_AND_ASSIGN(out, session->Run({}, {"beta1_power/read", "beta2_power/read"}));
  EXPECT_FLOAT_EQ(out[0].scalar<float>(), 0.9f * 0.9f * 0.9f);
  EXPECT_FLOAT_EQ(out[1].scalar<float>(), 0.999f * 0.999f * 0.999f);
}

// A gradient narrowed for the wire: cast where it is computed (the worker), widened beside its
// variable (the ps); what the update sees is the gradient rounded to the wire type.
TEST(GradientCompression, NarrowsWhereTheGradientIsAndWidensBesideTheVariable) {
  const auto build = [](bool placed, DataType wire_type, std::set<std::string> variables = {})
      -> absl::StatusOr<std::pair<Scope, std::vector<GradientAndVariable>>> {
    Scope root = ops::NewRootScope();
    const Scope ps = placed ? root.WithDevice("/job:ps/task:0") : root;
    const Scope worker = placed ? root.WithDevice("/job:worker/task:0") : root;
    const Variable w(ps, "w", Tensor::FromVector<float>({1.001f, -2.5f, 3.3333f}, {3}));
    const Variable b(ps, "b", Tensor::FromVector<float>({0.25f}, {1}));
    const ops::Sum loss(worker.WithOpName("loss"),
                        ops::Square(worker, ops::Mul(worker, ops::Add(worker, w, b), 1.7f)), 0);
    GradientDescentOptimizer sgd(0.1);
    ASSIGN_OR_RETURN(std::vector<GradientAndVariable> gradients,
                     sgd.ComputeGradients(worker, loss, {w, b}));
    GradientCompression compression;
    compression.wire_type = wire_type;
    compression.variables = std::move(variables);
    ASSIGN_OR_RETURN(CompressedGradients compressed,
                     CompressGradients(worker, std::move(gradients), compression));
    GlobalVariablesInitializer(root);
    return std::make_pair(root, std::move(compressed.gradients));
  };

  ASSERT_OK_AND_ASSIGN(auto placed, build(true, DT_BFLOAT16, {"w"}));
  const Graph& graph = *placed.first.graph();
  const Node* narrow = nullptr;
  const Node* wide = nullptr;
  for (const Node* node : graph.nodes()) {
    if (node->name() == "w/wire/narrow") narrow = node;
    if (node->name() == "w/wire/wide") wide = node;
    EXPECT_FALSE(node->name().starts_with("b/wire")) << "b was not named";
  }
  ASSERT_NE(narrow, nullptr);
  ASSERT_NE(wide, nullptr);
  EXPECT_EQ(narrow->requested_device(), "/job:worker/task:0");
  EXPECT_EQ(wide->requested_device(), "/job:ps/task:0");
  EXPECT_EQ(placed.second[0].gradient.node(), wide);

  for (const DataType wire_type : {DT_BFLOAT16, DT_HALF}) {
    SCOPED_TRACE(DataTypeString(wire_type));
    ASSERT_OK_AND_ASSIGN(auto plain, build(false, DT_INVALID));
    ASSERT_OK_AND_ASSIGN(auto narrowed, build(false, wire_type));
    std::vector<float> exact;
    std::vector<float> got;
    for (auto* built : {&plain, &narrowed}) {
      ASSERT_OK_AND_ASSIGN(GraphDef def, built->first.ToGraphDef());
      ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
      ASSERT_OK(session->Run({}, {}, {"init"}));
      ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out,
                           session->Run({}, {built->second[0].gradient.name()}));
      (built == &plain ? exact : got) = Values<float>(out[0]);
    }
    ASSERT_EQ(got.size(), 3u);
    bool rounded = false;
    for (size_t i = 0; i < got.size(); ++i) {
      const float expected = wire_type == DT_HALF ? static_cast<float>(half(exact[i]))
                                                  : static_cast<float>(bfloat16(exact[i]));
      EXPECT_EQ(got[i], expected) << "element " << i;
      rounded = rounded || got[i] != exact[i];
    }
    EXPECT_TRUE(rounded) << "no element lost a bit: the test shows nothing";
  }

  EXPECT_THAT(build(false, DT_BFLOAT16, {"v"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("names variable 'v'")));
  EXPECT_THAT(build(false, DT_DOUBLE),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("float16 or bfloat16")));
}

TEST(GradientCompression, ParsesWhatAFlagGives) {
  for (const char* bad : {"int8", "topk", "topk:0", "topk:1", "topk:x", "topk:0.1+int8", "+bf16",
                          "topk:0.1:", "topk:0.1:x", "topk:0.1:-5", "topk::5"}) {
    EXPECT_THAT(ParseGradientCompression(bad),
                StatusIs(absl::StatusCode::kInvalidArgument,
                         HasSubstr(absl::StrFormat("gradient compression '%s': expected none, "
                                                   "float16 (fp16), bfloat16 (bf16) or topk:",
                                                   bad))));
  }
  ASSERT_OK_AND_ASSIGN(GradientCompression parsed, ParseGradientCompression("bf16"));
  EXPECT_EQ(parsed.wire_type, DT_BFLOAT16);
  EXPECT_EQ(parsed.top_k, 0);
  ASSERT_OK_AND_ASSIGN(parsed, ParseGradientCompression("topk:0.25+fp16"));
  EXPECT_EQ(parsed.wire_type, DT_HALF);
  EXPECT_EQ(parsed.top_k, 0.25);
  ASSERT_OK_AND_ASSIGN(parsed, ParseGradientCompression("topk:0.01"));
  EXPECT_EQ(parsed.wire_type, DT_INVALID);
  EXPECT_EQ(parsed.top_k, 0.01);
  EXPECT_EQ(parsed.top_k_warmup_steps, 0);
  ASSERT_OK_AND_ASSIGN(parsed, ParseGradientCompression("topk:0.1:500+bf16"));
  EXPECT_EQ(parsed.top_k, 0.1);
  EXPECT_EQ(parsed.top_k_warmup_steps, 500);
  EXPECT_EQ(parsed.wire_type, DT_BFLOAT16);
}

// The gradient of w (2x3, zeros, on `ps`) through a loss computed on
// `worker` whose gradient is the constant c: 4, -3, 0.5, 2, 1, -0.25.
absl::StatusOr<std::vector<GradientAndVariable>> ConstantGradient(const Scope& ps,
                                                                  const Scope& worker) {
  const Variable w(ps, "w", Tensor::FromVector<float>({0, 0, 0, 0, 0, 0}, {2, 3}));
  const Output c =
      ops::Const(worker, Tensor::FromVector<float>({4, -3, 0.5f, 2, 1, -0.25f}, {2, 3}), DT_FLOAT);
  const ops::Sum loss(worker.WithOpName("loss"), ops::Mul(worker, w, c), ops::Input({0, 1}));
  GradientDescentOptimizer sgd(1.0);
  return sgd.ComputeGradients(worker, loss, {w});
}

// Top-k with error feedback: each step sends the largest entries of the
// gradient plus what earlier steps left out, as indices and values from
// the worker, and the variable's task gets them back as a dense gradient;
// over steps, every entry of a constant gradient arrives in full.
TEST(GradientCompression, TopKSendsTheLargestEntriesAndCarriesTheRest) {
  Scope root = ops::NewRootScope();
  const Scope ps = root.WithDevice("/job:ps/task:0");
  const Scope worker = root.WithDevice("/job:worker/task:0");
  ASSERT_OK_AND_ASSIGN(std::vector<GradientAndVariable> gradients, ConstantGradient(ps, worker));
  GradientCompression compression;
  compression.top_k = 0.34;  // 2 of 6 entries.
  EXPECT_THAT(CompressGradients(worker, gradients, compression),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("local_device")));
  compression.local_device = "/job:worker/task:0";
  // Gradients under top_k_min_elements entries travel whole.
  ASSERT_OK_AND_ASSIGN(CompressedGradients whole,
                       CompressGradients(worker, gradients, compression));
  EXPECT_TRUE(whole.residuals.empty());
  EXPECT_EQ(whole.gradients[0].gradient.node(), gradients[0].gradient.node());
  compression.top_k_min_elements = 6;
  ASSERT_OK_AND_ASSIGN(CompressedGradients compressed,
                       CompressGradients(worker, gradients, compression));
  ASSERT_EQ(compressed.residuals.size(), 1u);
  EXPECT_EQ(compressed.residuals[0].name(), "w/wire/residual");
  EXPECT_EQ(compressed.residuals[0].ref().node()->requested_device(), "/job:worker/task:0");
  // What crosses: the indices and values from the worker; the dense
  // gradient is made beside w.
  const Node* dense = compressed.gradients[0].gradient.node();
  EXPECT_EQ(dense->name(), "w/wire/dense");
  EXPECT_EQ(dense->requested_device(), "/job:ps/task:0");
  GlobalVariablesInitializer(root);
  ASSERT_OK_AND_ASSIGN(GraphDef def, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::vector<std::unique_ptr<Server>> servers,
                       Server::CreateLocalCluster({{"worker", 1}, {"ps", 1}}));
  SessionOptions options;
  options.target = servers[0]->target();
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(options, def));
  ASSERT_OK(session->Run({}, {}, {compressed.residuals_init.name(), "init"}));
  const std::string sent = compressed.gradients[0].gradient.name();
  const std::string residual = "w/wire/residual";
  // Step 1: 4 and -3 go; the rest waits.
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {sent}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(4, -3, 0, 0, 0, 0));
  ASSERT_OK_AND_ASSIGN(out, session->Run({}, {residual}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(0, 0, 0.5f, 2, 1, -0.25f));
  // Step 2: the sums are 4, -3, 1, 4, 2, -0.5: the two 4s go.
  ASSERT_OK_AND_ASSIGN(out, session->Run({}, {sent}));
  EXPECT_THAT(Values<float>(out[0]), ElementsAre(4, 0, 0, 4, 0, 0));
  // Over many steps every entry arrives at its rate: the totals sent
  // trail the totals computed by no more than what one residual holds.
  std::vector<float> total(6, 0.f);
  for (int step = 0; step < 40; ++step) {
    ASSERT_OK_AND_ASSIGN(out, session->Run({}, {sent}));
    for (int i = 0; i < 6; ++i) total[i] += Values<float>(out[0])[i];
  }
  const std::vector<float> rates = {4, -3, 0.5f, 2, 1, -0.25f};
  for (int i = 0; i < 6; ++i) {
    EXPECT_NEAR(total[i], 40 * rates[i], 12.f) << "entry " << i;
    EXPECT_NE(total[i], 0.f) << "entry " << i << " never sent";
  }
}

// With a warm-up, the share of entries sent falls from all of them to
// top_k over the warm-up's steps: 6 * 0.34^(step / 4) entries, rounded.
TEST(GradientCompression, TopKWarmsUpFromDenseToItsFraction) {
  const Scope root = ops::NewRootScope();
  ASSERT_OK_AND_ASSIGN(std::vector<GradientAndVariable> gradients, ConstantGradient(root, root));
  GradientCompression compression;
  compression.top_k = 0.34;
  compression.top_k_min_elements = 6;
  compression.top_k_warmup_steps = 4;
  compression.local_device = "/job:localhost/replica:0/task:0";
  ASSERT_OK_AND_ASSIGN(CompressedGradients compressed,
                       CompressGradients(root, gradients, compression));
  // The residual and the step count, both zeroed by the local init op.
  ASSERT_EQ(compressed.residuals.size(), 2u);
  EXPECT_EQ(compressed.residuals[0].name(), "top_k/steps");
  GlobalVariablesInitializer(root);
  ASSERT_OK_AND_ASSIGN(GraphDef def, root.ToGraphDef());
  ASSERT_OK_AND_ASSIGN(std::unique_ptr<Session> session, NewSession(SessionOptions(), def));
  ASSERT_OK(session->Run({}, {}, {compressed.residuals_init.name(), "init"}));
  const std::string sent = compressed.gradients[0].gradient.name();
  std::vector<int> counts;
  for (int step = 0; step < 6; ++step) {
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, session->Run({}, {sent}));
    const std::vector<float> values = Values<float>(out[0]);
    counts.push_back(static_cast<int>(
        std::count_if(values.begin(), values.end(), [](float v) { return v != 0.f; })));
  }
  EXPECT_THAT(counts, ElementsAre(5, 3, 3, 2, 2, 2));
  compression.top_k_warmup_steps = -1;
  EXPECT_THAT(CompressGradients(root, gradients, compression),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("not -1")));
}

}  // namespace
}  // namespace rill
