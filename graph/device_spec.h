// DeviceSpec: a possibly partial device name in TensorFlow's grammar
// (/job:J/replica:R/task:T/device:TYPE:N, legacy /cpu:0 and /gpu:1), parsed,
// printed canonically and merged as nested device scopes merge.
#ifndef RILL_GRAPH_DEVICE_SPEC_H_
#define RILL_GRAPH_DEVICE_SPEC_H_

#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill {

struct DeviceSpec {
  std::optional<std::string> job;
  std::optional<int> replica;
  std::optional<int> task;
  std::optional<std::string> type;  // Upper case: "CPU", "GPU".
  std::optional<int> id;            // Absent also for the wildcard "*".

  // "" parses to an empty spec. Errors name the offending part: "Malformed
  // device name '/job:ps/task:x': bad task 'x'".
  static absl::StatusOr<DeviceSpec> Parse(std::string_view name);

  bool empty() const { return !job && !replica && !task && !type && !id; }
  // "/job:ps/replica:0/task:1/device:GPU:0" with the absent parts left out.
  std::string ToString() const;

  // The spec of a nested scope: fields set in `inner` win, the rest come
  // from `outer` (tf.device semantics in graph building).
  static DeviceSpec Override(const DeviceSpec& outer, const DeviceSpec& inner);

  friend bool operator==(const DeviceSpec&, const DeviceSpec&) = default;
};

// "/job:J/replica:R/task:T" of a full device name. INVALID_ARGUMENT when
// the name is malformed or lacks the job, replica or task.
absl::StatusOr<std::string> TaskOfDevice(std::string_view device);

}  // namespace rill

#endif  // RILL_GRAPH_DEVICE_SPEC_H_
