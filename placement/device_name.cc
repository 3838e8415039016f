#include "placement/device_name.h"

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

template <typename T>
std::string FieldString(const T& value) {
  if constexpr (std::is_same_v<T, std::string>) {
    return value;
  } else {
    return std::to_string(value);
  }
}

// Takes `other`'s value when `target` has none; a different value is a
// conflict named by `what` (plural, as in the message).
template <typename T>
absl::Status MergeField(std::optional<T>* target, const std::optional<T>& other, const char* what) {
  if (!other) return absl::OkStatus();
  if (!*target) {
    *target = other;
    return absl::OkStatus();
  }
  if (**target != *other) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Cannot merge devices with incompatible %s: '%s' and '%s'", what,
                        FieldString(**target), FieldString(*other)));
  }
  return absl::OkStatus();
}

template <typename T>
bool FieldMatches(const std::optional<T>& pattern, const std::optional<T>& device) {
  return !pattern || (device && *device == *pattern);
}

}  // namespace

absl::Status MergeDeviceSpecs(DeviceSpec* target, const DeviceSpec& other,
                              bool allow_soft_placement) {
  RETURN_IF_ERROR(MergeField(&target->job, other.job, "jobs"));
  RETURN_IF_ERROR(MergeField(&target->replica, other.replica, "replicas"));
  RETURN_IF_ERROR(MergeField(&target->task, other.task, "tasks"));
  // As in TensorFlow, a soft type conflict leaves any device of the task
  // acceptable, while a soft id conflict keeps the agreed type.
  if (absl::Status s = MergeField(&target->type, other.type, "types"); !s.ok()) {
    if (!allow_soft_placement) return s;
    target->type.reset();
    target->id.reset();
    return absl::OkStatus();
  }
  if (absl::Status s = MergeField(&target->id, other.id, "ids"); !s.ok()) {
    if (!allow_soft_placement) return s;
    target->id.reset();
  }
  return absl::OkStatus();
}

bool DeviceMatches(const DeviceSpec& pattern, const DeviceSpec& device) {
  return FieldMatches(pattern.job, device.job) && FieldMatches(pattern.replica, device.replica) &&
         FieldMatches(pattern.task, device.task) && FieldMatches(pattern.type, device.type) &&
         FieldMatches(pattern.id, device.id);
}

bool IsCompleteDeviceSpec(const DeviceSpec& spec) {
  return spec.job && spec.replica && spec.task && spec.type && spec.id;
}

absl::StatusOr<DeviceSpec> ParseFullDeviceName(std::string_view name) {
  ASSIGN_OR_RETURN(DeviceSpec spec, DeviceSpec::Parse(name));
  std::vector<std::string> missing;
  if (!spec.job) missing.push_back("no job");
  if (!spec.replica) missing.push_back("no replica");
  if (!spec.task) missing.push_back("no task");
  if (!spec.type) missing.push_back("no device type");
  if (!spec.id) missing.push_back("no device id");
  if (!missing.empty()) {
    return absl::InvalidArgumentError(absl::StrFormat("%s is not a full device name: %s",
                                                      name.empty() ? "''" : name,
                                                      absl::StrJoin(missing, ", ")));
  }
  return spec;
}

}  // namespace rill
