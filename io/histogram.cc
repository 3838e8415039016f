#include "io/histogram.h"

#include <algorithm>
#include <cfloat>
#include <cstddef>

namespace rill {
namespace {

std::vector<double> MakeDefaultBucketLimits() {
  std::vector<double> positive;
  // Repeated multiplication, not pow(), so that every limit is bit for bit
  // the one TensorFlow computes.
  for (double v = 1.0e-12; v < 1.0e20; v *= 1.1) positive.push_back(v);
  positive.push_back(DBL_MAX);
  std::vector<double> limits;
  limits.reserve(2 * positive.size() + 1);
  for (auto it = positive.rbegin(); it != positive.rend(); ++it) limits.push_back(-*it);
  limits.push_back(0.0);
  limits.insert(limits.end(), positive.begin(), positive.end());
  return limits;
}

}  // namespace

const std::vector<double>& Histogram::DefaultBucketLimits() {
  static const std::vector<double>* const limits =
      new std::vector<double>(MakeDefaultBucketLimits());
  return *limits;
}

Histogram::Histogram() { Clear(); }

void Histogram::Clear() {
  const std::vector<double>& limits = DefaultBucketLimits();
  min_ = limits.back();
  max_ = -DBL_MAX;
  num_ = 0;
  sum_ = 0;
  sum_squares_ = 0;
  buckets_.assign(limits.size(), 0.0);
}

void Histogram::Add(double value) {
  const std::vector<double>& limits = DefaultBucketLimits();
  const size_t b = std::upper_bound(limits.begin(), limits.end(), value) - limits.begin();
  // upper_bound passes the end for DBL_MAX itself and for NaN.
  buckets_[std::min(b, buckets_.size() - 1)] += 1.0;
  if (min_ > value) min_ = value;
  if (max_ < value) max_ = value;
  num_ += 1;
  sum_ += value;
  sum_squares_ += value * value;
}

void Histogram::EncodeToProto(HistogramProto* proto, bool preserve_zero_buckets) const {
  proto->Clear();
  proto->set_min(min_);
  proto->set_max(max_);
  proto->set_num(num_);
  proto->set_sum(sum_);
  proto->set_sum_squares(sum_squares_);
  const std::vector<double>& limits = DefaultBucketLimits();
  for (size_t i = 0; i < buckets_.size();) {
    double end = limits[i];
    double count = buckets_[i];
    ++i;
    if (!preserve_zero_buckets && count <= 0.0) {
      while (i < buckets_.size() && buckets_[i] <= 0.0) {
        end = limits[i];
        count = buckets_[i];
        ++i;
      }
    }
    proto->add_bucket_limit(end);
    proto->add_bucket(count);
  }
  // Readers rely on at least one bucket.
  if (proto->bucket_size() == 0) {
    proto->add_bucket_limit(DBL_MAX);
    proto->add_bucket(0.0);
  }
}

}  // namespace rill
