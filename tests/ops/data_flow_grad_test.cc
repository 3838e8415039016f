// Gradients through TensorArrays, run through a Session: numeric checks, and
// the expected values of TensorFlow's tensor_array_ops_test.py.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "gmock/gmock.h"
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
using ::testing::ElementsAre;

Tensor Floats(const TensorShape& shape, std::vector<float> values) {
  return Tensor::FromVector<float>(absl::MakeConstSpan(values), shape);
}

// A float tensor's shape and values, to compare with expected ones.
std::pair<std::string, std::vector<float>> Contents(const Tensor& t) {
  if (t.dtype() != DT_FLOAT) return {DataTypeString(t.dtype()), {}};
  return {t.shape().DebugString(),
          std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements())};
}

Output Const(const Scope& s, const TensorShape& shape, std::vector<float> values) {
  return ops::Const(s, Floats(shape, std::move(values)), DT_FLOAT);
}

// Runs the scope's graph once and returns the fetches.
std::vector<Tensor> RunGraph(const Scope& s, const std::vector<Output>& fetches) {
  absl::StatusOr<GraphDef> graph = s.ToGraphDef();
  EXPECT_OK(graph);
  if (!graph.ok()) return {};
  absl::StatusOr<std::unique_ptr<Session>> session = NewSession(SessionOptions(), *graph);
  EXPECT_OK(session);
  if (!session.ok()) return {};
  std::vector<std::string> names;
  for (const Output& f : fetches) names.push_back(f.name());
  absl::StatusOr<std::vector<Tensor>> out = (*session)->Run({}, names);
  EXPECT_OK(out);
  return out.ok() ? *out : std::vector<Tensor>();
}

TEST(TensorArrayGrad, WriteReadMatchesNumericGradient) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x0 = c.RandomInput({1, 2});
  const Output x1 = c.RandomInput({});
  const ops::TensorArrayV3 ta(s, 3, DT_DOUBLE);
  const ops::TensorArrayWriteV3 w0(s, ta.handle, 0, x0, ta.flow);
  const ops::TensorArrayWriteV3 w1(s, ta.handle, 1, x1, w0.flow_out);
  const ops::TensorArrayReadV3 r0(s, ta.handle, 0, w1.flow_out, DT_DOUBLE);
  const ops::TensorArrayReadV3 r1(s, ta.handle, 1, w1.flow_out, DT_DOUBLE);
  EXPECT_THAT(c.MaxError({ops::Mul(s, r0.value, r0.value), r1.value}), GradientErrorBelow(1e-7));
}

TEST(TensorArrayGrad, ScatterGatherMatchesNumericGradient) {
  GradientChecker c;
  const Scope& s = c.scope();
  const Output x = c.RandomInput({3, 2});
  const ops::TensorArrayV3 ta(s, 3, DT_DOUBLE);
  const ops::TensorArrayScatterV3 w(s, ta.handle, ops::Const(s, {2, 0, 1}), x, ta.flow);
  const ops::TensorArrayGatherV3 g(s, ta.handle, ops::Const(s, {1, 2, 0}), w.flow_out, DT_DOUBLE);
  EXPECT_THAT(c.MaxError({ops::Tanh(s, g.value)}), GradientErrorBelow(1e-7));
}

// testTensorArrayGradientWritePackConcatAndRead: the gradients of a
// stack, a read and a concat of the same elements add up.
TEST(TensorArrayGrad, WritePackConcatAndReadAddUp) {
  const Scope s = ops::NewRootScope();
  const ops::TensorArrayV3 ta(s, 2, DT_FLOAT, ops::TensorArrayV3::ClearAfterRead(false));
  const Output value_0 = Const(s, {2}, {-1, 1});
  const Output value_1 = Const(s, {2}, {-10, 10});
  const ops::TensorArrayWriteV3 w0(s, ta.handle, 0, value_0, ta.flow);
  const ops::TensorArrayWriteV3 w1(s, ta.handle, 1, value_1, w0.flow_out);
  const ops::TensorArrayGatherV3 p0(s, ta.handle, ops::Const(s, {0, 1}), w1.flow_out, DT_FLOAT);
  const ops::TensorArrayReadV3 r0(s, ta.handle, 0, w1.flow_out, DT_FLOAT);
  const ops::TensorArrayConcatV3 s0(s, ta.handle, w1.flow_out, DT_FLOAT);
  const Scope after =
      s.WithControlDependencies(std::vector<Operation>{p0.operation, r0.operation, s0.operation});
  ASSERT_OK_AND_ASSIGN(std::vector<Output> grads,
                       AddGradients(after, {p0.value, r0.value, s0.value}, {value_0, value_1},
                                    {Const(s, {2, 2}, {2, 3, 4, 5}), Const(s, {2}, {-0.5, 1.5}),
                                     Const(s, {4}, {20, 30, 40, 50})}));
  const std::vector<Tensor> out = RunGraph(s, grads);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(Contents(out[0]), Contents(Floats({2}, {2.0f - 0.5f + 20.0f, 3.0f + 1.5f + 30.0f})));
  EXPECT_EQ(Contents(out[1]), Contents(Floats({2}, {4.0f + 40.0f, 5.0f + 50.0f})));
}

