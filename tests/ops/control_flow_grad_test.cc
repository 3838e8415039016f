// Gradients through control flow, checked against float64 central
// differences: a cond's gradient flows only through the branch taken, and
// a loop's gradient is a loop over the forward values it saved.
#include <functional>
#include <vector>

#include "graph/status_macros.h"
#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/ops/gradient_checker.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::GradientChecker;
using ::rill::testing::GradientErrorBelow;

// cond(p, x * x, tanh(x) * 3) for both values of p.
TEST(ControlFlowGradTest, CondTakesTheGradientOfTheBranchTaken) {
  for (bool p : {true, false}) {
    GradientChecker c;
    const Scope& s = c.scope();
    const Output x = c.RandomInput({3});
    auto out = ops::Cond(
        s, ops::Const(s, Tensor::Scalar<bool>(p), DT_BOOL),
        [&](const Scope& t, std::vector<Output>* o) {
          o->push_back(ops::Mul(t, x, x));
          return t.status();
        },
        [&](const Scope& e, std::vector<Output>* o) {
          o->push_back(ops::Mul(e, ops::Tanh(e, x), 3.0));
          return e.status();
        });
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(c.MaxError(*out), GradientErrorBelow(1e-7)) << p;
  }
}

// v = x; while sum(v) < 6: v = tanh(v) * 2 + x * x. The count depends on
// x, the body reads x (a loop invariant) and its own forward values.
TEST(ControlFlowGradTest, WhileLoopWithADataDependentCount) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({3}, 0.3, 0.9);
  std::vector<Output> outputs;
  ASSERT_TRUE(ops::WhileLoop(
                  s, {x},
                  [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                    *out = ops::Less(cs, ops::Sum(cs, in[0], 0), 6.0);
                    return cs.status();
                  },
                  [&](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
                    out->push_back(
                        ops::Add(bs, ops::Mul(bs, ops::Tanh(bs, in[0]), 2.0), ops::Mul(bs, x, x)));
                    return bs.status();
                  },
                  &outputs)
                  .ok())
      << s.status();
  EXPECT_THAT(c.MaxError(outputs), GradientErrorBelow(1e-6));
}

// Two loop variables that feed each other: (a, b) -> (a * b, a + tanh(b)),
// three times.
TEST(ControlFlowGradTest, WhileLoopWithTwoVariables) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output a = c.RandomInput({2}, 0.5, 1.0);
  const Output b = c.RandomInput({2}, 0.5, 1.0);
  const Output zero = ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32);
  std::vector<Output> outputs;
  ASSERT_TRUE(ops::WhileLoop(
                  s, {zero, a, b},
                  [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                    *out = ops::Less(cs, in[0], 3);
                    return cs.status();
                  },
                  [](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
                    out->push_back(ops::Add(bs, in[0], 1));
                    out->push_back(ops::Mul(bs, in[1], in[2]));
                    out->push_back(ops::Add(bs, in[1], ops::Tanh(bs, in[2])));
                    return bs.status();
                  },
                  &outputs)
                  .ok())
      << s.status();
  EXPECT_THAT(c.MaxError({outputs[1], outputs[2]}), GradientErrorBelow(1e-6));
}

// v = v0; three times: v = tanh(v * w). The body reads w, a weight from
// outside (a loop invariant), whose gradient sums over the iterations.
TEST(ControlFlowGradTest, WhileLoopReadingAWeight) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output w = c.RandomInput({2}, 0.5, 1.5);
  const Output v0 = c.RandomInput({2}, 0.5, 1.0);
  const Output zero = ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32);
  std::vector<Output> outputs;
  ASSERT_TRUE(ops::WhileLoop(
                  s, {zero, v0},
                  [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                    *out = ops::Less(cs, in[0], 3);
                    return cs.status();
                  },
                  [&](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
                    out->push_back(ops::Add(bs, in[0], 1));
                    out->push_back(ops::Tanh(bs, ops::Mul(bs, in[1], w)));
                    return bs.status();
                  },
                  &outputs)
                  .ok())
      << s.status();
  EXPECT_THAT(c.MaxError({outputs[1]}), GradientErrorBelow(1e-6));
}

