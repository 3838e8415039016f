// ops::WhileLoop: TensorFlow's cc/ops/while_loop_test.cc cases, with its
// expected numbers, plus loops that read tensors from outside and nest.
#include "graph/while_loop.h"

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

class WhileLoopTest : public ::testing::Test {
 protected:
  void Init(int num_inputs, DataType dtype = DT_INT32) {
    for (int i = 0; i < num_inputs; ++i) inputs_.push_back(ops::Placeholder(scope_, dtype));
  }

  absl::Status CreateLoop(const ops::CondGraphFn& cond, const ops::BodyGraphFn& body) {
    return ops::WhileLoop(scope_, inputs_, cond, body, &outputs_, {.frame_name = "test_loop"});
  }

  // Runs the loop with `values` fed and returns its int32 outputs.
  std::vector<int32_t> RunLoop(const std::vector<int32_t>& values) {
    absl::StatusOr<GraphDef> def = scope_.ToGraphDef();
    EXPECT_TRUE(def.ok()) << def.status();
    auto session = NewSession(SessionOptions(), *def);
    EXPECT_TRUE(session.ok()) << session.status();
    std::vector<std::pair<std::string, Tensor>> feeds;
    for (size_t i = 0; i < values.size(); ++i) {
      feeds.emplace_back(inputs_[i].name(), Tensor::Scalar<int32_t>(values[i]));
    }
    std::vector<std::string> fetches;
    for (const Output& output : outputs_) fetches.push_back(output.name());
    auto out = (*session)->Run(feeds, fetches);
    EXPECT_TRUE(out.ok()) << out.status();
    std::vector<int32_t> result;
    if (out.ok()) {
      for (const Tensor& t : *out) result.push_back(t.scalar<int32_t>());
    }
    return result;
  }

  Scope scope_ = ops::NewRootScope();
  std::vector<Output> inputs_;
  std::vector<Output> outputs_;
};

absl::Status LessThanTenCond(const Scope& s, const std::vector<Output>& inputs, Output* output) {
  *output = ops::Less(s, inputs[0], 10);
  return s.status();
}

absl::Status AddOneBody(const Scope& s, const std::vector<Output>& inputs,
                        std::vector<Output>* outputs) {
  outputs->push_back(ops::Add(s, inputs[0], 1));
  return s.status();
}

TEST_F(WhileLoopTest, Basic) {
  Init(1);
  ASSERT_TRUE(CreateLoop(LessThanTenCond, AddOneBody).ok());
  for (const Output& output : outputs_) EXPECT_EQ(output.node()->op(), "Exit");
  EXPECT_EQ(RunLoop({1}), std::vector<int32_t>{10});
  EXPECT_EQ(RunLoop({11}), std::vector<int32_t>{11});
}

