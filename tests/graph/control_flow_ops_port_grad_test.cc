// TensorFlow's python/kernel_tests/control_flow_ops_py_test.py, its
// gradient cases through tf.cond and tf.while_loop (nested loops last),
// with TensorFlow's expected numbers; each test is named after the Python
// test it ports. What is not ported, and why, is listed at the top of
// control_flow_ops_port_test.cc. Where TensorFlow's gradient is None (no
// path from x to y), AddGradients gives zeros.
#include <string>
#include <utility>
#include <vector>

#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "tests/graph/control_flow_port_util.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::Bool;
using ::rill::testing::Cond;
using ::rill::testing::Float;
using ::rill::testing::Floats;
using ::rill::testing::Gradients;
using ::rill::testing::Int;
using ::rill::testing::Ints;
using ::rill::testing::Less;
using ::rill::testing::ValuesOf;
using ::rill::testing::While;
using ::testing::ElementsAre;
using ::testing::FloatNear;
using ::testing::Pointwise;

using ControlFlowOpsPortGradTest = ::rill::testing::ControlFlowPortTest;

// v = 2; while v < 100: v = v^2  ->  256 = v^8, d/dv = 8 v^7 = 1024.
std::vector<Output> SquareLoop(const Scope& s, const Output& v, int parallel_iterations = 1) {
  return While(
      s, {v}, [](const Scope& c, const std::vector<Output>& x) { return Less(c, x[0], 100.0f); },
      [](const Scope& b, const std::vector<Output>& x) {
        return std::vector<Output>{ops::Square(b, x[0])};
      },
      parallel_iterations);
}

Output FloatVector(const Scope& s, const std::string& name) {
  return ops::Placeholder(s.WithOpName(name), DT_FLOAT,
                          ops::Placeholder::Shape(PartialTensorShape({-1})));
}

Tensor Vector(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return Tensor::FromVector<float>(std::move(values), TensorShape({n}));
}

// testWhileGrad_Square: the loop's result through a cond.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Square) {
  const Output v = Float(root_.WithOpName("v"), 2.0f);
  const Output loop = SquareLoop(root_, v)[0];
  const Output r = Cond(
      root_, ops::Less(root_, 1, 2), [&](const Scope&) { return loop; },
      [&](const Scope&) { return v; });
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 1024.0f);
}

// testWhileGrad_Shape: v = x^5 * v0 elementwise, x fed with an unknown
// length.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Shape) {
  const Output x = FloatVector(root_, "x");
  const Output v = Floats(root_.WithOpName("v"), {2.0f});
  const Output r = While(
      root_, {Int(root_.WithOpName("n"), 0), v},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 5); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), ops::Mul(s, x, in[1])};
      },
      1)[1];
  const Output grad = Gradients(root_, {r}, {x})[0];
  EXPECT_THAT(ValuesOf<float>(Run({grad}, {{"x", Vector({3.0f, 4.0f})}})[0]),
              ElementsAre(810.0f, 2560.0f));
}

// testWhileGrad_BaseShape: a loop that never runs its body; the gradient
// comes from the other y only.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_BaseShape) {
  const Output x = FloatVector(root_, "x");
  const Output r = While(
      root_, {Floats(root_.WithOpName("v"), {2.0f, 2.0f})},
      [](const Scope& s, const std::vector<Output>&) { return Bool(s, false); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Mul(s, in[0], x)};
      })[0];
  const Output y = ops::Square(root_, x);
  const Output grad = Gradients(root_, {r, y}, {x})[0];
  EXPECT_THAT(ValuesOf<float>(Run({grad}, {{"x", Vector({1.0f, 2.0f})}})[0]),
              ElementsAre(2.0f, 4.0f));
}

// testWhileGrad_MultipleUses: r * r = v^16.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_MultipleUses) {
  const Output v = Float(root_.WithOpName("v"), 2.0f);
  const Output loop = SquareLoop(root_, v)[0];
  const Output r = ops::Mul(root_, loop, loop);
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 524288.0f);
}

// testWhileGrad_LoopAdd: r + r.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_LoopAdd) {
  const Output v = Float(root_.WithOpName("v"), 2.0f);
  const Output loop = SquareLoop(root_, v)[0];
  const Output r = ops::Add(root_, loop, loop);
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 2048.0f);
}

