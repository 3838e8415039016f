// Device names as the placer uses them: merging requests the way nested
// device scopes and colocation combine them, and matching a (partial)
// request against the full names of devices that exist.
#ifndef RILL_PLACEMENT_DEVICE_NAME_H_
#define RILL_PLACEMENT_DEVICE_NAME_H_

#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/device_spec.h"

namespace rill {

// Merges `other` into `target`: fields absent in `target` are taken from
// `other`. Conflicting jobs, replicas or tasks are INVALID_ARGUMENT
// ("Cannot merge devices with incompatible jobs: 'ps' and 'worker'", and
// likewise "replicas", "tasks"). Conflicting types or ids are errors
// ("... incompatible types: 'CPU' and 'GPU'", "... incompatible ids: '0'
// and '1'") unless `allow_soft_placement`, which clears type and id
// instead (any device of the merged job/replica/task will do).
absl::Status MergeDeviceSpecs(DeviceSpec* target, const DeviceSpec& other,
                              bool allow_soft_placement);

// Whether `device` satisfies `pattern`: every field set in `pattern` is set
// to the same value in `device` (an empty pattern matches everything).
bool DeviceMatches(const DeviceSpec& pattern, const DeviceSpec& device);

// Whether every field (job, replica, task, type, id) is set.
bool IsCompleteDeviceSpec(const DeviceSpec& spec);

// Parses a full device name; INVALID_ARGUMENT naming what is missing when
// `name` is not complete ("/job:ps/task:0 is not a full device name: no
// replica, no device type, no device id").
absl::StatusOr<DeviceSpec> ParseFullDeviceName(std::string_view name);

}  // namespace rill

#endif  // RILL_PLACEMENT_DEVICE_NAME_H_
