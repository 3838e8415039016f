// FusedBatchNorm, V2, V3 and their gradient kernels against hand-worked numbers and a
// reference loop (TensorFlow's numpy one), in every layout, and on bad input.
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "graph/tensor.h"
#include "gtest/gtest.h"
#include "tests/kernels/kernel_tester.h"
#include "tests/test_util.h"

namespace rill::testing {
namespace {

using ::testing::HasSubstr;

std::vector<float> Values(const Tensor& t) {
  return std::vector<float>(t.data<float>(), t.data<float>() + t.NumElements());
}

Tensor Vec(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return MakeTensor<float>({n}, std::move(values));
}

// x of a channels-last shape moved to channels-first (to_first) or back.
Tensor MoveChannels(const Tensor& x, bool to_first) {
  const int rank = x.dims();
  std::vector<int64_t> dims;
  for (int d = 0; d < rank; ++d) dims.push_back(x.dim_size(d));
  const int64_t n = dims[0];
  const int64_t c = to_first ? dims[rank - 1] : dims[1];
  const int64_t spatial = x.NumElements() / (n * c);
  std::vector<int64_t> out_dims = dims;
  if (to_first) {
    out_dims.erase(out_dims.end() - 1);
    out_dims.insert(out_dims.begin() + 1, c);
  } else {
    out_dims.erase(out_dims.begin() + 1);
    out_dims.push_back(c);
  }
  std::vector<float> out(static_cast<size_t>(x.NumElements()));
  const float* in = x.data<float>();
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t s = 0; s < spatial; ++s) {
      for (int64_t k = 0; k < c; ++k) {
        const int64_t last = (b * spatial + s) * c + k;
        const int64_t first = (b * c + k) * spatial + s;
        if (to_first) {
          out[first] = in[last];
        } else {
          out[last] = in[first];
        }
      }
    }
  }
  return Tensor::FromVector<float>(absl::MakeConstSpan(out), TensorShape(out_dims));
}

// The reference: per channel of channels-last x, normalized with the batch
// moments (training) or the given ones, in double.
struct Reference {
  std::vector<double> y;
  std::vector<double> mean;
  std::vector<double> variance;  // Biased.
};

Reference BatchNormReference(const std::vector<double>& x, int64_t channels,
                             const std::vector<double>& scale, const std::vector<double>& offset,
                             const std::vector<double>* mean, const std::vector<double>* variance,
                             double epsilon) {
  const int64_t rest = static_cast<int64_t>(x.size()) / channels;
  Reference r;
  r.mean.assign(static_cast<size_t>(channels), 0);
  r.variance.assign(static_cast<size_t>(channels), 0);
  if (mean != nullptr) {
    r.mean = *mean;
    r.variance = *variance;
  } else {
    for (int64_t i = 0; i < rest; ++i) {
      for (int64_t c = 0; c < channels; ++c) r.mean[c] += x[i * channels + c] / rest;
    }
    for (int64_t i = 0; i < rest; ++i) {
      for (int64_t c = 0; c < channels; ++c) {
        const double d = x[i * channels + c] - r.mean[c];
        r.variance[c] += d * d / rest;
      }
    }
  }
  r.y.resize(x.size());
  for (int64_t i = 0; i < rest; ++i) {
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t at = i * channels + c;
      r.y[at] = (x[at] - r.mean[c]) / std::sqrt(r.variance[c] + epsilon) * scale[c] + offset[c];
    }
  }
  return r;
}

std::vector<double> Doubles(const Tensor& t) {
  return std::vector<double>(t.data<float>(), t.data<float>() + t.NumElements());
}

Tensor FloatsOf(const std::vector<double>& v, const TensorShape& shape) {
  std::vector<float> f(v.begin(), v.end());
  return Tensor::FromVector<float>(absl::MakeConstSpan(f), shape);
}

KernelTester BatchNorm(const std::string& op, const std::string& format, bool training,
                       float epsilon = 0.001f) {
  KernelTester t(op);
  t.Attr("data_format", format).Attr("is_training", training).Attr("epsilon", epsilon);
  return t;
}

