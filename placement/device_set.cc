#include "placement/device_set.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "placement/device_name.h"

namespace rill {
namespace {

std::string FullName(std::string_view job, int task, std::string_view type, int id) {
  return absl::StrFormat("/job:%s/replica:0/task:%d/device:%s:%d", job, task, type, id);
}

}  // namespace

absl::StatusOr<DeviceSet> DeviceSet::Create(const std::vector<std::string>& full_names) {
  DeviceSet set;
  std::set<std::string> seen;
  for (const std::string& name : full_names) {
    ASSIGN_OR_RETURN(DeviceSpec spec, ParseFullDeviceName(name));
    std::string canonical = spec.ToString();
    if (!seen.insert(canonical).second) {
      return absl::InvalidArgumentError(
          absl::StrFormat("device %s is listed twice in the device set", canonical));
    }
    set.names_.push_back(std::move(canonical));
    set.specs_.push_back(std::move(spec));
  }
  return set;
}

DeviceSet DeviceSet::Local(int cpus, int gpus) {
  if (cpus < 1 || gpus < 0) {
    std::fprintf(stderr, "rill: DeviceSet::Local(%d, %d) needs cpus >= 1 and gpus >= 0\n", cpus,
                 gpus);
    std::abort();
  }
  std::vector<std::string> names;
  for (int i = 0; i < cpus; ++i) names.push_back(FullName("localhost", 0, "CPU", i));
  for (int i = 0; i < gpus; ++i) names.push_back(FullName("localhost", 0, "GPU", i));
  // The names are well formed and distinct by construction.
  return *Create(names);
}

absl::StatusOr<DeviceSet> DeviceSet::ForCluster(const std::map<std::string, int>& tasks_per_job,
                                                int gpus_per_task) {
  if (gpus_per_task < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("gpus_per_task must be >= 0, got %d", gpus_per_task));
  }
  std::vector<std::string> names;
  for (const auto& [job, tasks] : tasks_per_job) {
    if (job.empty()) return absl::InvalidArgumentError("cluster job with an empty name");
    if (tasks < 1) {
      return absl::InvalidArgumentError(
          absl::StrFormat("cluster job '%s' has no tasks (%d)", job, tasks));
    }
    for (int task = 0; task < tasks; ++task) {
      names.push_back(FullName(job, task, "CPU", 0));
      for (int gpu = 0; gpu < gpus_per_task; ++gpu)
        names.push_back(FullName(job, task, "GPU", gpu));
    }
  }
  // A job name outside the grammar fails here, naming the device.
  return Create(names);
}

std::vector<int> DeviceSet::Matching(const DeviceSpec& pattern) const {
  std::vector<int> out;
  for (int i = 0; i < size(); ++i) {
    if (DeviceMatches(pattern, specs_[i])) out.push_back(i);
  }
  return out;
}

}  // namespace rill