// A variable read in the body: v = v0 * w^3 after three iterations, so
// d sum(v) / dw = 3 w^2 v0 = 12 for w = 2, v0 = 1.
TEST(ControlFlowGradTest, WhileLoopReadingAVariable) {
  Scope s = ops::NewRootScope();
  const Variable w(s, "w", Tensor::Scalar<float>(2));
  const Output v0 = ops::Const(s, Tensor::Scalar<float>(1), DT_FLOAT);
  const Output zero = ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32);
  std::vector<Output> outputs;
  ASSERT_TRUE(ops::WhileLoop(
                  s, {zero, v0},
                  [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                    *out = ops::Less(cs, in[0], 3);
                    return cs.status();
                  },
                  [&](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
                    out->push_back(ops::Add(bs, in[0], 1));
                    out->push_back(ops::Mul(bs, in[1], w));
                    return bs.status();
                  },
                  &outputs)
                  .ok())
      << s.status();
  auto grads = AddGradients(s, {outputs[1]}, {w.value()}, {});
  ASSERT_TRUE(grads.ok()) << grads.status();
  const Operation init = GlobalVariablesInitializer(s);
  auto def = s.ToGraphDef();
  ASSERT_TRUE(def.ok()) << def.status();
  auto session = NewSession(SessionOptions(), *def);
  ASSERT_TRUE(session.ok()) << session.status();
  ASSERT_TRUE((*session)->Run({}, {}, {init.name()}).ok());
  auto out = (*session)->Run({}, {(*grads)[0].name(), outputs[1].name()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_FLOAT_EQ((*out)[0].scalar<float>(), 12);
  EXPECT_FLOAT_EQ((*out)[1].scalar<float>(), 8);
}

// Loops inside loops. Each builder is a counted loop: `n` times, carry
// (i, v) -> (i + 1, step(v)).
using StepFn = std::function<Output(const Scope&, const Output&)>;

absl::StatusOr<Output> Repeat(const Scope& s, int n, const Output& v0, const StepFn& step,
                              int parallel_iterations = 10) {
  std::vector<Output> outputs;
  RETURN_IF_ERROR(ops::WhileLoop(
      s, {ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32), v0},
      [n](const Scope& cs, const std::vector<Output>& in, Output* out) {
        *out = ops::Less(cs, in[0], n);
        return cs.status();
      },
      [&step](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::Add(bs, in[0], 1));
        out->push_back(step(bs, in[1]));
        return bs.status();
      },
      &outputs, {.parallel_iterations = parallel_iterations}));
  return outputs[1];
}

// v = x; while sum(v) < 6: { w = v; while sum(w) < 3: w *= 1.5; v = w + 1 }:
// the inner count depends on the values the outer loop carries.
TEST(ControlFlowGradTest, NestedLoopWithADataDependentInnerCount) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({3}, 0.3, 0.9);
  std::vector<Output> outputs;
  ASSERT_TRUE(ops::WhileLoop(
                  s, {x},
                  [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                    *out = ops::Less(cs, ops::Sum(cs, in[0], 0), 6.0);
                    return cs.status();
                  },
                  [](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
                    std::vector<Output> inner;
                    RETURN_IF_ERROR(ops::WhileLoop(
                        bs, {in[0]},
                        [](const Scope& c2, const std::vector<Output>& v, Output* o) {
                          *o = ops::Less(c2, ops::Sum(c2, v[0], 0), 3.0);
                          return c2.status();
                        },
                        [](const Scope& b2, const std::vector<Output>& v, std::vector<Output>* o) {
                          o->push_back(ops::Mul(b2, ops::Tanh(b2, v[0]), 1.5));
                          return b2.status();
                        },
                        &inner));
                    out->push_back(ops::Add(bs, inner[0], 1.0));
                    return bs.status();
                  },
                  &outputs)
                  .ok())
      << s.status();
  EXPECT_THAT(c.MaxError(outputs), GradientErrorBelow(1e-6));
}

// Four outer iterations whose inner loops do not depend on each other
// (each starts from x * d, d counting up), so they run at once and push
// their forward values in any order: each outer iteration keeps its own.
TEST(ControlFlowGradTest, NestedLoopsWhoseOuterIterationsOverlap) {
  for (int parallel : {1, 10}) {
    GradientChecker c;
    const Scope& s = c.scope();
    const Output x = c.RandomInput({3}, 0.2, 0.8);
    const Output w = c.RandomInput({3}, 0.5, 1.2);
    std::vector<Output> outputs;
    ASSERT_TRUE(ops::WhileLoop(
                    s, {ops::Const(s, 0.0), ops::ZerosLike(s, x)},
                    [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                      *out = ops::Less(cs, in[0], 4.0);
                      return cs.status();
                    },
                    [&](const Scope& bs, const std::vector<Output>& in,
                        std::vector<Output>* out) -> absl::Status {
                      const Output d = ops::Add(bs, in[0], 1.0);
                      ASSIGN_OR_RETURN(Output inner, Repeat(
                                                         bs, 3, ops::Mul(bs, x, d),
                                                         [&](const Scope& b2, const Output& v) {
                                                           return ops::Tanh(b2, ops::Mul(b2, v, w));
                                                         },
                                                         parallel));
                      out->push_back(d);
                      out->push_back(ops::Add(bs, in[1], ops::Mul(bs, inner, d)));
                      return bs.status();
                    },
                    &outputs, {.parallel_iterations = parallel})
                    .ok())
        << s.status();
    EXPECT_THAT(c.MaxError({outputs[1]}), GradientErrorBelow(1e-6)) << parallel;
  }
}

