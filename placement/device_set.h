// DeviceSet: the devices a graph can be placed on (full names), with the
// local and cluster layouts built from a device count or a job list.
#ifndef RILL_PLACEMENT_DEVICE_SET_H_
#define RILL_PLACEMENT_DEVICE_SET_H_

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "graph/device_spec.h"

namespace rill {

// Thread safety: immutable after creation.
class DeviceSet {
 public:
  // Each name must be a full device name; duplicates are INVALID_ARGUMENT.
  // Order is kept: among equally good devices the placer takes the first.
  static absl::StatusOr<DeviceSet> Create(const std::vector<std::string>& full_names);
  // This process: /job:localhost/replica:0/task:0/device:CPU:0 .. CPU:cpus-1,
  // then GPU:0 .. GPU:gpus-1. REQUIRES: cpus >= 1, gpus >= 0.
  static DeviceSet Local(int cpus, int gpus = 0);
  // A cluster: for every job and task index in `tasks_per_job` (job name ->
  // number of tasks), /job:J/replica:0/task:T/device:CPU:0 and GPUs
  // GPU:0 .. GPU:gpus_per_task-1. INVALID_ARGUMENT for an empty job name
  // or a job with no tasks.
  static absl::StatusOr<DeviceSet> ForCluster(const std::map<std::string, int>& tasks_per_job,
                                              int gpus_per_task = 0);

  // Canonical full names ("/job:ps/replica:0/task:0/device:CPU:0").
  const std::vector<std::string>& names() const { return names_; }
  const std::vector<DeviceSpec>& specs() const { return specs_; }
  int size() const { return static_cast<int>(names_.size()); }
  bool empty() const { return names_.empty(); }
  // Indices of the devices `pattern` matches, in set order.
  std::vector<int> Matching(const DeviceSpec& pattern) const;

 private:
  std::vector<std::string> names_;
  std::vector<DeviceSpec> specs_;
};

}  // namespace rill

#endif  // RILL_PLACEMENT_DEVICE_SET_H_