// x = [[1, 2], [3, 4]] in NHWC [1, 2, 1, 2]: channel 0 holds 1 and 3,
// channel 1 holds 2 and 4.
TEST(FusedBatchNorm, InferenceNormalizesWithTheGivenMoments) {
  KernelTester t = BatchNorm("FusedBatchNormV3", "NHWC", false, 0.0f);
  t.Input<float>({1, 2, 1, 2}, {1, 2, 3, 4})
      .Input(Vec({2, 1}))
      .Input(Vec({0.5f, -1}))
      .Input(Vec({1, 2}))
      .Input(Vec({4, 1}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  ASSERT_EQ(out.size(), 6u);
  EXPECT_THAT(out[0], TensorNear(MakeTensor<float>({1, 2, 1, 2}, {0.5f, -1, 2.5f, 1}), 1e-6, 0));
  EXPECT_THAT(out[1], TensorEq(Vec({1, 2})));
  EXPECT_THAT(out[2], TensorEq(Vec({4, 1})));
  EXPECT_THAT(out[3], TensorEq(Vec({1, 2})));
  EXPECT_THAT(out[4], TensorEq(Vec({4, 1})));
  // V3's reserve_space_3 is TensorFlow's CPU placeholder: a zero scalar.
  EXPECT_THAT(out[5], TensorEq(MakeTensor<float>({}, {0})));
}

// The batch's moments: means [2, 3], biased variances [1, 1]; the reported
// batch_variance is the unbiased one, 1 * 2 / (2 - 1) = 2, while the
// reserve spaces keep the biased one for the gradient. Keras feeds empty
// mean and variance in training.
TEST(FusedBatchNorm, TrainingUsesTheBatchMomentsAndReportsUnbiasedVariance) {
  KernelTester t = BatchNorm("FusedBatchNormV3", "NHWC", true, 0.0f);
  t.Input<float>({1, 2, 1, 2}, {1, 2, 3, 4})
      .Input(Vec({1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({}))
      .Input(Vec({}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorNear(MakeTensor<float>({1, 2, 1, 2}, {-1, -1, 1, 1}), 1e-6, 0));
  EXPECT_THAT(out[1], TensorEq(Vec({2, 3})));
  EXPECT_THAT(out[2], TensorEq(Vec({2, 2})));
  EXPECT_THAT(out[3], TensorEq(Vec({2, 3})));
  EXPECT_THAT(out[4], TensorEq(Vec({1, 1})));
}

// new = (1 - f) * old + f * batch, the variance's batch term unbiased.
TEST(FusedBatchNorm, ExponentialAverageFactorBlendsTheRunningMoments) {
  KernelTester t = BatchNorm("FusedBatchNormV3", "NHWC", true, 0.0f);
  t.Attr("exponential_avg_factor", 0.25f)
      .Input<float>({1, 2, 1, 2}, {1, 2, 3, 4})
      .Input(Vec({1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({10, -2}))
      .Input(Vec({6, 10}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorNear(MakeTensor<float>({1, 2, 1, 2}, {-1, -1, 1, 1}), 1e-6, 0));
  EXPECT_THAT(out[1], TensorNear(Vec({0.75f * 10 + 0.25f * 2, 0.75f * -2 + 0.25f * 3}), 1e-6, 0));
  EXPECT_THAT(out[2], TensorNear(Vec({0.75f * 6 + 0.25f * 2, 0.75f * 10 + 0.25f * 2}), 1e-6, 0));
  EXPECT_THAT(out[3], TensorEq(Vec({2, 3})));
  EXPECT_THAT(out[4], TensorEq(Vec({1, 1})));
}

// Random data against the reference, channels-last and channels-first, 4-D
// and 5-D; the channels-first run sees the same data transposed.
void ExpectMatchesReference(const std::string& op, const TensorShape& shape, bool training) {
  const int rank = shape.dims();
  const int64_t channels = shape.dim_size(rank - 1);
  const Tensor x = RandomTensor(DT_FLOAT, shape, 7, -3, 5);
  const Tensor scale = RandomTensor(DT_FLOAT, {channels}, 8, 0.5, 2);
  const Tensor offset = RandomTensor(DT_FLOAT, {channels}, 9);
  const Tensor mean = RandomTensor(DT_FLOAT, {channels}, 10);
  const Tensor variance = RandomTensor(DT_FLOAT, {channels}, 11, 0.5, 2);
  const float epsilon = 0.001f;
  const std::vector<double> mean_d = Doubles(mean), variance_d = Doubles(variance);
  const Reference ref =
      BatchNormReference(Doubles(x), channels, Doubles(scale), Doubles(offset),
                         training ? nullptr : &mean_d, training ? nullptr : &variance_d, epsilon);
  const int64_t n = x.NumElements() / channels;
  std::vector<double> reported = ref.variance;
  if (training) {
    for (double& v : reported) v *= static_cast<double>(n) / (n - 1);
  }
  const std::vector<std::string> formats = rank == 4 ? std::vector<std::string>{"NHWC", "NCHW"}
                                                     : std::vector<std::string>{"NDHWC", "NCDHW"};
  for (const std::string& format : formats) {
    SCOPED_TRACE(format);
    const bool first = format[1] == 'C';
    KernelTester t = BatchNorm(op, format, training, epsilon);
    t.Input(first ? MoveChannels(x, true) : x)
        .Input(scale)
        .Input(offset)
        .Input(mean)
        .Input(variance);
    ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
    const Tensor y = first ? MoveChannels(out[0], false) : out[0];
    EXPECT_THAT(y, TensorNear(FloatsOf(ref.y, shape), 1e-5, 1e-5));
    EXPECT_THAT(out[1], TensorNear(FloatsOf(ref.mean, {channels}), 1e-5, 1e-5));
    EXPECT_THAT(out[2], TensorNear(FloatsOf(reported, {channels}), 1e-5, 1e-5));
  }
}

TEST(FusedBatchNorm, TrainingMatchesTheReferenceInNhwcAndNchw) {
  ExpectMatchesReference("FusedBatchNormV3", {2, 3, 4, 3}, true);
}

TEST(FusedBatchNorm, InferenceMatchesTheReferenceInNhwcAndNchw) {
  ExpectMatchesReference("FusedBatchNormV3", {2, 3, 4, 3}, false);
}

TEST(FusedBatchNorm, FiveDimensionalLayoutsMatchTheReference) {
  ExpectMatchesReference("FusedBatchNormV3", {2, 2, 3, 2, 4}, true);
  ExpectMatchesReference("FusedBatchNormV3", {2, 2, 3, 2, 4}, false);
}

TEST(FusedBatchNorm, OlderVersionsComputeTheSame) {
  ExpectMatchesReference("FusedBatchNorm", {2, 2, 2, 3}, true);
  ExpectMatchesReference("FusedBatchNormV2", {2, 2, 2, 3}, false);
}

// The loss sum(dy * y) nudged one element of x at a time, through the
// reference in double.
std::vector<double> NumericXGradient(const std::vector<double>& x, int64_t channels,
                                     const std::vector<double>& scale,
                                     const std::vector<double>& offset,
                                     const std::vector<double>& dy, const std::vector<double>* mean,
                                     const std::vector<double>* variance, double epsilon) {
  std::vector<double> grad(x.size());
  const double h = 1e-5;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    const Reference p = BatchNormReference(xp, channels, scale, offset, mean, variance, epsilon);
    const Reference m = BatchNormReference(xm, channels, scale, offset, mean, variance, epsilon);
    double diff = 0;
    for (size_t j = 0; j < x.size(); ++j) diff += dy[j] * (p.y[j] - m.y[j]);
    grad[i] = diff / (2 * h);
  }
  return grad;
}

void ExpectGradMatchesDifferences(const std::string& format, bool training) {
  SCOPED_TRACE(format);
  const TensorShape shape({2, 2, 3, 3});
  const int64_t channels = 3;
  const Tensor x = RandomTensor(DT_FLOAT, shape, 3, -2, 2);
  const Tensor dy = RandomTensor(DT_FLOAT, shape, 4);
  const Tensor scale = RandomTensor(DT_FLOAT, {channels}, 5, 0.5, 2);
  const Tensor offset = RandomTensor(DT_FLOAT, {channels}, 6);
  const Tensor pop_mean = RandomTensor(DT_FLOAT, {channels}, 7);
  const Tensor pop_variance = RandomTensor(DT_FLOAT, {channels}, 8, 0.5, 2);
  const float epsilon = 0.001f;
  const std::vector<double> pm = Doubles(pop_mean), pv = Doubles(pop_variance);
  const std::vector<double>* mean = training ? nullptr : &pm;
  const std::vector<double>* variance = training ? nullptr : &pv;
  const Reference ref = BatchNormReference(Doubles(x), channels, Doubles(scale), Doubles(offset),
                                           mean, variance, epsilon);
  const std::vector<double> dx = NumericXGradient(
      Doubles(x), channels, Doubles(scale), Doubles(offset), Doubles(dy), mean, variance, epsilon);
  // d/dscale = sum(dy * x_hat), d/doffset = sum(dy), per channel.
  std::vector<double> dscale(channels), doffset(channels);
  const std::vector<double> dys = Doubles(dy), scales = Doubles(scale), offsets = Doubles(offset);
  for (size_t i = 0; i < dys.size(); ++i) {
    const size_t c = i % channels;
    dscale[c] += dys[i] * (ref.y[i] - offsets[c]) / scales[c];
    doffset[c] += dys[i];
  }
  const bool first = format[1] == 'C';
  KernelTester t = BatchNorm("FusedBatchNormGradV3", format, training, epsilon);
  // In training the reserve spaces are the batch's mean and biased
  // variance, as the forward kernel saves them.
  t.Input(first ? MoveChannels(dy, true) : dy)
      .Input(first ? MoveChannels(x, true) : x)
      .Input(scale)
      .Input(FloatsOf(ref.mean, {channels}))
      .Input(FloatsOf(ref.variance, {channels}))
      .Input(MakeTensor<float>({}, {0}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  ASSERT_EQ(out.size(), 5u);
  const Tensor x_backprop = first ? MoveChannels(out[0], false) : out[0];
  EXPECT_THAT(x_backprop, TensorNear(FloatsOf(dx, shape), 1e-3, 1e-3));
  EXPECT_THAT(out[1], TensorNear(FloatsOf(dscale, {channels}), 1e-4, 1e-4));
  EXPECT_THAT(out[2], TensorNear(FloatsOf(doffset, {channels}), 1e-4, 1e-4));
  EXPECT_EQ(out[3].shape(), TensorShape({0}));
  EXPECT_EQ(out[4].shape(), TensorShape({0}));
}

TEST(FusedBatchNormGrad, TrainingMatchesDifferencesOfTheForward) {
  ExpectGradMatchesDifferences("NHWC", true);
  ExpectGradMatchesDifferences("NCHW", true);
}

TEST(FusedBatchNormGrad, InferenceMatchesDifferencesOfTheForward) {
  ExpectGradMatchesDifferences("NHWC", false);
  ExpectGradMatchesDifferences("NCHW", false);
}

// In inference the gradient is dy scaled per channel: scale / sqrt(var).
TEST(FusedBatchNormGrad, InferenceScalesByTheGivenVariance) {
  KernelTester t = BatchNorm("FusedBatchNormGrad", "NHWC", false, 0.0f);
  t.Input<float>({1, 2, 1, 2}, {1, 1, 2, -1})
      .Input<float>({1, 2, 1, 2}, {1, 2, 3, 4})
      .Input(Vec({2, 3}))
      .Input(Vec({1, 2}))
      .Input(Vec({4, 9}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_THAT(out[0], TensorNear(MakeTensor<float>({1, 2, 1, 2}, {1, 1, 2, -1}), 1e-6, 0));
  // scale_backprop = sum(dy * (x - mean)) / std: channel 0 (1*0 + 2*2) / 2,
  // channel 1 (1*0 + -1*2) / 3.
  EXPECT_THAT(out[1], TensorNear(Vec({2, -2.0f / 3}), 1e-6, 0));
  EXPECT_THAT(out[2], TensorEq(Vec({3, 0})));
}

TEST(FusedBatchNorm, EmptyBatchGivesNanMoments) {
  KernelTester t = BatchNorm("FusedBatchNormV3", "NHWC", true);
  t.Input<float>({0, 2, 2, 2}, {})
      .Input(Vec({1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({}))
      .Input(Vec({}));
  ASSERT_OK_AND_ASSIGN(std::vector<Tensor> out, t.Run());
  EXPECT_EQ(out[0].NumElements(), 0);
  EXPECT_TRUE(std::isnan(Values(out[1])[0]));
  EXPECT_TRUE(std::isnan(Values(out[2])[1]));
}

// Shapes unknown to shape inference, so that the kernel's own checks run.
TEST(FusedBatchNorm, RefusesBadShapes) {
  auto run = [](const std::string& format, bool training, const TensorShape& x_shape,
                std::vector<float> scale, std::vector<float> mean) {
    KernelTester t = BatchNorm("FusedBatchNormV3", format, training);
    std::vector<float> x(static_cast<size_t>(x_shape.num_elements()), 1.0f);
    t.UnknownInputShapes()
        .Input<float>(x_shape, x)
        .Input(Vec(scale))
        .Input(Vec({0, 0}))
        .Input(Vec(mean))
        .Input(Vec(mean));
    return t.Run();
  };
  EXPECT_THAT(run("NHWC", true, {2, 2, 2}, {1, 1}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("FusedBatchNormV3: x must be 4-D for data_format NHWC")));
  EXPECT_THAT(run("NDHWC", true, {1, 2, 2, 2}, {1, 1}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("x must be 5-D")));
  EXPECT_THAT(run("NCHW", true, {1, 3, 2, 2}, {1, 1}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("scale must have one element per channel of x (3)")));
  EXPECT_THAT(run("NHWC", true, {1, 2, 2, 3}, {1, 1, 1}, {}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("offset must have one")));
  EXPECT_THAT(run("NHWC", false, {1, 2, 2, 2}, {1, 1}, {1}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("mean must have one")));
}

TEST(FusedBatchNorm, ShapeInferenceRefusesChannelMismatches) {
  KernelTester t = BatchNorm("FusedBatchNormV3", "NHWC", false);
  t.Input<float>({1, 1, 1, 2}, {1, 2})
      .Input(Vec({1, 1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({0, 0}))
      .Input(Vec({1, 1}));
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("scale has 3 elements but x has 2 channels")));
}

TEST(FusedBatchNorm, RefusesAnUnknownDataFormat) {
  KernelTester t = BatchNorm("FusedBatchNorm", "NCDHW", true);
  t.Input<float>({1, 1, 1, 1, 2}, {1, 2})
      .Input(Vec({1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({}))
      .Input(Vec({}));
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("data_format")));
}

TEST(FusedBatchNormGrad, RefusesMismatchedShapes) {
  KernelTester t = BatchNorm("FusedBatchNormGradV3", "NHWC", true);
  t.UnknownInputShapes()
      .Input<float>({1, 1, 2, 2}, {1, 2, 3, 4})
      .Input<float>({1, 2, 1, 2}, {1, 2, 3, 4})
      .Input(Vec({1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({1, 1}))
      .Input(Vec({0}));
  EXPECT_THAT(t.Run(), StatusIs(absl::StatusCode::kInvalidArgument,
                                HasSubstr("x and y_backprop must have the same shape")));
  KernelTester bad_variance = BatchNorm("FusedBatchNormGrad", "NHWC", false);
  bad_variance.UnknownInputShapes()
      .Input<float>({1, 1, 1, 2}, {1, 2})
      .Input<float>({1, 1, 1, 2}, {1, 2})
      .Input(Vec({1, 1}))
      .Input(Vec({0, 0}))
      .Input(Vec({1, 1, 1}));
  EXPECT_THAT(bad_variance.Run(),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("FusedBatchNormGrad: reserve_space_2 must have one element")));
}

}  // namespace
}  // namespace rill::testing
