// TensorFlow's cc/framework/while_gradients_test.cc, with its expected
// gradients. TensorFlow runs these loops on int32; here they run on
// float64, since integer tensors carry no gradients (as tf.gradients),
// and the functions are linear, so the numbers are TensorFlow's.
#include "graph/while_gradients.h"

#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "ops/gradients.h"
#include "ops/ops.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

class WhileGradientsTest : public ::testing::Test {
 protected:
  void Init(int num_inputs) {
    for (int i = 0; i < num_inputs; ++i) {
      inputs_.push_back(ops::Placeholder(scope_.WithOpName("x" + std::to_string(i)), DT_DOUBLE));
    }
  }

  void CreateLoop(const ops::CondGraphFn& cond, const ops::BodyGraphFn& body,
                  const std::vector<Output>* inputs = nullptr) {
    ASSERT_TRUE(ops::WhileLoop(scope_, inputs == nullptr ? inputs_ : *inputs, cond, body,
                               &outputs_, {.frame_name = "test_loop"})
                    .ok())
        << scope_.status();
  }

  void CreateBackprop(const Scope& scope) {
    auto grads = AddGradients(scope, outputs_, inputs_, {});
    ASSERT_TRUE(grads.ok()) << grads.status();
    grad_outputs_ = *grads;
  }

  void Run(const std::vector<double>& values, const std::vector<double>& expected,
           int cpus = 1) {
    auto def = scope_.ToGraphDef();
    ASSERT_TRUE(def.ok()) << def.status();
    SessionOptions options;
    options.device_count["CPU"] = cpus;
    auto session = NewSession(options, *def);
    ASSERT_TRUE(session.ok()) << session.status();
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < values.size(); ++i) {
      feeds.emplace_back(inputs_[i].name(), Tensor::Scalar<double>(values[i]));
    }
    std::vector<std::string> fetches;
    for (const Output& g : grad_outputs_) fetches.push_back(g.name());
    auto out = (*session)->Run(feeds, fetches);
    ASSERT_TRUE(out.ok()) << out.status();
    for (size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ((*out)[i].scalar<double>(), expected[i]) << "input " << i;
    }
  }

  Scope scope_ = ops::NewRootScope();
  std::vector<Output> inputs_;
  std::vector<Output> outputs_;
  std::vector<Output> grad_outputs_;
};

absl::Status LessThanTen(const Scope& s, const std::vector<Output>& in, Output* out) {
  *out = ops::Less(s, in[0], 10.0);
  return s.status();
}

// while (i < 10) i += 1
TEST_F(WhileGradientsTest, Basic) {
  Init(1);
  CreateLoop(LessThanTen, [](const Scope& s, const std::vector<Output>& in,
                             std::vector<Output>* out) {
    out->push_back(ops::AddN(s, {in[0], ops::Const(s, 1.0)}));
    return s.status();
  });
  CreateBackprop(scope_);
  Run({1}, {1});
  Run({11}, {1});
}

// while (i < 10) { i += j; j += 1; k = k }: dF/dj is 5 from (0, 1, 2).
TEST_F(WhileGradientsTest, MultipleLoopVars) {
  Init(3);
  CreateLoop(LessThanTen, [](const Scope& s, const std::vector<Output>& in,
                             std::vector<Output>* out) {
    out->push_back(ops::AddN(s, {in[0], in[1]}));
    out->push_back(ops::AddN(s, {in[1], ops::Const(s, 1.0)}));
    out->push_back(in[2]);
    return s.status();
  });
  CreateBackprop(scope_);
  Run({0, 1, 2}, {1, 5, 1});
  Run({1, 1, 0}, {1, 5, 1});
  Run({0, 0, 0}, {1, 6, 1});
}

// Ops before and after the loop: its inputs doubled, an output negated.
TEST_F(WhileGradientsTest, Chaining) {
  Init(2);
  const std::vector<Output> loop_inputs = {ops::Mul(scope_, inputs_[0], 2.0),
                                           ops::Mul(scope_, inputs_[1], 2.0)};
  CreateLoop(
      [](const Scope& s, const std::vector<Output>& in, Output* out) {
        *out = ops::LogicalAnd(s, ops::Greater(s, in[0], 0.0), ops::Greater(s, in[1], 0.0));
        return s.status();
      },
      [](const Scope& s, const std::vector<Output>& in, std::vector<Output>* out) {
        out->push_back(ops::AddN(s, {in[0], ops::Const(s, -1.0)}));
        out->push_back(in[1]);
        return s.status();
      },
      &loop_inputs);
  outputs_[0] = ops::Neg(scope_, outputs_[0]);
  CreateBackprop(scope_);
  Run({1, 1}, {-2, 2});
  Run({0, 0}, {-2, 2});
}

// The loop on cpu:0, its body and the gradient on cpu:1.
TEST_F(WhileGradientsTest, MultipleDevices) {
  scope_ = scope_.WithDevice("/cpu:0");
  Init(2);
  CreateLoop(LessThanTen, [](const Scope& s, const std::vector<Output>& in,
                             std::vector<Output>* out) {
    const Scope cpu1 = s.WithDevice("/cpu:1");
    out->push_back(ops::AddN(cpu1, {in[0], in[1]}));
    out->push_back(in[1]);
    return cpu1.status();
  });
  CreateBackprop(scope_.WithDevice("/cpu:1"));
  Run({0, 1}, {1, 11}, /*cpus=*/2);
}

}  // namespace
}  // namespace rill
