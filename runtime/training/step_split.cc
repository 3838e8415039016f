#include "runtime/training/step_split.h"

#include <algorithm>
#include <cstdint>
#include <limits>
#include <tuple>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "graph/device_spec.h"

namespace rill {
namespace {

using Interval = std::pair<int64_t, int64_t>;  // [start, end) in microseconds.

// The time `intervals` cover, in milliseconds.
double CoveredMs(std::vector<Interval> intervals) {
  std::sort(intervals.begin(), intervals.end());
  int64_t covered = 0;
  int64_t reached = std::numeric_limits<int64_t>::min();
  for (const auto& [start, end] : intervals) {
    const int64_t from = std::max(start, reached);
    if (end > from) covered += end - from;
    reached = std::max(reached, end);
  }
  return static_cast<double>(covered) / 1000.0;
}

std::string JobOf(const std::string& device) {
  const absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(device);
  return spec.ok() && spec->job.has_value() ? *spec->job : "";
}

}  // namespace

StepSplit SplitStep(const std::vector<NodeExecStats>& stats, std::string_view ps_job) {
  // When each cross-device value was ready to go: its send's start.
  absl::flat_hash_map<std::tuple<std::string, std::string, std::string>, int64_t> sent;
  for (const NodeExecStats& node : stats) {
    if (node.op == "_Send")
      sent[{node.tensor_name, node.device, node.peer_device}] = node.start_micros;
  }
  std::vector<Interval> all, compute, read, push, update;
  for (const NodeExecStats& node : stats) {
    Interval interval{node.start_micros, std::max(node.start_micros, node.end_micros)};
    all.push_back(interval);
    if (node.op == "_Send") continue;
    const std::string job = JobOf(node.device);
    const bool on_ps = job == ps_job;
    const std::string peer_job = node.peer_device.empty() ? job : JobOf(node.peer_device);
    if (node.op == "_Recv" && peer_job != job) {
      // A receive starts with its step and waits for the sender: the
      // transfer is from when the value was sent (or the receive began,
      // if later) to its arrival.
      if (const auto it = sent.find({node.tensor_name, node.peer_device, node.device});
          it != sent.end()) {
        interval.first = std::min(std::max(interval.first, it->second), interval.second);
      }
      (on_ps ? push : peer_job == ps_job ? read : compute).push_back(interval);
      continue;
    }
    (on_ps ? update : compute).push_back(interval);
  }
  StepSplit split;
  if (stats.empty()) return split;
  int64_t start = all.front().first;
  int64_t end = all.front().second;
  for (const auto& [from, to] : all) {
    start = std::min(start, from);
    end = std::max(end, to);
  }
  split.wall_ms = static_cast<double>(end - start) / 1000.0;
  split.worker_compute_ms = CoveredMs(std::move(compute));
  split.read_variables_ms = CoveredMs(std::move(read));
  split.push_gradients_ms = CoveredMs(std::move(push));
  split.ps_update_ms = CoveredMs(std::move(update));
  split.waiting_ms = split.wall_ms - CoveredMs(std::move(all));
  return split;
}

StepSplit MeanStepSplit(const std::vector<StepSplit>& splits) {
  StepSplit mean;
  if (splits.empty()) return mean;
  const double n = static_cast<double>(splits.size());
  for (const StepSplit& s : splits) {
    mean.wall_ms += s.wall_ms / n;
    mean.worker_compute_ms += s.worker_compute_ms / n;
    mean.read_variables_ms += s.read_variables_ms / n;
    mean.push_gradients_ms += s.push_gradients_ms / n;
    mean.ps_update_ms += s.ps_update_ms / n;
    mean.waiting_ms += s.waiting_ms / n;
  }
  return mean;
}

std::string StepSplitText(const StepSplit& split) {
  return absl::StrFormat(
      "wall %.3f ms: worker compute %.3f, read variables %.3f, push gradients %.3f, ps update "
      "%.3f, waiting %.3f",
      split.wall_ms, split.worker_compute_ms, split.read_variables_ms, split.push_gradients_ms,
      split.ps_update_ms, split.waiting_ms);
}

}  // namespace rill
