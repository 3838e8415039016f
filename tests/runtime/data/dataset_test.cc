#include "runtime/data/dataset.h"

#include <algorithm>
#include <numeric>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/test_util.h"

namespace rill {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing::StatusIs;

// Features [n, 2] holding (10 i, 10 i + 1) and labels [n] holding i, so
// that a row's features tell which label must come with them.
Dataset MakeDataset(int64_t n) {
  std::vector<float> features;
  std::vector<int32_t> labels;
  for (int64_t i = 0; i < n; ++i) {
    features.push_back(10.0f * i);
    features.push_back(10.0f * i + 1);
    labels.push_back(static_cast<int32_t>(i));
  }
  auto data = Dataset::FromTensors(
      {Tensor::FromVector<float>(features, {n, 2}), Tensor::FromVector<int32_t>(labels, {n})});
  EXPECT_OK(data);
  return *data;
}

// Every element's labels, one vector per element, checking on the way that
// features stay with their labels.
std::vector<std::vector<int32_t>> Drain(const Dataset& data, size_t limit = 100000) {
  auto it = data.MakeIterator();
  EXPECT_OK(it);
  std::vector<std::vector<int32_t>> out;
  while (out.size() < limit) {
    auto element = (*it)->Next();
    EXPECT_OK(element);
    if (!element.ok() || !element->has_value()) break;
    const Tensor& features = (**element)[0];
    const Tensor& labels = (**element)[1];
    std::vector<int32_t> ids(labels.data<int32_t>(), labels.data<int32_t>() + labels.NumElements());
    for (size_t i = 0; i < ids.size(); ++i) {
      EXPECT_EQ(features.data<float>()[2 * i], 10.0f * ids[i]);
      EXPECT_EQ(features.data<float>()[2 * i + 1], 10.0f * ids[i] + 1);
    }
    out.push_back(std::move(ids));
  }
  return out;
}

std::vector<int32_t> Flatten(const std::vector<std::vector<int32_t>>& elements) {
  std::vector<int32_t> out;
  for (const auto& e : elements) out.insert(out.end(), e.begin(), e.end());
  return out;
}

TEST(Dataset, YieldsRowsInOrderWithoutShuffle) {
  Dataset data = MakeDataset(3);
  ASSERT_OK_AND_ASSIGN(auto it, data.MakeIterator());
  for (int32_t i = 0; i < 3; ++i) {
    ASSERT_OK_AND_ASSIGN(auto row, it->Next());
    ASSERT_TRUE(row.has_value());
    ASSERT_EQ(row->size(), 2u);
    EXPECT_TRUE(
        TensorsEqual((*row)[0], Tensor::FromVector<float>({10.0f * i, 10.0f * i + 1}, {2})));
    EXPECT_TRUE(TensorsEqual((*row)[1], Tensor::Scalar<int32_t>(i)));
  }
  for (int again = 0; again < 2; ++again) {
    ASSERT_OK_AND_ASSIGN(auto end, it->Next());
    EXPECT_FALSE(end.has_value());
  }
}

TEST(Dataset, BatchesKeepOrKeepOutTheRemainder) {
  Dataset data = MakeDataset(5);
  data.Batch(2);
  EXPECT_THAT(Drain(data), ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3), ElementsAre(4)));
  data.Batch(2, /*drop_remainder=*/true);
  EXPECT_THAT(Drain(data), ElementsAre(ElementsAre(0, 1), ElementsAre(2, 3)));
  data.Batch(7, /*drop_remainder=*/true);
  EXPECT_THAT(Drain(data), ElementsAre());
}

TEST(Dataset, BatchShapesLeadWithTheBatchSize) {
  Dataset data = MakeDataset(5);
  data.Batch(4);
  ASSERT_OK_AND_ASSIGN(auto it, data.MakeIterator());
  ASSERT_OK_AND_ASSIGN(auto first, it->Next());
  EXPECT_EQ((*first)[0].shape(), TensorShape({4, 2}));
  EXPECT_EQ((*first)[1].shape(), TensorShape({4}));
  ASSERT_OK_AND_ASSIGN(auto last, it->Next());
  EXPECT_EQ((*last)[0].shape(), TensorShape({1, 2}));
}

TEST(Dataset, ShuffleIsADeterministicPermutationPerEpoch) {
  Dataset data = MakeDataset(100);
  data.Shuffle(7).Batch(100).Repeat(3);
  const auto epochs = Drain(data);
  ASSERT_EQ(epochs.size(), 3u);
  std::vector<int32_t> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  for (const auto& epoch : epochs) {
    std::vector<int32_t> sorted = epoch;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, identity);
    EXPECT_NE(epoch, identity);
  }
  EXPECT_NE(epochs[0], epochs[1]);
  EXPECT_NE(epochs[1], epochs[2]);
  EXPECT_EQ(Drain(data), epochs);  // A new iterator replays the same order.
  data.Shuffle(8);
  EXPECT_NE(Drain(data)[0], epochs[0]);
}

