// Histogram: TensorFlow's summary histogram (exponential buckets, min, max,
// count, sum, sum of squares) and its encoding as a HistogramProto.
#ifndef RILL_IO_HISTOGRAM_H_
#define RILL_IO_HISTOGRAM_H_

#include <vector>

#include "graph/proto/summary.pb.h"

namespace rill {

// Bucket i counts the values v with limit[i-1] <= v < limit[i] (bucket 0:
// v < limit[0] = -DBL_MAX), as TensorFlow's Add finds it with upper_bound.
// Thread safety: none; callers serialize their calls.
class Histogram {
 public:
  Histogram();

  // TensorFlow's default limits, in increasing order: the positive ones
  // (1e-12, multiplied by 1.1 again and again while under 1e20, then
  // DBL_MAX) negated, 0.0, then the positive ones. Built once.
  static const std::vector<double>& DefaultBucketLimits();

  // Callers reject NaN and infinities first, as the summary ops do; a NaN
  // or a value at or above DBL_MAX is counted in the last bucket.
  void Add(double value);
  void Clear();

  double min() const { return min_; }  // DBL_MAX while empty.
  double max() const { return max_; }  // -DBL_MAX while empty.
  double num() const { return num_; }
  double sum() const { return sum_; }
  double sum_squares() const { return sum_squares_; }
  // Counts, one per bucket limit.
  const std::vector<double>& buckets() const { return buckets_; }

  // Replaces `proto` with this histogram. Unless `preserve_zero_buckets`,
  // each run of empty buckets becomes one entry (the limit of the run's
  // last bucket, count 0), as TensorFlow writes them.
  void EncodeToProto(HistogramProto* proto, bool preserve_zero_buckets = false) const;

 private:
  double min_;
  double max_;
  double num_;
  double sum_;
  double sum_squares_;
  std::vector<double> buckets_;
};

}  // namespace rill

#endif  // RILL_IO_HISTOGRAM_H_
