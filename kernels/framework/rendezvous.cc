#include "kernels/framework/rendezvous.h"

#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"

namespace rill {

std::string RendezvousKey::ToString() const {
  return absl::StrFormat("%s;%016x;%s;%s;%d:%d", src_device, src_incarnation, dst_device,
                         tensor_name, frame_id, iter_id);
}

absl::StatusOr<RendezvousKey> RendezvousKey::Parse(std::string_view key) {
  const std::vector<absl::string_view> parts =
      absl::StrSplit(absl::string_view(key.data(), key.size()), ';');
  const auto invalid = [&](const char* what) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Invalid rendezvous key '%s': %s", std::string(key), what));
  };
  if (parts.size() != 5) return invalid("expected 5 parts separated by ';'");
  RendezvousKey parsed;
  parsed.src_device = std::string(parts[0]);
  parsed.dst_device = std::string(parts[2]);
  parsed.tensor_name = std::string(parts[3]);
  if (parsed.src_device.empty() || parsed.dst_device.empty() || parsed.tensor_name.empty()) {
    return invalid("empty device or tensor name");
  }
  if (parts[1].empty() || parts[1].size() > 16 ||
      !absl::SimpleHexAtoi(parts[1], &parsed.src_incarnation)) {
    return invalid("bad incarnation (16 hex digits)");
  }
  const std::vector<absl::string_view> frame_iter = absl::StrSplit(parts[4], ':');
  if (frame_iter.size() != 2 || !absl::SimpleAtoi(frame_iter[0], &parsed.frame_id) ||
      !absl::SimpleAtoi(frame_iter[1], &parsed.iter_id)) {
    return invalid("bad frame:iter");
  }
  return parsed;
}

absl::StatusOr<PreparedRendezvousKey> PreparedRendezvousKey::Prepare(const RendezvousKey& key) {
  PreparedRendezvousKey prepared;
  prepared.text = key.ToString();
  absl::StatusOr<std::string> task = TaskOfDevice(key.dst_device);
  if (!task.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Invalid rendezvous key '%s': %s", prepared.text, task.status().message()));
  }
  prepared.dst_task = *std::move(task);
  return prepared;
}

absl::StatusOr<PreparedRendezvousKey> PreparedRendezvousKey::Parse(std::string_view text) {
  ASSIGN_OR_RETURN(const RendezvousKey key, RendezvousKey::Parse(text));
  return Prepare(key);
}

}  // namespace rill
