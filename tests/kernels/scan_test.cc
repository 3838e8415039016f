// Cumsum and Cumprod (exclusive, reversed, along any axis) and Bucketize,
// against the examples in TensorFlow's documentation.
#include <cstdint>
#include <vector>

#include "graph/attr_value_util.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::vector<float> Scan(const char* op, bool exclusive, bool reverse) {
  KernelTester t(op);
  t.Attr("exclusive", exclusive).Attr("reverse", reverse);
  t.Input<float>({3}, {2, 3, 4}).Input<int32_t>({}, {0});
  absl::StatusOr<Tensor> out = t.RunOne();
  EXPECT_OK(out);
  return out.ok() ? Values<float>(*out) : std::vector<float>();
}

// tf.cumsum([a, b, c]): [a, a+b, a+b+c]; exclusive [0, a, a+b]; reverse
// [a+b+c, b+c, c]; both [b+c, c, 0].
TEST(Cumsum, InTheFourWays) {
  EXPECT_THAT(Scan("Cumsum", false, false), ElementsAre(2, 5, 9));
  EXPECT_THAT(Scan("Cumsum", true, false), ElementsAre(0, 2, 5));
  EXPECT_THAT(Scan("Cumsum", false, true), ElementsAre(9, 7, 4));
  EXPECT_THAT(Scan("Cumsum", true, true), ElementsAre(7, 4, 0));
}

TEST(Cumprod, InTheFourWays) {
  EXPECT_THAT(Scan("Cumprod", false, false), ElementsAre(2, 6, 24));
  EXPECT_THAT(Scan("Cumprod", true, false), ElementsAre(1, 2, 6));
  EXPECT_THAT(Scan("Cumprod", false, true), ElementsAre(24, 12, 4));
  EXPECT_THAT(Scan("Cumprod", true, true), ElementsAre(12, 4, 1));
}

TEST(Cumsum, AlongTheLastAxisOfAMatrix) {
  KernelTester t("Cumsum");
  t.Input<int64_t>({2, 3}, {1, 2, 3, 4, 5, 6}).Input<int64_t>({}, {-1});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(Values<int64_t>(out), ElementsAre(1, 3, 6, 4, 9, 15));
}

TEST(Cumsum, RefusesAnAxisOutOfRange) {
  KernelTester t("Cumsum");
  t.Input<float>({2}, {1, 2}).Input<int32_t>({}, {1});
  EXPECT_THAT(t.RunOne(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("axis 1 is out of range")));
}

// tf.raw_ops.Bucketize's example: boundaries [0, 10, 100].
TEST(Bucketize, AsTensorFlowsExample) {
  KernelTester t("Bucketize");
  AttrValue boundaries;
  for (float b : {0.f, 10.f, 100.f}) boundaries.mutable_list()->add_f(b);
  t.Attr("boundaries", boundaries).Input<int32_t>({3, 2}, {-5, 10000, 150, 10, 5, 100});
  ASSERT_OK_AND_ASSIGN(Tensor out, t.RunOne());
  EXPECT_THAT(Values<int32_t>(out), ElementsAre(0, 3, 3, 2, 1, 3));
}

}  // namespace
}  // namespace rill::testing