// testWhileGrad_Mul: v = 2 * 3^4 = 162: d/da = 4 * 2 * 3^3, d/dv = 3^4;
// with 1 and 10 parallel iterations.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Mul) {
  for (int parallel_iterations : {1, 10}) {
    root_ = ops::NewRootScope();
    session_.reset();
    const Output a = Float(root_.WithOpName("a"), 3.0f);
    const Output v = Float(root_.WithOpName("v"), 2.0f);
    const Output r = While(
        root_, {v},
        [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 100.0f); },
        [&](const Scope& s, const std::vector<Output>& in) {
          return std::vector<Output>{ops::Mul(s, in[0], a)};
        },
        parallel_iterations)[0];
    const std::vector<Output> grads = Gradients(root_, {r}, {a, v});
    const std::vector<Tensor> out = Run(grads);
    EXPECT_FLOAT_EQ(::rill::testing::ScalarOf<float>(out[0]), 216.0f) << parallel_iterations;
    EXPECT_FLOAT_EQ(::rill::testing::ScalarOf<float>(out[1]), 81.0f) << parallel_iterations;
  }
}

// testWhileGrad_Variable: the factor is a variable.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Variable) {
  const Variable a(root_, "a", 3.0f);
  const Output r = While(
      root_, {Float(root_.WithOpName("v"), 2.0f)},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 100.0f); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Mul(s, in[0], a)};
      },
      1)[0];
  const Output grad = Gradients(root_, {r}, {a.value()})[0];
  Initialize();
  EXPECT_FLOAT_EQ(RunFloat(grad), 216.0f);
}

// testWhileGrad_ys_xs: two variables feeding each other; gradients of one
// and of both results with respect to each initial value.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_ys_xs) {
  const Output x = Float(root_.WithOpName("x"), 3.0f);
  const Output y = Float(root_.WithOpName("y"), 2.0f);
  const std::vector<Output> r = While(
      root_, {x, y},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 100.0f); },
      [](const Scope& s, const std::vector<Output>& in) {
        const Output y1 = ops::Add(s, in[0], in[1]);
        const Output x1 = ops::Mul(s, in[0], y1);
        return std::vector<Output>{x1, y1};
      },
      1);
  const Output both_x = Gradients(root_, {r[0], r[1]}, {x})[0];
  const Output both_y = Gradients(root_, {r[0], r[1]}, {y})[0];
  const Output rx_x = Gradients(root_, {r[0]}, {x})[0];
  const Output rx_y = Gradients(root_, {r[0]}, {y})[0];
  EXPECT_FLOAT_EQ(RunFloat(both_x), 304.0f);
  EXPECT_FLOAT_EQ(RunFloat(both_y), 124.0f);
  EXPECT_FLOAT_EQ(RunFloat(rx_x), 295.0f);
  EXPECT_FLOAT_EQ(RunFloat(rx_y), 120.0f);
}

// testWhileGrad_Dependency: an int32 counter among the ys carries no
// gradient; x doubles ten times.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Dependency) {
  const Output i = Int(root_.WithOpName("i"), 0);
  const Output x = Float(root_.WithOpName("x"), 2.0f);
  const std::vector<Output> r = While(
      root_, {i, x},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 10); },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), ops::Mul(s, in[1], 2.0f)};
      },
      1);
  const Output both = Gradients(root_, {r[0], r[1]}, {x})[0];
  const Output rx = Gradients(root_, {r[1]}, {x})[0];
  EXPECT_FLOAT_EQ(RunFloat(both), 1024.0f);
  EXPECT_FLOAT_EQ(RunFloat(rx), 1024.0f);
}

// testWhileGrad_NoDependency: the body passes a variable through.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_NoDependency) {
  const Variable variable(root_, "variable", ops::Input::Initializer(1.0f).WithShape({2, 3}));
  const std::vector<Output> tensors = While(
      root_, {Int(root_, 0), variable.value(), variable.value()},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 10); },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), in[1], in[1]};
      });
  const Output cost = ops::Sum(root_, tensors[2], Ints(root_, {0, 1}));
  const Output grad = Gradients(root_, {cost}, {variable.value()})[0];
  Initialize();
  const Tensor out = Run({grad})[0];
  EXPECT_EQ(out.shape(), TensorShape({2, 3}));
  EXPECT_THAT(ValuesOf<float>(out), ::testing::Each(1.0f));
}

