#include "graph/device_spec.h"

#include <cctype>
#include <charconv>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

// Job names may also contain '-' (they often come from host names).
bool IsName(std::string_view s, bool allow_dash) {
  if (s.empty() || !std::isalpha(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && !(allow_dash && c == '-')) {
      return false;
    }
  }
  return true;
}

// A decimal id; "*" (a wildcard) yields nullopt.
bool ParseId(std::string_view s, std::optional<int>* id) {
  if (s == "*") {
    id->reset();
    return true;
  }
  if (s.empty() || !std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  int value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || end != s.data() + s.size()) return false;
  *id = value;
  return true;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

class Parser {
 public:
  explicit Parser(std::string_view name) : name_(name) {}

  absl::StatusOr<DeviceSpec> Parse() {
    std::string_view rest = name_;
    if (rest.empty()) return spec_;
    // "CPU:0" is accepted as the local name "/CPU:0".
    if (rest.front() == '/') rest.remove_prefix(1);
    if (rest.empty()) return Error("empty name");
    while (true) {
      const size_t slash = rest.find('/');
      RETURN_IF_ERROR(ParsePart(rest.substr(0, slash)));
      if (slash == std::string_view::npos) break;
      rest.remove_prefix(slash + 1);
    }
    return spec_;
  }

 private:
  absl::Status Error(std::string_view what) const {
    return absl::InvalidArgumentError(
        absl::StrFormat("Malformed device name '%s': %s", name_, what));
  }

  absl::Status ParsePart(std::string_view part) {
    if (part.empty()) return Error("empty part");
    const size_t colon = part.find(':');
    if (colon == std::string_view::npos) {
      return Error(absl::StrFormat("part '%s' is not 'key:value'", part));
    }
    const std::string_view key = part.substr(0, colon);
    const std::string_view value = part.substr(colon + 1);
    if (key == "job") {
      if (seen_job_) return Error("job given twice");
      seen_job_ = true;
      if (value == "*") return absl::OkStatus();
      if (!IsName(value, /*allow_dash=*/true)) return Error(absl::StrFormat("bad job '%s'", value));
      spec_.job = std::string(value);
      return absl::OkStatus();
    }
    if (key == "replica" || key == "task") {
      bool& seen = key == "replica" ? seen_replica_ : seen_task_;
      if (seen) return Error(absl::StrFormat("%s given twice", key));
      seen = true;
      if (!ParseId(value, key == "replica" ? &spec_.replica : &spec_.task)) {
        return Error(absl::StrFormat("bad %s '%s' (want an id >= 0 or '*')", key, value));
      }
      return absl::OkStatus();
    }
    if (key == "device") return ParseDevice(value);
    // Legacy "/cpu:0", "/GPU:1": the key is the type itself.
    if (const std::string type = Upper(key); type == "CPU" || type == "GPU") {
      return SetDevice(key, value, part);
    }
    return Error(absl::StrFormat("unknown part '%s'", part));
  }

  // "TYPE:N", "TYPE:*", "TYPE" (any id) or "*:N".
  absl::Status ParseDevice(std::string_view value) {
    const size_t colon = value.find(':');
    const std::string_view type = value.substr(0, colon);
    const std::string_view id = colon == std::string_view::npos ? "*" : value.substr(colon + 1);
    if (type != "*" && !IsName(type, /*allow_dash=*/false)) {
      return Error(absl::StrFormat("bad device type '%s'", type));
    }
    return SetDevice(type, id, value);
  }

  absl::Status SetDevice(std::string_view type, std::string_view id, std::string_view part) {
    if (seen_device_) return Error("device given twice");
    seen_device_ = true;
    if (type != "*") spec_.type = Upper(type);
    if (!ParseId(id, &spec_.id)) {
      return Error(
          absl::StrFormat("bad device id '%s' in '%s' (want an id >= 0 or '*')", id, part));
    }
    return absl::OkStatus();
  }

  const std::string_view name_;
  DeviceSpec spec_;
  bool seen_job_ = false;
  bool seen_replica_ = false;
  bool seen_task_ = false;
  bool seen_device_ = false;
};

}  // namespace

absl::StatusOr<DeviceSpec> DeviceSpec::Parse(std::string_view name) { return Parser(name).Parse(); }

std::string DeviceSpec::ToString() const {
  std::string out;
  if (job) out += "/job:" + *job;
  if (replica) out += "/replica:" + std::to_string(*replica);
  if (task) out += "/task:" + std::to_string(*task);
  if (type || id) {
    out += "/device:" + type.value_or("*") + ":" + (id ? std::to_string(*id) : "*");
  }
  return out;
}

DeviceSpec DeviceSpec::Override(const DeviceSpec& outer, const DeviceSpec& inner) {
  DeviceSpec merged;
  merged.job = inner.job ? inner.job : outer.job;
  merged.replica = inner.replica ? inner.replica : outer.replica;
  merged.task = inner.task ? inner.task : outer.task;
  merged.type = inner.type ? inner.type : outer.type;
  merged.id = inner.id ? inner.id : outer.id;
  return merged;
}

absl::StatusOr<std::string> TaskOfDevice(std::string_view device) {
  ASSIGN_OR_RETURN(const DeviceSpec spec, DeviceSpec::Parse(device));
  if (!spec.job || !spec.replica || !spec.task) {
    return absl::InvalidArgumentError(
        absl::StrFormat("device '%s' does not name a job, replica and task", device));
  }
  return absl::StrFormat("/job:%s/replica:%d/task:%d", *spec.job, *spec.replica, *spec.task);
}

}  // namespace rill
