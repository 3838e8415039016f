#include "placement/device_name.h"

#include <string>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::IsOkAndHolds;
using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

DeviceSpec Spec(const std::string& name) {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(name);
  EXPECT_OK(spec);
  return spec.value_or(DeviceSpec());
}

absl::StatusOr<std::string> Merge(const std::string& target, const std::string& other,
                                  bool soft = false) {
  DeviceSpec spec = Spec(target);
  absl::Status status = MergeDeviceSpecs(&spec, Spec(other), soft);
  if (!status.ok()) return status;
  return spec.ToString();
}

TEST(MergeDeviceSpecs, FillsAbsentFieldsFromOther) {
  EXPECT_THAT(Merge("/job:worker", "/task:1/device:GPU:0"),
              IsOkAndHolds("/job:worker/task:1/device:GPU:0"));
  EXPECT_THAT(Merge("/device:CPU:0", "/job:ps/replica:0/task:2"),
              IsOkAndHolds("/job:ps/replica:0/task:2/device:CPU:0"));
}

TEST(MergeDeviceSpecs, KeepsTargetWhenFieldsAgree) {
  EXPECT_THAT(Merge("/job:ps/task:0", "/job:ps/task:0/cpu:0"),
              IsOkAndHolds("/job:ps/task:0/device:CPU:0"));
}

TEST(MergeDeviceSpecs, EmptyOtherLeavesTargetUnchanged) {
  EXPECT_THAT(Merge("/job:ps/task:3/device:GPU:1", ""),
              IsOkAndHolds("/job:ps/task:3/device:GPU:1"));
}

TEST(MergeDeviceSpecs, RejectsIncompatibleJobs) {
  EXPECT_THAT(Merge("/job:ps", "/job:worker"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot merge devices with incompatible jobs: 'ps' and 'worker'"));
}

TEST(MergeDeviceSpecs, RejectsIncompatibleJobsEvenWithSoftPlacement) {
  EXPECT_THAT(Merge("/job:ps", "/job:worker", /*soft=*/true),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("incompatible jobs")));
}

TEST(MergeDeviceSpecs, RejectsIncompatibleReplicas) {
  EXPECT_THAT(Merge("/replica:0", "/replica:1", /*soft=*/true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot merge devices with incompatible replicas: '0' and '1'"));
}

TEST(MergeDeviceSpecs, RejectsIncompatibleTasks) {
  EXPECT_THAT(Merge("/job:ps/task:0", "/job:ps/task:1", /*soft=*/true),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot merge devices with incompatible tasks: '0' and '1'"));
}

TEST(MergeDeviceSpecs, RejectsIncompatibleTypesWithoutSoftPlacement) {
  EXPECT_THAT(Merge("/cpu:0", "/device:GPU:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot merge devices with incompatible types: 'CPU' and 'GPU'"));
}

TEST(MergeDeviceSpecs, RejectsIncompatibleIdsWithoutSoftPlacement) {
  EXPECT_THAT(Merge("/device:GPU:0", "/gpu:1"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "Cannot merge devices with incompatible ids: '0' and '1'"));
}

TEST(MergeDeviceSpecs, SoftPlacementClearsConflictingTypeAndId) {
  EXPECT_THAT(Merge("/job:worker/task:1/device:CPU:0", "/device:GPU:0", /*soft=*/true),
              IsOkAndHolds("/job:worker/task:1"));
}

TEST(MergeDeviceSpecs, SoftPlacementClearsConflictingIdKeepingType) {
  EXPECT_THAT(Merge("/job:worker/device:GPU:0", "/device:GPU:1", /*soft=*/true),
              IsOkAndHolds("/job:worker/device:GPU:*"));
}

TEST(MergeDeviceSpecs, LeavesTargetUnchangedOnConflict) {
  DeviceSpec target = Spec("/job:ps/task:0");
  EXPECT_FALSE(MergeDeviceSpecs(&target, Spec("/job:worker/task:0"), false).ok());
  EXPECT_EQ(target.ToString(), "/job:ps/task:0");
}

TEST(DeviceMatches, EmptyPatternMatchesEverything) {
  EXPECT_TRUE(DeviceMatches(DeviceSpec(), Spec("/job:ps/replica:0/task:0/device:CPU:0")));
}

TEST(DeviceMatches, EveryFieldSetInPatternMustAgree) {
  const DeviceSpec device = Spec("/job:worker/replica:0/task:1/device:GPU:2");
  EXPECT_TRUE(DeviceMatches(Spec("/job:worker/task:1"), device));
  EXPECT_TRUE(DeviceMatches(Spec("/device:GPU:*"), device));
  EXPECT_TRUE(DeviceMatches(Spec("/gpu:2"), device));
  EXPECT_TRUE(DeviceMatches(Spec("/device:*:2"), device));
  EXPECT_FALSE(DeviceMatches(Spec("/job:ps"), device));
  EXPECT_FALSE(DeviceMatches(Spec("/job:worker/task:0"), device));
  EXPECT_FALSE(DeviceMatches(Spec("/replica:1"), device));
  EXPECT_FALSE(DeviceMatches(Spec("/cpu:2"), device));
  EXPECT_FALSE(DeviceMatches(Spec("/device:GPU:0"), device));
}

TEST(DeviceMatches, PartialDeviceDoesNotMatchSpecificPattern) {
  EXPECT_FALSE(DeviceMatches(Spec("/job:ps/task:0"), Spec("/job:ps")));
}

TEST(DeviceMatches, LegacyNamesMatchCanonicalDevices) {
  const DeviceSpec device = Spec("/job:localhost/replica:0/task:0/device:CPU:0");
  EXPECT_TRUE(DeviceMatches(Spec("/cpu:0"), device));
  EXPECT_TRUE(DeviceMatches(Spec("CPU:0"), device));
  EXPECT_TRUE(DeviceMatches(Spec("/job:localhost/replica:0/task:0/cpu:0"), device));
  EXPECT_FALSE(DeviceMatches(Spec("/GPU:0"), device));
}

TEST(IsCompleteDeviceSpec, NeedsEveryField) {
  EXPECT_TRUE(IsCompleteDeviceSpec(Spec("/job:ps/replica:0/task:0/device:CPU:0")));
  EXPECT_FALSE(IsCompleteDeviceSpec(Spec("/job:ps/replica:0/task:0/device:CPU:*")));
  EXPECT_FALSE(IsCompleteDeviceSpec(Spec("/job:ps/task:0/device:CPU:0")));
  EXPECT_FALSE(IsCompleteDeviceSpec(Spec("/replica:0/task:0/device:CPU:0")));
  EXPECT_FALSE(IsCompleteDeviceSpec(DeviceSpec()));
}

TEST(ParseFullDeviceName, AcceptsLegacyFullName) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec spec, ParseFullDeviceName("/job:w/replica:1/task:2/gpu:3"));
  EXPECT_EQ(spec.ToString(), "/job:w/replica:1/task:2/device:GPU:3");
}

TEST(ParseFullDeviceName, NamesWhatIsMissing) {
  EXPECT_THAT(ParseFullDeviceName("/job:ps/task:0"),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       "/job:ps/task:0 is not a full device name: no replica, no device type, "
                       "no device id"));
  EXPECT_THAT(ParseFullDeviceName("/job:ps/replica:0/task:0/device:GPU:*"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr(": no device id")));
}

TEST(ParseFullDeviceName, PassesOnMalformedNames) {
  EXPECT_THAT(ParseFullDeviceName("/job:ps/task:x"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("bad task 'x'")));
}

}  // namespace
}  // namespace rill