// testWhileGrad_Const: the body replaces the value with a constant from
// outside; the cost sums a scalar over no axes, TensorFlow's
// reduce_sum(scalar). TensorFlow: 0.0.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Const) {
  const Output c0 = Float(root_.WithOpName("c0"), 0.0f);
  const Output c1 = Float(root_.WithOpName("c1"), 1.0f);
  const std::vector<Output> tensors = While(
      root_, {Int(root_.WithOpName("t"), 0), c0},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 1); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), c1};
      });
  const Output cost = ops::Sum(root_, tensors[1], Ints(root_, {}));
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {cost}, {c0})[0]), 0.0f);
}

// (i, x) -> (i + 1, 2x) five times.
std::vector<Output> DoubleFiveTimes(const Scope& root, const Output& i, const Output& x) {
  return While(
      root, {i, x}, [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 5); },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), ops::Mul(s, in[1], 2.0f)};
      },
      1);
}

// testWhileGrad_SerialTwoLoops: the second loop starts from the first's
// result, with the same counter start (so it runs five times too).
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_SerialTwoLoops) {
  const Output i = Int(root_.WithOpName("i"), 0);
  const Output x = Float(root_.WithOpName("x"), 2.0f);
  const Output first = DoubleFiveTimes(root_, i, x)[1];
  const Output second = DoubleFiveTimes(root_, i, first)[1];
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {second}, {x})[0]), 1024.0f);
}

// testWhileGrad_ParallelTwoLoops: two loops from the same x, added.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_ParallelTwoLoops) {
  const Output i = Int(root_.WithOpName("i"), 0);
  const Output x = Float(root_.WithOpName("x"), 2.0f);
  const Output r1 = DoubleFiveTimes(root_, i, x)[1];
  const Output r2 = DoubleFiveTimes(root_, i, x)[1];
  const Output rx = ops::Add(root_, r1, r2);
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {rx}, {x})[0]), 64.0f);
}

// testWhileGrad_OneOutputWithControlDependencyOnSecond
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_OneOutputWithControlDependencyOnSecond) {
  const Output i = Int(root_.WithOpName("i"), 0);
  const Output x = Float(root_.WithOpName("x"), 1.0f);
  const Output y = Float(root_.WithOpName("y"), 1.0f);
  const std::vector<Output> r = While(
      root_, {i, x, y},
      [](const Scope& s, const std::vector<Output>& in) -> Output {
        return ops::Less(s.WithOpName("cond_less"), in[0], 1);
      },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s.WithOpName("inc"), in[0], 1),
                                   ops::Identity(s.WithOpName("xi"), in[1]),
                                   ops::Add(s.WithOpName("xi_plus_yi"), in[1], in[2])};
      });
  const Output y_f_d = ops::Identity(root_.WithOpName("y_f_d").WithControlDependencies(r[1]), r[2]);
  EXPECT_FLOAT_EQ(RunFloat(y_f_d), 2.0f);
  session_.reset();
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {y_f_d}, {x})[0]), 1.0f);
}

// The testWhileCondGrad_* loop: while x < 100: x = cond(true, x^2, x - 1).
Output SquareInCondLoop(const Scope& root, const Output& v) {
  const Output n = Float(root.WithOpName("n"), 100.0f);
  const Output one = Float(root.WithOpName("one"), 1.0f);
  return While(
      root, {v},
      [&](const Scope& s, const std::vector<Output>& x) -> Output { return ops::Less(s, x[0], n); },
      [&](const Scope& s, const std::vector<Output>& x) {
        return std::vector<Output>{Cond(
            s, Bool(s, true), [&](const Scope& t) -> Output { return ops::Square(t, x[0]); },
            [&](const Scope& e) -> Output { return ops::Sub(e, x[0], one); })};
      })[0];
}

// testWhileCondGrad_Simple
TEST_F(ControlFlowOpsPortGradTest, WhileCondGrad_Simple) {
  const Output v = Float(root_.WithOpName("v"), 2.0f);
  const Output r = SquareInCondLoop(root_, v);
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 1024.0f);
}

