#include "placement/device_set.h"

#include <string>
#include <vector>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

DeviceSpec Spec(const std::string& name) {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(name);
  EXPECT_OK(spec);
  return spec.value_or(DeviceSpec());
}

TEST(DeviceSet, LocalListsCpusThenGpus) {
  const DeviceSet set = DeviceSet::Local(2, 1);
  EXPECT_THAT(set.names(), ElementsAre("/job:localhost/replica:0/task:0/device:CPU:0",
                                       "/job:localhost/replica:0/task:0/device:CPU:1",
                                       "/job:localhost/replica:0/task:0/device:GPU:0"));
  ASSERT_EQ(set.specs().size(), 3u);
  EXPECT_EQ(set.specs()[2].type, "GPU");
  EXPECT_EQ(set.specs()[2].id, 0);
  EXPECT_EQ(set.size(), 3);
  EXPECT_FALSE(set.empty());
}

TEST(DeviceSet, LocalDefaultsToNoGpus) {
  EXPECT_THAT(DeviceSet::Local(1).names(),
              ElementsAre("/job:localhost/replica:0/task:0/device:CPU:0"));
}

TEST(DeviceSet, ForClusterListsEveryTaskOfEveryJob) {
  ASSERT_OK_AND_ASSIGN(DeviceSet set, DeviceSet::ForCluster({{"worker", 1}, {"ps", 2}}));
  EXPECT_THAT(set.names(), ElementsAre("/job:ps/replica:0/task:0/device:CPU:0",
                                       "/job:ps/replica:0/task:1/device:CPU:0",
                                       "/job:worker/replica:0/task:0/device:CPU:0"));
}

TEST(DeviceSet, ForClusterAddsGpusPerTask) {
  ASSERT_OK_AND_ASSIGN(DeviceSet set, DeviceSet::ForCluster({{"worker", 2}}, 2));
  EXPECT_THAT(set.names(), ElementsAre("/job:worker/replica:0/task:0/device:CPU:0",
                                       "/job:worker/replica:0/task:0/device:GPU:0",
                                       "/job:worker/replica:0/task:0/device:GPU:1",
                                       "/job:worker/replica:0/task:1/device:CPU:0",
                                       "/job:worker/replica:0/task:1/device:GPU:0",
                                       "/job:worker/replica:0/task:1/device:GPU:1"));
}

TEST(DeviceSet, ForClusterRejectsEmptyJobName) {
  EXPECT_THAT(DeviceSet::ForCluster({{"", 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("empty name")));
}

TEST(DeviceSet, ForClusterRejectsJobWithoutTasks) {
  EXPECT_THAT(DeviceSet::ForCluster({{"ps", 0}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("'ps' has no tasks")));
}

TEST(DeviceSet, ForClusterRejectsMalformedJobName) {
  EXPECT_THAT(DeviceSet::ForCluster({{"bad job", 1}}),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad job 'bad job'")));
}

TEST(DeviceSet, CreateKeepsOrderAndCanonicalizes) {
  ASSERT_OK_AND_ASSIGN(DeviceSet set, DeviceSet::Create({"/job:b/replica:0/task:0/gpu:0",
                                                         "/job:a/replica:0/task:0/device:CPU:0"}));
  EXPECT_THAT(set.names(), ElementsAre("/job:b/replica:0/task:0/device:GPU:0",
                                       "/job:a/replica:0/task:0/device:CPU:0"));
}

TEST(DeviceSet, CreateRejectsPartialNames) {
  EXPECT_THAT(DeviceSet::Create({"/job:ps/task:0"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("is not a full device name: no replica")));
}

TEST(DeviceSet, CreateRejectsDuplicatesAfterCanonicalization) {
  EXPECT_THAT(DeviceSet::Create(
                  {"/job:ps/replica:0/task:0/cpu:0", "/job:ps/replica:0/task:0/device:CPU:0"}),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("/job:ps/replica:0/task:0/device:CPU:0 is listed twice")));
}

TEST(DeviceSet, CreateOfNothingIsEmpty) {
  ASSERT_OK_AND_ASSIGN(DeviceSet set, DeviceSet::Create({}));
  EXPECT_TRUE(set.empty());
  EXPECT_EQ(set.size(), 0);
}

TEST(DeviceSet, MatchingReturnsIndicesInSetOrder) {
  ASSERT_OK_AND_ASSIGN(DeviceSet set, DeviceSet::ForCluster({{"ps", 2}, {"worker", 1}}, 1));
  EXPECT_THAT(set.Matching(Spec("/job:ps/device:GPU:*")), ElementsAre(1, 3));
  EXPECT_THAT(set.Matching(Spec("/job:worker")), ElementsAre(4, 5));
  EXPECT_THAT(set.Matching(Spec("/cpu:0")), ElementsAre(0, 2, 4));
  EXPECT_THAT(set.Matching(Spec("/job:chief")), IsEmpty());
  EXPECT_EQ(set.Matching(DeviceSpec()).size(), 6u);
}

}  // namespace
}  // namespace rill