// A cond in a loop's body whose branch changes by iteration, one branch
// holding another cond: (i, v) -> (i + 1, even i ? v * w * v
// : cond(sum(v) > 0, tanh(v) * v, v * 0.5 + w)), five times. Each branch's
// gradient reads its own forward values, saved only in the iterations
// that took it.
TEST(ControlFlowGradTest, CondsInsideALoopWhoseBranchChangesByIteration) {
  const auto branch = [](const Scope& s, const Output& pred, const StepFn& then_fn,
                         const StepFn& else_fn, const Output& v) -> Output {
    absl::StatusOr<std::vector<Output>> out = ops::Cond(
        s, pred,
        [&](const Scope& t, std::vector<Output>* o) {
          o->push_back(then_fn(t, v));
          return t.status();
        },
        [&](const Scope& e, std::vector<Output>* o) {
          o->push_back(else_fn(e, v));
          return e.status();
        });
    return out.ok() ? (*out)[0] : Output();
  };
  for (int parallel : {1, 10}) {
    GradientChecker c;
    const Scope& s = c.scope();
    const Output x = c.RandomInput({3}, -0.8, 0.8);
    const Output w = c.RandomInput({3}, 0.5, 1.2);
    std::vector<Output> outputs;
    ASSERT_TRUE(ops::WhileLoop(
                    s, {ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32), x},
                    [](const Scope& cs, const std::vector<Output>& in, Output* out) {
                      *out = ops::Less(cs, in[0], 5);
                      return cs.status();
                    },
                    [&](const Scope& bs, const std::vector<Output>& in, std::vector<Output>* out) {
                      const Output even = ops::Equal(bs, ops::FloorMod(bs, in[0], 2), 0);
                      out->push_back(ops::Add(bs, in[0], 1));
                      out->push_back(branch(
                          bs, even,
                          [&](const Scope& t, const Output& v) {
                            return ops::Mul(t, ops::Mul(t, v, w), v);
                          },
                          [&](const Scope& e, const Output& v) {
                            return branch(
                                e, ops::Greater(e, ops::Sum(e, v, 0), 0.0),
                                [](const Scope& t, const Output& u) {
                                  return ops::Mul(t, ops::Tanh(t, u), u);
                                },
                                [&](const Scope& f, const Output& u) {
                                  return ops::Add(f, ops::Mul(f, u, 0.5), w);
                                },
                                v);
                          },
                          in[1]));
                      return bs.status();
                    },
                    &outputs, {.parallel_iterations = parallel})
                    .ok())
        << s.status();
    EXPECT_THAT(c.MaxError({outputs[1]}), GradientErrorBelow(1e-6)) << parallel;
  }
}

// Three loops deep, the innermost reading a weight from outside all of
// them: its gradient sums over 2 x 3 x 2 iterations.
TEST(ControlFlowGradTest, ThreeNestedLoopsReadingAWeight) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({2}, 0.2, 0.8);
  const Output w = c.RandomInput({2}, 0.5, 1.2);
  absl::StatusOr<Output> y = Repeat(s, 2, x, [&](const Scope& s1, const Output& v1) {
    absl::StatusOr<Output> middle = Repeat(s1, 3, v1, [&](const Scope& s2, const Output& v2) {
      absl::StatusOr<Output> inner = Repeat(s2, 2, v2, [&](const Scope& s3, const Output& v3) {
        return ops::Tanh(s3, ops::Add(s3, ops::Mul(s3, v3, w), 0.1));
      });
      return inner.ok() ? ops::Mul(s2, *inner, 1.5) : Output();
    });
    return middle.ok() ? ops::Add(s1, *middle, v1) : Output();
  });
  ASSERT_TRUE(y.ok()) << y.status();
  EXPECT_THAT(c.MaxError({*y}), GradientErrorBelow(1e-6));
}

}  // namespace
}  // namespace rill