// testWhileCondGrad_UnknownShape: v is fed, of unknown shape. TensorFlow:
// 1024, as WhileCondGrad_Simple. Sub's gradient in the else branch (never
// taken) needs its inputs' shapes, so the forward loop saves the else
// branch's views of x and `one`, dead in every iteration: nothing is
// pushed then, and nothing popped (graph/while_gradients.cc).
TEST_F(ControlFlowOpsPortGradTest, WhileCondGrad_UnknownShape) {
  const Output v = ops::Placeholder(root_.WithOpName("v"), DT_FLOAT);
  const Output r = SquareInCondLoop(root_, v);
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0], {{"v", Tensor::Scalar<float>(2.0f)}}),
                  1024.0f);
}

// (x, y) -> (x^2 + y^2, y^2) while x < 100, from (3, 2): two iterations.
std::vector<Output> SquaresLoop(const Scope& root, const Output& x, const Output& y,
                                bool stop_inside) {
  return While(
      root, {x, y},
      [](const Scope& s, const std::vector<Output>& in) -> Output {
        return ops::Less(s, in[0], 100.0f);
      },
      [stop_inside](const Scope& s, const std::vector<Output>& in) {
        Output y1 = ops::Square(s, in[1]);
        if (stop_inside) y1 = ops::StopGradient(s, y1);
        const Output x1 = ops::Add(s, ops::Square(s, in[0]), y1);
        return std::vector<Output>{x1, y1};
      });
}

// testWhileGrad_StopGrad: StopGradient after the loop cuts every path
// through what it stops (TensorFlow's None is a zero gradient here).
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_StopGrad) {
  const Output x = Float(root_.WithOpName("x"), 3.0f);
  const Output y = Float(root_.WithOpName("y"), 2.0f);
  const std::vector<Output> r = SquaresLoop(root_, x, y, /*stop_inside=*/false);
  const Output rx = r[0];
  const Output ry = r[1];
  const Output rx_y = Gradients(root_, {rx}, {y})[0];
  const Output ry_y = Gradients(root_, {ry}, {y})[0];
  const Output stopped_rx_y = Gradients(root_, {ops::StopGradient(root_, rx)}, {y})[0];
  const Output sum_y = Gradients(root_, {ops::Add(root_, rx, ry)}, {y})[0];
  const Output sum_stop_ry_y =
      Gradients(root_, {ops::Add(root_, rx, ops::StopGradient(root_, ry))}, {y})[0];
  const Output sum_stop_rx_y =
      Gradients(root_, {ops::Add(root_, ops::StopGradient(root_, rx), ry)}, {y})[0];
  EXPECT_FLOAT_EQ(RunFloat(rx_y), 136.0f);
  EXPECT_FLOAT_EQ(RunFloat(ry_y), 32.0f);
  EXPECT_FLOAT_EQ(RunFloat(stopped_rx_y), 0.0f);
  EXPECT_FLOAT_EQ(RunFloat(sum_y), 168.0f);
  EXPECT_FLOAT_EQ(RunFloat(sum_stop_ry_y), 136.0f);
  EXPECT_FLOAT_EQ(RunFloat(sum_stop_rx_y), 32.0f);
}

// testWhileGrad_StopGradInside: StopGradient in the body.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_StopGradInside) {
  const Output x = Float(root_.WithOpName("x"), 3.0f);
  const Output y = Float(root_.WithOpName("y"), 2.0f);
  const Output rx = SquaresLoop(root_, x, y, /*stop_inside=*/true)[0];
  const Output rx_y = Gradients(root_, {rx}, {y})[0];
  const Output rx_x = Gradients(root_, {rx}, {x})[0];
  EXPECT_FLOAT_EQ(RunFloat(rx_y), 0.0f);
  EXPECT_FLOAT_EQ(RunFloat(rx_x), 156.0f);
}

