#include "io/histogram.h"

#include <cfloat>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace rill {
namespace {

using ::testing::ElementsAre;

TEST(Histogram, DefaultBucketLimitsMirrorAroundZero) {
  const std::vector<double>& limits = Histogram::DefaultBucketLimits();
  // 774 positive limits from 1e-12 (1e-12 * 1.1^773 is just under 1e20),
  // DBL_MAX, their negations and 0.
  ASSERT_EQ(limits.size(), 2 * (774 + 1) + 1);
  const size_t zero = 775;
  EXPECT_EQ(limits.front(), -DBL_MAX);
  EXPECT_EQ(limits[zero - 1], -1e-12);
  EXPECT_EQ(limits[zero], 0.0);
  EXPECT_EQ(limits[zero + 1], 1e-12);
  EXPECT_EQ(limits[zero + 2], 1e-12 * 1.1);
  EXPECT_LT(limits[limits.size() - 2], 1e20);
  EXPECT_GT(limits[limits.size() - 2] * 1.1, 1e20);
  EXPECT_EQ(limits.back(), DBL_MAX);
  for (size_t i = 0; i < limits.size(); ++i) {
    EXPECT_EQ(limits[i], -limits[limits.size() - 1 - i]) << i;
    if (i > 0) {
      EXPECT_LT(limits[i - 1], limits[i]) << i;
    }
  }
}

TEST(Histogram, EmptyEncodesOneEmptyBucket) {
  Histogram h;
  HistogramProto proto;
  h.EncodeToProto(&proto);
  EXPECT_EQ(proto.min(), DBL_MAX);
  EXPECT_EQ(proto.max(), -DBL_MAX);
  EXPECT_EQ(proto.num(), 0);
  EXPECT_EQ(proto.sum(), 0);
  EXPECT_EQ(proto.sum_squares(), 0);
  EXPECT_THAT(proto.bucket_limit(), ElementsAre(DBL_MAX));
  EXPECT_THAT(proto.bucket(), ElementsAre(0.0));
}

TEST(Histogram, EncodingMergesRunsOfEmptyBuckets) {
  const std::vector<double>& limits = Histogram::DefaultBucketLimits();
  const size_t zero = 775;
  Histogram h;
  // 0 lies in [0, 1e-12), the bucket whose limit is 1e-12; 1e-12 itself
  // starts the next one.
  for (double v : {-1.0, 1.0, 0.0, 1e-12, 1e-12}) h.Add(v);
  EXPECT_EQ(h.min(), -1.0);
  EXPECT_EQ(h.max(), 1.0);
  EXPECT_EQ(h.num(), 5);
  EXPECT_EQ(h.sum(), 2e-12);
  EXPECT_DOUBLE_EQ(h.sum_squares(), 2.0);
  EXPECT_EQ(h.buckets()[zero + 1], 1);
  EXPECT_EQ(h.buckets()[zero + 2], 2);

  HistogramProto proto;
  h.EncodeToProto(&proto);
  // Each value counts in the bucket of the first limit above it.
  size_t minus_one = 0;
  while (limits[minus_one] <= -1.0) ++minus_one;
  size_t one = zero;
  while (limits[one] <= 1.0) ++one;
  EXPECT_THAT(proto.bucket_limit(),
              ElementsAre(limits[minus_one - 1], limits[minus_one], limits[zero], limits[zero + 1],
                          limits[zero + 2], limits[one - 1], limits[one], DBL_MAX));
  EXPECT_THAT(proto.bucket(), ElementsAre(0, 1, 0, 1, 2, 0, 1, 0));
  EXPECT_EQ(proto.min(), -1.0);
  EXPECT_EQ(proto.num(), 5);

  h.EncodeToProto(&proto, /*preserve_zero_buckets=*/true);
  EXPECT_EQ(proto.bucket_limit_size(), static_cast<int>(limits.size()));
  EXPECT_EQ(proto.bucket_size(), static_cast<int>(limits.size()));
}

TEST(Histogram, ExtremesLandInTheOuterBuckets) {
  Histogram h;
  h.Add(-DBL_MAX);
  h.Add(DBL_MAX);
  EXPECT_EQ(h.buckets()[1], 1);
  EXPECT_EQ(h.buckets().back(), 1);
  h.Clear();
  EXPECT_EQ(h.num(), 0);
  EXPECT_EQ(h.min(), DBL_MAX);
  for (double count : h.buckets()) EXPECT_EQ(count, 0);
}

}  // namespace
}  // namespace rill
