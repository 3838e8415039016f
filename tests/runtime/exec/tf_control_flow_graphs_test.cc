// GraphDefs that TensorFlow 1.x wrote with tf.while_loop, tf.cond and
// tf.nn.dynamic_rnn (tests/testdata/control_flow/README.md: sources and
// expected outputs), run by the executor's frames. The files are committed
// in tests/testdata/control_flow/; a test skips, naming the file, only when
// it is missing from the checkout.
#include <filesystem>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph_io.h"
#include "gtest/gtest.h"
#include "runtime/session.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::DoubleNear;
using ::testing::ElementsAre;
using ::testing::ElementsAreArray;
using ::testing::FloatEq;
using ::testing::HasSubstr;
using ::testing::Pointwise;

class TfControlFlowGraphs : public ::testing::Test {
 protected:
  // Where the GraphDefs are, in the source tree.
  static std::string Dir() {
    return ::rill::testing::SourceRoot() + "/tests/testdata/control_flow/";
  }

  // The session for `file`, or null after GTEST_SKIP when it is absent.
  std::unique_ptr<Session> Load(const std::string& file) {
    const std::string path = Dir() + file;
    if (!std::filesystem::exists(path)) return nullptr;
    absl::StatusOr<GraphDef> def = ReadGraphDef(path);
    EXPECT_TRUE(def.ok()) << def.status();
    if (!def.ok()) return nullptr;
    auto session = NewSession(SessionOptions(), *def);
    EXPECT_TRUE(session.ok()) << session.status();
    return session.ok() ? *std::move(session) : nullptr;
  }

  template <typename T>
  static std::vector<T> Values(const Tensor& t) {
    return std::vector<T>(t.flat<T>().data(), t.flat<T>().data() + t.NumElements());
  }
};

#define LOAD_OR_SKIP(session, file)              \
  std::unique_ptr<Session> session = Load(file); \
  if (session == nullptr) {                      \
    if (HasFailure()) return;                    \
    GTEST_SKIP() << "missing " << Dir() << file; \
  }

Tensor Floats(std::vector<float> values, TensorShape shape) {
  return Tensor::FromVector<float>(values, shape);
}

TEST_F(TfControlFlowGraphs, SimpleWhile) {
  LOAD_OR_SKIP(session, "dl4j_simple_while.pb");
  auto out = session->Run({}, {"output:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].scalar<int32_t>(), 10);
}

TEST_F(TfControlFlowGraphs, TwoLoopVariables) {
  LOAD_OR_SKIP(session, "dl4j_simplewhile_1.pb");
  const struct {
    std::vector<float> x;
    float y;
    std::vector<float> expected;
  } cases[] = {{{1, 2, 3, 4}, 21, {24, 25, 26, 27}},
               {{1, 2, 3, 4}, 5, {6, 7, 8, 9}},
               {{0.5, -1, 2, 0.25}, 40, {45.5, 44, 47, 45.25}}};
  for (const auto& c : cases) {
    auto out = session->Run({{"input_0", Floats(c.x, {2, 2})},
                             {"input_1", Tensor::Scalar<float>(c.y)}},
                            {"output:0"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values<float>((*out)[0]), Pointwise(FloatEq(), c.expected)) << c.y;
  }
}

TEST_F(TfControlFlowGraphs, NestedLoops) {
  LOAD_OR_SKIP(session, "dl4j_simplewhile_nested.pb");
  const struct {
    std::vector<float> x;
    float y;
    std::vector<float> expected;
  } cases[] = {{{1, 2, 3, 4}, 1, {13, 14, 15, 16}},
               {{10, 11, 12, 13}, 1, {11, 12, 13, 14}},
               {{1, 2, 3, 4}, 0.25, {13.25, 14.25, 15.25, 16.25}}};
  for (const auto& c : cases) {
    auto out = session->Run({{"input_0", Floats(c.x, {2, 2})},
                             {"input_1", Floats(std::vector<float>(9, c.y), {3, 3})}},
                            {"output:0"});
    ASSERT_TRUE(out.ok()) << out.status();
    EXPECT_THAT(Values<float>((*out)[0]), Pointwise(FloatEq(), c.expected)) << c.y;
  }
}

TEST_F(TfControlFlowGraphs, CondOnAFedPredicate) {
  LOAD_OR_SKIP(session, "dl4j_simpleif_0.pb");
  const std::vector<std::pair<std::string, Tensor>> taken = {
      {"input_0", Floats({1, 2, 3, 4}, {2, 2})}, {"input_1", Tensor::Scalar<float>(11)}};
  auto out = session->Run(taken, {"output:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(3, 4, 5, 6));
  const std::vector<std::pair<std::string, Tensor>> other = {
      {"input_0", Floats({1, 2, 3, 4}, {2, 2})}, {"input_1", Tensor::Scalar<float>(10)}};
  out = session->Run(other, {"output:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<float>((*out)[0]), ElementsAre(-1, 0, 1, 2));
  // The branch not taken is dead: fetching it fails.
  EXPECT_THAT(session->Run(other, {"cond/truefn:0"}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("dead")));
}

TEST_F(TfControlFlowGraphs, TwoCondsInFloat64) {
  LOAD_OR_SKIP(session, "dl4j_simple_cond.pb");
  auto out = session->Run({}, {"output:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<double>((*out)[0]), ElementsAre(10, 18, 26, 34));
}

TEST_F(TfControlFlowGraphs, DynamicRnnGruWithTensorArrays) {
  LOAD_OR_SKIP(session, "dl4j_primitive_gru_dynamic.pb");
  const std::vector<double> input = {
      -1.5, -1.25, -1, -0.75, -0.5, -0.25, 0, 0.25, 0.5, 0.75, 1, 1.25};
  auto out = session->Run({{"input", Tensor::FromVector<double>(input, TensorShape({1, 2, 6}))}},
                          {"output:0", "rnn/transpose:0"});
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_THAT(Values<double>((*out)[0]),
              Pointwise(DoubleNear(1e-10), std::vector<double>{0.530767778401, 0.469232221599}));
  EXPECT_THAT(Values<double>((*out)[1]),
              Pointwise(DoubleNear(1e-10),
                        std::vector<double>{-0.000500267561658, 0.0001962200364,
                                            0.000374395283112, -0.0020023198401,
                                            0.00114782124859, 0.000988994190911}));
}

}  // namespace
}  // namespace rill