// testWhileGrad_StopGradInsideNoShape: the same on fed vectors, the
// condition on their sum.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_StopGradInsideNoShape) {
  const Output x = ops::Placeholder(root_.WithOpName("x"), DT_FLOAT);
  const Output y = ops::Placeholder(root_.WithOpName("y"), DT_FLOAT);
  const Output rx = While(
      root_, {x, y},
      [](const Scope& s, const std::vector<Output>& in) -> Output {
        return ops::Less(s, ops::Sum(s, in[0], Ints(s, {0})), 100.0f);
      },
      [](const Scope& s, const std::vector<Output>& in) {
        const Output y1 = ops::StopGradient(s, ops::Square(s.WithOpName("stopped"), in[1]));
        return std::vector<Output>{ops::Add(s, ops::Square(s, in[0]), y1), y1};
      })[0];
  const Output rx_y = Gradients(root_, {rx}, {y})[0];
  const Output rx_x = Gradients(root_, {rx}, {x})[0];
  const std::vector<std::pair<std::string, Tensor>> feeds = {{"x", Vector({3.0f, 4.0f})},
                                                             {"y", Vector({2.0f, 3.0f})}};
  EXPECT_THAT(ValuesOf<float>(Run({rx_y}, feeds)[0]), ElementsAre(0.0f, 0.0f));
  EXPECT_THAT(ValuesOf<float>(Run({rx_x}, feeds)[0]), ElementsAre(156.0f, 400.0f));
}

// testStopGradOnWhileGrad: a loop's gradient, stopped, added to a value
// whose gradient is taken: d(y^2 + 2 y^6)/dy at 2 = 4 + 384.
TEST_F(ControlFlowOpsPortGradTest, StopGradOnWhileGrad) {
  const Output x = Float(root_.WithOpName("x"), 2.0f);
  const Output y = Float(root_.WithOpName("y"), 2.0f);
  const Output rx = While(
      root_, {x},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 100.0f); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Mul(s, in[0], y)};
      })[0];
  const Output rg = ops::StopGradient(root_, Gradients(root_, {rx}, {y})[0]);
  const Output r = ops::Add(root_, ops::Add(root_, ops::Square(root_, y), rx), rg);
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {y})[0]), 388.0f);
}

// testWhileGrad_Gather: y = x[:1] + gather(y, [0]) three times = 8 x[0],
// then z = 3y.
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Gather) {
  const Output x = Floats(root_, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  const Output head =
      ops::StridedSlice(root_, x, Ints(root_, {0}), Ints(root_, {1}), Ints(root_, {1}));
  const Output y = While(
      root_, {Int(root_, 0), head},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 3); },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1),
                                   ops::Add(s, in[1], ops::Gather(s, in[1], Ints(s, {0})))};
      })[1];
  const Output z = ops::Mul(root_, y, 3.0f);
  const Output grad = Gradients(root_, {z}, {x})[0];
  EXPECT_THAT(ValuesOf<float>(Run({y})[0]), ElementsAre(8.0f));
  EXPECT_THAT(ValuesOf<float>(Run({grad})[0]), ElementsAre(24.0f, 0.0f, 0.0f, 0.0f, 0.0f));
}

// testWhileGrad_GatherNoFanOut
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_GatherNoFanOut) {
  const Output x = Floats(root_, {1.0f, 1.0f, 1.0f, 1.0f, 1.0f});
  const Output head =
      ops::StridedSlice(root_, x, Ints(root_, {0}), Ints(root_, {1}), Ints(root_, {1}));
  const Output y = While(
      root_, {Int(root_, 0), head},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 3); },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), ops::Gather(s, in[1], Ints(s, {0}))};
      })[1];
  const Output z = ops::Mul(root_, y, 3.0f);
  const Output grad = Gradients(root_, {z}, {x})[0];
  EXPECT_THAT(ValuesOf<float>(Run({y})[0]), ElementsAre(1.0f));
  EXPECT_THAT(ValuesOf<float>(Run({grad})[0]), ElementsAre(3.0f, 0.0f, 0.0f, 0.0f, 0.0f));
}