// testTensorArrayGradientUnpackRead: two reads of one element add up.
TEST(TensorArrayGrad, UnpackReadAddsRepeatedReads) {
  const Scope s = ops::NewRootScope();
  const ops::TensorArrayV3 ta(s, 2, DT_FLOAT, ops::TensorArrayV3::ClearAfterRead(false));
  const Output value = Const(s, {2, 2}, {1, -1, 10, -10});
  const ops::TensorArrayScatterV3 w(s, ta.handle, ops::Const(s, {0, 1}), value, ta.flow);
  const ops::TensorArrayReadV3 r0(s, ta.handle, 0, w.flow_out, DT_FLOAT);
  const ops::TensorArrayReadV3 r0_1(s, ta.handle, 0, w.flow_out, DT_FLOAT);
  const ops::TensorArrayReadV3 r1(s, ta.handle, 1, w.flow_out, DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(
      std::vector<Output> grads,
      AddGradients(s, {r0.value, r0_1.value, r1.value}, {value},
                   {Const(s, {2}, {2, 3}), Const(s, {2}, {-1.5, 1.5}), Const(s, {2}, {4, 5})}));
  const std::vector<Tensor> out = RunGraph(s, grads);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Contents(out[0]), Contents(Floats({2, 2}, {2.0f - 1.5f, 3.0f + 1.5f, 4, 5})));
}

// testTensorArrayGradientSplitConcat.
TEST(TensorArrayGrad, SplitConcatPassesTheGradientThrough) {
  const Scope s = ops::NewRootScope();
  const ops::TensorArrayV3 ta(s, 2, DT_FLOAT);
  const Output value = Const(s, {3, 2}, {1, -1, 10, -10, 100, -100});
  const ops::TensorArraySplitV3 w(s, ta.handle, value,
                                  ops::Const(s, Tensor::FromVector<int64_t>({2, 1}, {2}), DT_INT64),
                                  ta.flow);
  const ops::TensorArrayConcatV3 r(s, ta.handle, w.flow_out, DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(
      std::vector<Output> grads,
      AddGradients(s, {r.value}, {value}, {Const(s, {3, 2}, {2, -2, 20, -20, 200, -200})}));
  const std::vector<Tensor> out = RunGraph(s, grads);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Contents(out[0]), Contents(Floats({3, 2}, {2, -2, 20, -20, 200, -200})));
}

// testTensorArrayGradientDynamicUnpackRead.
TEST(TensorArrayGrad, DynamicUnpackRead) {
  const Scope s = ops::NewRootScope();
  const ops::TensorArrayV3 ta(s, 0, DT_FLOAT, ops::TensorArrayV3::DynamicSize(true));
  const Output value = Const(s, {2, 2}, {1, -1, 10, -10});
  const ops::TensorArrayScatterV3 w(s, ta.handle, ops::Const(s, {0, 1}), value, ta.flow);
  const ops::TensorArrayReadV3 r0(s, ta.handle, 0, w.flow_out, DT_FLOAT);
  const ops::TensorArrayReadV3 r1(s, ta.handle, 1, w.flow_out, DT_FLOAT);
  ASSERT_OK_AND_ASSIGN(std::vector<Output> grads,
                       AddGradients(s, {r0.value, r1.value}, {value},
                                    {Const(s, {2}, {2, 3}), Const(s, {2}, {4, 5})}));
  const std::vector<Tensor> out = RunGraph(s, grads);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(Contents(out[0]), Contents(Floats({2, 2}, {2, 3, 4, 5})));
}

// Each gradients call has gradient arrays of its own, keyed by its name
// scope, so that two calls do not add into each other's.
TEST(TensorArrayGrad, EachGradientsCallHasItsOwnSource) {
  const Scope s = ops::NewRootScope();
  const ops::TensorArrayV3 ta(s, 1, DT_FLOAT, ops::TensorArrayV3::ClearAfterRead(false));
  const Output value = Const(s, {1}, {3});
  const ops::TensorArrayWriteV3 w(s, ta.handle, 0, value, ta.flow);
  const ops::TensorArrayReadV3 r(s, ta.handle, 0, w.flow_out, DT_FLOAT);
  ASSERT_OK(AddGradients(s, {r.value}, {value}).status());
  ASSERT_OK(AddGradients(s.NewSubScope("outer"), {r.value}, {value}).status());
  std::vector<std::string> sources;
  for (const Node* node : s.graph()->nodes()) {
    if (node->op() != "TensorArrayGradV3") continue;
    sources.push_back(node->def().attr().at("source").s());
  }
  std::sort(sources.begin(), sources.end());
  sources.erase(std::unique(sources.begin(), sources.end()), sources.end());
  EXPECT_THAT(sources, ElementsAre("gradients", "outer/gradients"));
}

}  // namespace
}  // namespace rill
