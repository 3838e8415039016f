#include "graph/device_spec.h"

#include <string>

#include "tests/test_util.h"

namespace rill {
namespace {

using ::rill::testing::StatusIs;
using ::testing::HasSubstr;

struct ParseCase {
  std::string name;
  std::string canonical;
};

class DeviceSpecParse : public ::testing::TestWithParam<ParseCase> {};

TEST_P(DeviceSpecParse, PrintsCanonically) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec spec, DeviceSpec::Parse(GetParam().name));
  EXPECT_EQ(spec.ToString(), GetParam().canonical);
  // The canonical form parses back to the same spec.
  ASSERT_OK_AND_ASSIGN(DeviceSpec again, DeviceSpec::Parse(spec.ToString()));
  EXPECT_EQ(again, spec);
}

INSTANTIATE_TEST_SUITE_P(
    Names, DeviceSpecParse,
    ::testing::Values(
        ParseCase{"", ""},
        ParseCase{"/job:ps/replica:0/task:1/device:GPU:0", "/job:ps/replica:0/task:1/device:GPU:0"},
        ParseCase{"/job:worker/task:3", "/job:worker/task:3"},
        ParseCase{"/job:ps/task:1", "/job:ps/task:1"},
        ParseCase{"/task:2/job:ps", "/job:ps/task:2"}, ParseCase{"/device:GPU:*", "/device:GPU:*"},
        ParseCase{"/device:gpu", "/device:GPU:*"}, ParseCase{"/device:cpu:1", "/device:CPU:1"},
        ParseCase{"/device:XLA_CPU:0", "/device:XLA_CPU:0"}, ParseCase{"/cpu:0", "/device:CPU:0"},
        ParseCase{"/gpu:1", "/device:GPU:1"}, ParseCase{"/GPU:1", "/device:GPU:1"},
        ParseCase{"CPU:0", "/device:CPU:0"},
        ParseCase{"/job:localhost/replica:0/task:0/cpu:0",
                  "/job:localhost/replica:0/task:0/device:CPU:0"},
        ParseCase{"/job:*/task:*", ""}, ParseCase{"/job:my-job-2/task:0", "/job:my-job-2/task:0"},
        ParseCase{"/device:*:1", "/device:*:1"}));

TEST(DeviceSpec, ParsesEveryField) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec spec, DeviceSpec::Parse("/job:ps/replica:2/task:1/gpu:3"));
  EXPECT_EQ(spec.job, "ps");
  EXPECT_EQ(spec.replica, 2);
  EXPECT_EQ(spec.task, 1);
  EXPECT_EQ(spec.type, "GPU");
  EXPECT_EQ(spec.id, 3);
}

TEST(DeviceSpec, WildcardIdIsAbsent) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec spec, DeviceSpec::Parse("/device:GPU:*"));
  EXPECT_EQ(spec.type, "GPU");
  EXPECT_FALSE(spec.id.has_value());
}

TEST(DeviceSpec, EmptyNameIsEmptySpec) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec spec, DeviceSpec::Parse(""));
  EXPECT_TRUE(spec.empty());
  EXPECT_EQ(spec.ToString(), "");
}

struct MalformedCase {
  std::string name;
  std::string message;
};

class DeviceSpecMalformed : public ::testing::TestWithParam<MalformedCase> {};

TEST_P(DeviceSpecMalformed, IsRejectedNamingThePart) {
  EXPECT_THAT(DeviceSpec::Parse(GetParam().name),
              StatusIs(absl::StatusCode::kInvalidArgument,
                       HasSubstr("Malformed device name '" + GetParam().name +
                                 "': " + GetParam().message)));
}

INSTANTIATE_TEST_SUITE_P(
    Names, DeviceSpecMalformed,
    ::testing::Values(
        MalformedCase{"/job:", "bad job ''"}, MalformedCase{"/job:1ps", "bad job '1ps'"},
        MalformedCase{"/task:x", "bad task 'x'"}, MalformedCase{"/job:ps/task:x", "bad task 'x'"},
        MalformedCase{"/task:-1", "bad task '-1'"},
        MalformedCase{"/replica:+1", "bad replica '+1'"},
        MalformedCase{"/task:99999999999", "bad task '99999999999'"},
        MalformedCase{"/job:ps/job:worker", "job given twice"},
        MalformedCase{"/task:0/task:1", "task given twice"},
        MalformedCase{"/cpu:0/device:GPU:0", "device given twice"},
        MalformedCase{"/foo:1", "unknown part 'foo:1'"},
        MalformedCase{"/gpu:-1", "bad device id '-1'"},
        MalformedCase{"/device:GPU:x", "bad device id 'x'"},
        MalformedCase{"/device:G-PU:0", "bad device type 'G-PU'"},
        MalformedCase{"/device:", "bad device type ''"}, MalformedCase{"/job:ps/", "empty part"},
        MalformedCase{"/job:ps//task:0", "empty part"}, MalformedCase{"/", "empty name"},
        MalformedCase{"/job", "part 'job' is not 'key:value'"}));

TEST(DeviceSpec, OverrideLetsInnerFieldsWin) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec outer, DeviceSpec::Parse("/job:worker/task:1/device:CPU:0"));
  ASSERT_OK_AND_ASSIGN(DeviceSpec inner, DeviceSpec::Parse("/job:ps/device:GPU:2"));
  EXPECT_EQ(DeviceSpec::Override(outer, inner).ToString(), "/job:ps/task:1/device:GPU:2");
}

TEST(DeviceSpec, OverrideInheritsAbsentFields) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec outer, DeviceSpec::Parse("/job:worker"));
  ASSERT_OK_AND_ASSIGN(DeviceSpec inner, DeviceSpec::Parse("/device:GPU:0"));
  EXPECT_EQ(DeviceSpec::Override(outer, inner).ToString(), "/job:worker/device:GPU:0");
  EXPECT_EQ(DeviceSpec::Override(inner, outer).ToString(), "/job:worker/device:GPU:0");
}

TEST(DeviceSpec, OverrideWithEmptyKeepsOuter) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec outer, DeviceSpec::Parse("/job:ps/replica:0/task:0/gpu:1"));
  EXPECT_EQ(DeviceSpec::Override(outer, DeviceSpec()), outer);
  EXPECT_EQ(DeviceSpec::Override(DeviceSpec(), outer), outer);
}

TEST(DeviceSpec, OverrideKeepsOuterIdWhenInnerGivesOnlyAType) {
  ASSERT_OK_AND_ASSIGN(DeviceSpec outer, DeviceSpec::Parse("/device:CPU:1"));
  ASSERT_OK_AND_ASSIGN(DeviceSpec inner, DeviceSpec::Parse("/device:GPU:*"));
  EXPECT_EQ(DeviceSpec::Override(outer, inner).ToString(), "/device:GPU:1");
}

TEST(TaskOfDevice, DropsTheDevicePart) {
  ASSERT_OK_AND_ASSIGN(const std::string task,
                       TaskOfDevice("/job:ps/replica:0/task:3/device:CPU:0"));
  EXPECT_EQ(task, "/job:ps/replica:0/task:3");
  EXPECT_THAT(TaskOfDevice("/device:CPU:0"),
              StatusIs(absl::StatusCode::kInvalidArgument, HasSubstr("job, replica and task")));
  EXPECT_FALSE(TaskOfDevice("/job:ps/task:x").ok());
}

}  // namespace
}  // namespace rill