// testWhileGrad_Concat: h grows by a row of x each iteration; one step of
// gradient descent on sum(h) (TensorFlow's GradientDescentOptimizer.minimize
// is ApplyGradientDescent on the gradient).
TEST_F(ControlFlowOpsPortGradTest, WhileGrad_Concat) {
  const Variable x(root_, "x", {{1.0f, 2.0f}});
  const Output h0 = ops::Fill(root_, Ints(root_, {0, 2}), 0.0f);
  const Output h = While(
      root_, {Int(root_, 0), h0},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 2); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), ops::ConcatV2(s, {in[1], x}, 0)};
      })[1];
  const Output sum = ops::Sum(root_, h, Ints(root_, {0, 1}));
  const Output grad = Gradients(root_, {sum}, {x.value()})[0];
  const Output step = ops::ApplyGradientDescent(root_, x.ref(), 0.01f, grad);
  Initialize();
  Run({step});
  EXPECT_THAT(ValuesOf<float>(Run({x.value()})[0]),
              Pointwise(FloatNear(1e-6), std::vector<float>{0.98f, 1.98f}));
}

// testWhileGradInCond: a loop's gradient built inside a cond's branch.
TEST_F(ControlFlowOpsPortGradTest, WhileGradInCond) {
  const Output n = Float(root_.WithOpName("n"), 1.0f);
  const Output x = ops::Placeholder(root_.WithOpName("x"), DT_FLOAT);
  const Output r = Cond(
      root_, ops::Less(root_, 1, 2),
      [&](const Scope& s) {
        const Output loop = While(
            s, {n},
            [](const Scope& c, const std::vector<Output>& v) { return Less(c, v[0], 10.0f); },
            [&](const Scope& b, const std::vector<Output>& v) {
              return std::vector<Output>{ops::Add(b, v[0], x)};
            })[0];
        return Gradients(s, {loop}, {x})[0];
      },
      [&](const Scope&) { return x; });
  EXPECT_FLOAT_EQ(RunFloat(r, {{"x", Tensor::Scalar<float>(1.0f)}}), 9.0f);
}

// testCallGradInLoop: each iteration adds the gradient of a value computed
// from outside the loop: d(sum([1, 2, 3] * p^2))/dp = 60 at p = 5, ten
// times. TensorFlow: 600.
// AddGradients called inside a loop's body builds the gradient there: the
// loop's Enters pass it on, and Square's gradient reads params through the
// body's own Enter, as TensorFlow's _EnterGrad outside a gradient loop.
TEST_F(ControlFlowOpsPortGradTest, CallGradInLoop) {
  const Output params = Float(root_, 5.0f);
  const Output params_1 = ops::Square(root_, params);
  const Output r = While(
      root_, {Int(root_, 0), Float(root_, 0.0f)},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 10); },
      [&](const Scope& s, const std::vector<Output>& in) {
        const Output data = ops::Mul(s, Floats(s, {1.0f, 2.0f, 3.0f}), params_1);
        const Output x1 = ops::Add(s, in[1], Gradients(s, {data}, {params})[0]);
        return std::vector<Output>{ops::Add(s, in[0], 1), x1};
      })[1];
  EXPECT_FLOAT_EQ(RunFloat(r), 600.0f);
}

// testWhileGradientWithNontrainablePath1: the loop never runs, so y is its
// initial 0 and q gets a zero gradient.
TEST_F(ControlFlowOpsPortGradTest, WhileGradientWithNontrainablePath1) {
  const Variable q(root_, "q", {7.0f, 8.0f});
  const Output y = While(
      root_, {ops::ArgMin(root_, q, 0), Float(root_, 0.0f)},
      [](const Scope& s, const std::vector<Output>&) { return Bool(s, false); },
      [&](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{
            in[0], ops::Add(s, ops::Cast(s, in[0], DT_FLOAT), ops::Sum(s, q, Ints(s, {0})))};
      })[1];
  const Output dy_dq = Gradients(root_, {y}, {q.value()})[0];
  Initialize();
  EXPECT_THAT(ValuesOf<float>(Run({dy_dq})[0]), ElementsAre(0.0f, 0.0f));
}

// testWhileGradientWithNontrainablePath2: one iteration, y = 0 + sum(q).
TEST_F(ControlFlowOpsPortGradTest, WhileGradientWithNontrainablePath2) {
  const Variable q(root_, "q", {7.0f, 8.0f});
  const Output y = While(
      root_, {ops::ArgMin(root_, q, 0), Float(root_, 0.0f)},
      [](const Scope& s, const std::vector<Output>& in) -> Output {
        return ops::Equal(s, in[1], 0.0f);
      },
      [&](const Scope& s, const std::vector<Output>& in) {
        const Output zero = ops::Const(s, Tensor::Scalar<int64_t>(0), DT_INT64);
        return std::vector<Output>{
            zero, ops::Add(s, ops::Cast(s, in[0], DT_FLOAT), ops::Sum(s, q, Ints(s, {0})))};
      })[1];
  const Output dy_dq = Gradients(root_, {y}, {q.value()})[0];
  Initialize();
  EXPECT_THAT(ValuesOf<float>(Run({dy_dq})[0]), ElementsAre(1.0f, 1.0f));
}