TEST_F(WhileLoopTest, WrongCondOutputType) {
  Init(1);
  EXPECT_THAT(CreateLoop(
                  [](const Scope& s, const std::vector<Output>&, Output* output) {
                    *output = ops::Placeholder(s, DT_FLOAT);
                    return s.status();
                  },
                  AddOneBody),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the condition must be a bool scalar, got float")));
}

TEST_F(WhileLoopTest, NullCondOutputNode) {
  Init(1);
  EXPECT_THAT(CreateLoop(
                  [](const Scope& s, const std::vector<Output>&, Output* output) {
                    *output = Output();
                    return s.status();
                  },
                  AddOneBody),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got nothing")));
}

TEST_F(WhileLoopTest, InvalidCondOutputIndex) {
  Init(1);
  EXPECT_THAT(CreateLoop(
                  [](const Scope& s, const std::vector<Output>& inputs, Output* output) {
                    auto less = ops::Less(s, inputs[0], 10);
                    *output = Output(less.node(), 100);
                    return s.status();
                  },
                  AddOneBody),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("got nothing")));
}

TEST_F(WhileLoopTest, NullBodyOutputNode) {
  Init(1);
  EXPECT_THAT(CreateLoop(LessThanTenCond,
                         [](const Scope& s, const std::vector<Output>&,
                            std::vector<Output>* outputs) {
                           outputs->push_back(Output());
                           return s.status();
                         }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no valid value for loop variable 0")));
}

TEST_F(WhileLoopTest, InvalidBodyOutputIndex) {
  Init(1);
  EXPECT_THAT(CreateLoop(LessThanTenCond,
                         [](const Scope& s, const std::vector<Output>& inputs,
                            std::vector<Output>* outputs) {
                           auto add = ops::Add(s, inputs[0], 1);
                           outputs->emplace_back(add.node(), 100);
                           return s.status();
                         }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("no valid value for loop variable 0")));
}

TEST_F(WhileLoopTest, UnsetBodyOutputs) {
  Init(1);
  EXPECT_THAT(CreateLoop(LessThanTenCond,
                         [](const Scope& s, const std::vector<Output>&,
                            std::vector<Output>*) { return s.status(); }),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("the body returns 0 values for 1 loop variables")));
}

// while (i < 10) { i += 1; j *= 2 }, from (0, 1): (10, 1024).
TEST_F(WhileLoopTest, TwoLoopVariables) {
  Init(2);
  ASSERT_TRUE(CreateLoop(LessThanTenCond,
                         [](const Scope& s, const std::vector<Output>& in,
                            std::vector<Output>* out) {
                           out->push_back(ops::Add(s, in[0], 1));
                           out->push_back(ops::Mul(s, in[1], 2));
                           return s.status();
                         })
                  .ok());
  EXPECT_EQ(RunLoop({0, 1}), (std::vector<int32_t>{10, 1024}));
}

// The body reads a tensor built before the loop: it enters as a loop
// invariant.
TEST_F(WhileLoopTest, ReadsATensorFromOutside) {
  Init(1);
  const Output step = ops::Placeholder(scope_.WithOpName("step"), DT_INT32);
  ASSERT_TRUE(CreateLoop(LessThanTenCond,
                         [&](const Scope& s, const std::vector<Output>& in,
                             std::vector<Output>* out) {
                           out->push_back(ops::Add(s, in[0], step));
                           return s.status();
                         })
                  .ok());
  auto def = scope_.ToGraphDef();
  ASSERT_TRUE(def.ok());
  auto session = NewSession(SessionOptions(), *def);
  ASSERT_TRUE(session.ok());
  auto out = (*session)->Run({{inputs_[0].name(), Tensor::Scalar<int32_t>(0)},
                              {"step", Tensor::Scalar<int32_t>(3)}},
                             {outputs_[0].name()});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 12);
}

// for i in range(3): for j in range(4): total += i  ->  12.
TEST_F(WhileLoopTest, NestedLoopsReadTheOuterLoopsValues) {
  Init(2);  // i, total
  ASSERT_TRUE(
      CreateLoop(
          [](const Scope& s, const std::vector<Output>& in, Output* out) {
            *out = ops::Less(s, in[0], 3);
            return s.status();
          },
          [](const Scope& s, const std::vector<Output>& outer, std::vector<Output>* out) {
            std::vector<Output> inner_out;
            RETURN_IF_ERROR(ops::WhileLoop(
                s, {ops::Const(s, Tensor::Scalar<int32_t>(0), DT_INT32), outer[1]},
                [](const Scope& c, const std::vector<Output>& in, Output* o) {
                  *o = ops::Less(c, in[0], 4);
                  return c.status();
                },
                [&](const Scope& b, const std::vector<Output>& in, std::vector<Output>* o) {
                  o->push_back(ops::Add(b, in[0], 1));
                  o->push_back(ops::Add(b, in[1], outer[0]));
                  return b.status();
                },
                &inner_out));
            out->push_back(ops::Add(s, outer[0], 1));
            out->push_back(inner_out[1]);
            return s.status();
          })
          .ok())
      << scope_.status();
  EXPECT_EQ(RunLoop({0, 0}), (std::vector<int32_t>{3, 12}));
}

}  // namespace
}  // namespace rill