TEST(Dataset, ShuffledRowsMatchShuffledBatches) {
  Dataset rows = MakeDataset(10);
  rows.Shuffle(3);
  Dataset batches = MakeDataset(10);
  batches.Shuffle(3).Batch(4);
  EXPECT_EQ(Flatten(Drain(rows)), Flatten(Drain(batches)));
}

TEST(Dataset, RepeatsTheGivenNumberOfEpochs) {
  Dataset data = MakeDataset(5);
  data.Batch(2).Repeat(3);
  const auto elements = Drain(data);
  EXPECT_EQ(elements.size(), 9u);  // Each epoch ends with its own remainder.
  EXPECT_THAT(elements[2], ElementsAre(4));
  EXPECT_THAT(elements[3], ElementsAre(0, 1));
  data.Repeat(0);
  EXPECT_THAT(Drain(data), ElementsAre());
  data.Repeat(-1);
  EXPECT_EQ(Drain(data, 1000).size(), 1000u);
}

TEST(Dataset, RepeatForeverEndsWhenAnEpochIsEmpty) {
  Dataset data = MakeDataset(0);
  data.Repeat(-1);
  EXPECT_THAT(Drain(data), ElementsAre());
  Dataset small = MakeDataset(3);
  small.Batch(4, /*drop_remainder=*/true).Repeat(-1);
  EXPECT_THAT(Drain(small), ElementsAre());
}

TEST(Dataset, PrefetchGivesTheSameSequence) {
  Dataset data = MakeDataset(37);
  data.Shuffle(11).Batch(5).Repeat(4);
  const auto plain = Drain(data);
  for (int buffer : {1, 3, 100}) {
    data.Prefetch(buffer);
    EXPECT_EQ(Drain(data), plain) << "buffer " << buffer;
  }
}

TEST(Dataset, DestroyingAPrefetchingIteratorWhileItsProducerWaitsReturns) {
  Dataset data = MakeDataset(8);
  data.Batch(2).Repeat(-1).Prefetch(1);
  {
    ASSERT_OK_AND_ASSIGN(auto it, data.MakeIterator());
    ASSERT_OK_AND_ASSIGN(auto first, it->Next());
    EXPECT_TRUE(first.has_value());
  }  // The producer is blocked on the full queue here.
  { ASSERT_OK_AND_ASSIGN(auto it, data.MakeIterator()); }  // Destroyed before any Next.
}

TEST(Dataset, BatchesAreCopiesOfTheRows) {
  const Tensor values = Tensor::FromVector<int32_t>({1, 2, 3}, {3});
  ASSERT_OK_AND_ASSIGN(Dataset data, Dataset::FromTensors({values}));
  data.Batch(3);
  ASSERT_OK_AND_ASSIGN(auto it, data.MakeIterator());
  ASSERT_OK_AND_ASSIGN(auto batch, it->Next());
  (*batch)[0].data<int32_t>()[0] = 99;
  EXPECT_EQ(values.data<int32_t>()[0], 1);
}

TEST(Dataset, BatchesStrings) {
  ASSERT_OK_AND_ASSIGN(
      Dataset data,
      Dataset::FromTensors({Tensor::FromVector<std::string>({"a", "b", "c", "d"}, {2, 2})}));
  data.Shuffle(1).Batch(2);
  ASSERT_OK_AND_ASSIGN(auto it, data.MakeIterator());
  ASSERT_OK_AND_ASSIGN(auto batch, it->Next());
  const Tensor& t = (*batch)[0];
  ASSERT_EQ(t.shape(), TensorShape({2, 2}));
  const std::string* s = t.data<std::string>();
  EXPECT_TRUE((s[0] == "a" && s[1] == "b" && s[2] == "c" && s[3] == "d") ||
              (s[0] == "c" && s[1] == "d" && s[2] == "a" && s[3] == "b"));
}

TEST(Dataset, RejectsComponentsWithDifferentFirstDimensions) {
  EXPECT_THAT(Dataset::FromTensors(
                  {Tensor(DT_FLOAT, TensorShape({5, 2})), Tensor(DT_INT32, TensorShape({4}))}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       AllOf(HasSubstr("component 1 has shape [4]"), HasSubstr("[5,2]"))));
  EXPECT_THAT(Dataset::FromTensors({Tensor::Scalar<float>(1)}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("rank >= 1")));
  EXPECT_THAT(Dataset::FromTensors({}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("needs a component")));
}

TEST(Dataset, RejectsBadSettingsWhenMakingTheIterator) {
  Dataset data = MakeDataset(3);
  data.Batch(0);
  EXPECT_THAT(data.MakeIterator(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("batch size")));
  data.Batch(1).Repeat(-2);
  EXPECT_THAT(data.MakeIterator(), StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("-2")));
  data.Repeat(1).Prefetch(-1);
  EXPECT_THAT(data.MakeIterator(),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("prefetch")));
}

}  // namespace
}  // namespace rill