// testWhileGradInControlDeps (a tf.function there): x^2 twice from 2, its
// gradient 4 x^3 = 32 fetched under a control dependency on x.
TEST_F(ControlFlowOpsPortGradTest, WhileGradInControlDeps) {
  const Output x_init = Float(root_, 2.0f);
  const Output x = While(
      root_, {Int(root_, 0), x_init},
      [](const Scope& s, const std::vector<Output>& in) { return Less(s, in[0], 2); },
      [](const Scope& s, const std::vector<Output>& in) {
        return std::vector<Output>{ops::Add(s, in[0], 1), ops::Pow(s, in[1], 2.0f)};
      })[1];
  const Output grad = Gradients(root_.WithControlDependencies(x), {x}, {x_init})[0];
  EXPECT_FLOAT_EQ(RunFloat(grad), 32.0f);
}

// Loops inside loops.

// testNestedWhileGrad_Simple: x -> 2 * inner(x), inner doubling while
// below 4; from 1: 1 -> 8, so the outer loop runs once and r = 8 v.
TEST_F(ControlFlowOpsPortGradTest, NestedWhileGrad_Simple) {
  const Output v = Float(root_, 1.0f);
  const auto inner_loop = [](const Scope& scope, const Output& s) {
    return While(
        scope, {s},
        [](const Scope& c, const std::vector<Output>& x) { return Less(c, x[0], 4.0f); },
        [](const Scope& b, const std::vector<Output>& x) {
          return std::vector<Output>{ops::Mul(b, x[0], 2.0f)};
        })[0];
  };
  const Output r = While(
      root_, {v}, [](const Scope& c, const std::vector<Output>& x) { return Less(c, x[0], 2.0f); },
      [&](const Scope& b, const std::vector<Output>& x) {
        return std::vector<Output>{ops::Mul(b, inner_loop(b, x[0]), 2.0f)};
      })[0];
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 8.0f);
}

// The inner loop of the testNestedWhileGrad_*Inner cases: (i, x) -> (i + 1,
// 2x) four times.
Output TimesSixteen(const Scope& scope, const Output& s) {
  return While(
      scope, {Int(scope, 0), s},
      [](const Scope& c, const std::vector<Output>& v) { return Less(c, v[0], 4); },
      [](const Scope& b, const std::vector<Output>& v) {
        return std::vector<Output>{ops::Add(b, v[0], 1), ops::Mul(b, v[1], 2.0f)};
      })[1];
}

// testNestedWhileGrad_SerialInner: two inner loops one after the other, 256
// per outer iteration, once. TensorFlow: 256. (The first inner loop's Exit
// feeds the second's Enter directly: an inner loop's Exit is not one of
// the outer loop's, which its gradient waits for.)
TEST_F(ControlFlowOpsPortGradTest, NestedWhileGrad_SerialInner) {
  const Output v = Float(root_, 1.0f);
  const Output r = While(
      root_, {v},
      [](const Scope& c, const std::vector<Output>& x) { return Less(c, x[0], 128.0f); },
      [](const Scope& b, const std::vector<Output>& x) {
        return std::vector<Output>{TimesSixteen(b, TimesSixteen(b, x[0]))};
      })[0];
  const Output grad = Gradients(root_, {r}, {v})[0];
  EXPECT_FLOAT_EQ(RunFloat(r), 256.0f);
  EXPECT_FLOAT_EQ(RunFloat(grad), 256.0f);
}

// testNestedWhileGrad_ParallelInner: two inner loops from the same value,
// multiplied: 256 x^2, once.
TEST_F(ControlFlowOpsPortGradTest, NestedWhileGrad_ParallelInner) {
  const Output v = Float(root_, 1.0f);
  const Output r = While(
      root_, {v},
      [](const Scope& c, const std::vector<Output>& x) { return Less(c, x[0], 128.0f); },
      [](const Scope& b, const std::vector<Output>& x) {
        return std::vector<Output>{ops::Mul(b, TimesSixteen(b, x[0]), TimesSixteen(b, x[0]))};
      })[0];
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 512.0f);
}

// testNestedWhileCondWhileGrad: the inner loop inside a cond's branch in
// the outer loop's body: x -> (16 x)^2 from 1, once. TensorFlow: 512. The
// untaken branch's Mul(x, 2) has a gradient that reads x, whose else-side
// view is dead in every iteration.
TEST_F(ControlFlowOpsPortGradTest, NestedWhileCondWhileGrad) {
  const Output v = Float(root_, 1.0f);
  const Output r = While(
      root_, {v},
      [](const Scope& c, const std::vector<Output>& x) { return Less(c, x[0], 128.0f); },
      [](const Scope& b, const std::vector<Output>& x) {
        return std::vector<Output>{Cond(
            b, Bool(b, true),
            [&](const Scope& t) -> Output { return ops::Square(t, TimesSixteen(t, x[0])); },
            [&](const Scope& e) -> Output { return ops::Mul(e, x[0], 2.0f); })};
      })[0];
  EXPECT_FLOAT_EQ(RunFloat(Gradients(root_, {r}, {v})[0]), 512.0f);
}

// testWhileGradInWhile: the outer body replaces n by the gradient, with
// respect to x, of an inner loop adding x to n until 10: from n = 1 that
// is 9 (nine additions), which ends the outer loop. TensorFlow: 9.0 for
// x = 1.
// The inner loop is differentiated whole, inside the outer loop's body.
TEST_F(ControlFlowOpsPortGradTest, WhileGradInWhile) {
  const Output n = Float(root_.WithOpName("n"), 1.0f);
  const Output x = ops::Placeholder(root_.WithOpName("x"), DT_FLOAT);
  const Output r = While(
      root_, {n}, [](const Scope& c, const std::vector<Output>& v) { return Less(c, v[0], 6.0f); },
      [&](const Scope& b, const std::vector<Output>& v) {
        const Output inner = While(
            b, {v[0]},
            [](const Scope& c, const std::vector<Output>& w) { return Less(c, w[0], 10.0f); },
            [&](const Scope& bb, const std::vector<Output>& w) {
              return std::vector<Output>{ops::Add(bb, w[0], x)};
            })[0];
        return std::vector<Output>{Gradients(b, {inner}, {x})[0]};
      })[0];
  EXPECT_FLOAT_EQ(RunFloat(r, {{"x", Tensor::Scalar<float>(1.0f)}}), 9.0f);
}

// testCondGradInNestedWhiles: the inner body takes the gradient of a cond
// on its own loop variable: d(2x)/dx = 2 while x < 1, then 1. TensorFlow:
// i = 3, x = 1.0.
TEST_F(ControlFlowOpsPortGradTest, CondGradInNestedWhiles) {
  const std::vector<Output> r = While(
      root_, {Int(root_, 0), Float(root_, 0.0f)},
      [](const Scope& c, const std::vector<Output>& v) { return Less(c, v[0], 3); },
      [](const Scope& b, const std::vector<Output>& v) {
        const Output x = While(
            b, {Int(b, 0), Float(b, 0.0f)},
            [](const Scope& c, const std::vector<Output>& w) { return Less(c, w[0], 3); },
            [](const Scope& bb, const std::vector<Output>& w) {
              const Output y = Cond(
                  bb, Less(bb, w[1], 1.0f),
                  [&](const Scope& t) -> Output { return ops::Mul(t, 2.0f, w[1]); },
                  [&](const Scope&) { return w[1]; });
              return std::vector<Output>{ops::Add(bb, w[0], 1), Gradients(bb, {y}, {w[1]})[0]};
            })[1];
        return std::vector<Output>{ops::Add(b, v[0], 1), x};
      });
  const std::vector<Tensor> out = Run(r);
  EXPECT_EQ(::rill::testing::ScalarOf<int32_t>(out[0]), 3);
  EXPECT_FLOAT_EQ(::rill::testing::ScalarOf<float>(out[1]), 1.0f);
}

}  // namespace
}  // namespace rill
