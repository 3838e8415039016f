#include "runtime/distributed/cluster_spec.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

using SparseJobs = std::map<std::string, std::map<int, std::string>>;

constexpr char kJobNameRule[] =
    "a job name is [a-z][a-z0-9_]*: a lower-case letter, then lower-case letters, digits or '_'";

// TensorFlow's rule, so that a cluster written for TensorFlow means the
// same here and device names built from it parse.
bool IsValidJobName(std::string_view job) {
  if (job.empty() || job[0] < 'a' || job[0] > 'z') return false;
  return std::all_of(job.begin(), job.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool IsAsciiAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// HOST:PORT, HOST a name or IPv4 address, or [IPv6]:PORT. An unbracketed
// host holds no ':', which keeps "INDEX:HOST:PORT" unambiguous in Parse.
bool IsValidAddress(std::string_view address) {
  std::string_view host;
  std::string_view rest;
  if (address.starts_with('[')) {
    const size_t close = address.find(']');
    if (close == std::string_view::npos) return false;
    host = address.substr(1, close - 1);
    rest = address.substr(close + 1);
    const bool ipv6_chars = std::all_of(host.begin(), host.end(), [](char c) {
      return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') ||
             c == ':' || c == '.';
    });
    if (host.find(':') == std::string_view::npos || !ipv6_chars) return false;
  } else {
    const size_t colon = address.find(':');
    if (colon == std::string_view::npos) return false;
    host = address.substr(0, colon);
    rest = address.substr(colon);
    const bool name_chars = std::all_of(host.begin(), host.end(), [](char c) {
      return IsAsciiAlnum(c) || c == '-' || c == '.' || c == '_';
    });
    if (host.empty() || !name_chars) return false;
    // What DNS allows: 253 characters, labels of at most 63.
    if (host.size() > 253) return false;
    for (size_t start = 0, dot = 0; start <= host.size(); start = dot + 1) {
      dot = std::min(host.find('.', start), host.size());
      if (dot - start > 63) return false;
    }
  }
  if (!rest.starts_with(':')) return false;
  const std::optional<int> port = ParseDecimalInt(rest.substr(1));
  return port && *port >= 1 && *port <= 65535;
}

// "0..2" for dense indices, else "1, 3".
std::string DescribeIndices(const std::map<int, std::string>& tasks) {
  if (tasks.empty()) return "none";
  if (tasks.rbegin()->first == static_cast<int>(tasks.size()) - 1) {
    return absl::StrFormat("0..%d", tasks.size() - 1);
  }
  std::vector<std::string> indices;
  for (const auto& [index, address] : tasks) indices.push_back(std::to_string(index));
  return absl::StrJoin(indices, ", ");
}

// Every piece, empty ones included ("a,,b" -> a, "", b).
std::vector<std::string_view> Split(std::string_view text, char separator) {
  std::vector<std::string_view> pieces;
  size_t begin = 0;
  for (size_t end; (end = text.find(separator, begin)) != std::string_view::npos; begin = end + 1) {
    pieces.push_back(text.substr(begin, end - begin));
  }
  pieces.push_back(text.substr(begin));
  return pieces;
}

// Two tasks at one address would be one server answering for both (or
// the second failing to bind). Host names compare without case, as DNS
// does; names that resolve alike ("localhost", "127.0.0.1") are not
// caught here.
absl::Status CheckDistinctAddresses(const SparseJobs& jobs) {
  std::map<std::string, std::pair<std::string, int>> owners;  // address -> (job, task)
  for (const auto& [job, tasks] : jobs) {
    for (const auto& [index, address] : tasks) {
      const auto [it, inserted] =
          owners.emplace(absl::AsciiStrToLower(address), std::pair(job, index));
      if (!inserted) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "job '%s' task %d and job '%s' task %d share the address '%s'; each task needs an "
            "address of its own",
            it->second.first, it->second.second, job, index, address));
      }
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::optional<int> ParseDecimalInt(std::string_view text) {
  if (text.empty() ||
      !std::all_of(text.begin(), text.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return std::nullopt;
  }
  int value = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return value;
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromJobs(
    const std::map<std::string, std::vector<std::string>>& jobs) {
  SparseJobs sparse;
  for (const auto& [job, addresses] : jobs) {
    std::map<int, std::string>& tasks = sparse[job];
    for (size_t i = 0; i < addresses.size(); ++i) tasks[static_cast<int>(i)] = addresses[i];
  }
  return FromSparseJobs(sparse);
}

absl::StatusOr<ClusterSpec> ClusterSpec::FromSparseJobs(const SparseJobs& jobs) {
  for (const auto& [job, tasks] : jobs) {
    if (!IsValidJobName(job)) {
      return absl::InvalidArgumentError(
          absl::StrFormat("bad job name '%s': %s", job, kJobNameRule));
    }
    if (tasks.empty()) {
      return absl::InvalidArgumentError(absl::StrFormat("job '%s' has no tasks", job));
    }
    for (const auto& [index, address] : tasks) {
      if (index < 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("job '%s': task index %d is negative", job, index));
      }
      if (!IsValidAddress(address)) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "job '%s' task %d: bad address '%s': expected HOST:PORT with PORT in 1..65535", job,
            index, address));
      }
    }
  }
  RETURN_IF_ERROR(CheckDistinctAddresses(jobs));
  ClusterSpec spec;
  spec.jobs_ = jobs;
  return spec;
}

absl::StatusOr<ClusterSpec> ClusterSpec::Parse(std::string_view text) {
  SparseJobs jobs;
  for (const std::string_view entry : Split(text, ';')) {
    const size_t eq = entry.find('=');
    if (eq == std::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "job entry '%s' is not JOB=HOST:PORT[,HOST:PORT...] or JOB=INDEX:HOST:PORT[,...]",
          entry));
    }
    const std::string job(entry.substr(0, eq));
    if (jobs.count(job) > 0) {
      return absl::InvalidArgumentError(absl::StrFormat("job '%s' is given twice", job));
    }
    std::map<int, std::string>& tasks = jobs[job];
    std::optional<bool> sparse;
    for (const std::string_view piece : Split(entry.substr(eq + 1), ',')) {
      // "INDEX:HOST:PORT" when what follows the leading digits is itself an
      // address (a plain HOST:PORT never is, as its host holds no ':'), or
      // when the job's first task was one, so that a bad address is named
      // as such rather than as a mix of forms.
      const size_t colon = piece.find(':');
      const std::optional<int> index =
          colon == std::string_view::npos ? std::nullopt : ParseDecimalInt(piece.substr(0, colon));
      const bool is_sparse =
          index && (IsValidAddress(piece.substr(colon + 1)) || sparse == std::optional(true));
      if (sparse && *sparse != is_sparse) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "job '%s' mixes HOST:PORT and INDEX:HOST:PORT tasks at '%s'", job, piece));
      }
      sparse = is_sparse;
      const int task = is_sparse ? *index : static_cast<int>(tasks.size());
      if (tasks.count(task) > 0) {
        return absl::InvalidArgumentError(
            absl::StrFormat("job '%s': task %d is given twice", job, task));
      }
      tasks[task] = std::string(is_sparse ? piece.substr(colon + 1) : piece);
    }
  }
  return FromSparseJobs(jobs);
}

std::vector<std::string> ClusterSpec::jobs() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_) names.push_back(job);
  return names;
}

bool ClusterSpec::HasJob(std::string_view job) const { return jobs_.count(std::string(job)) > 0; }

std::vector<int> ClusterSpec::TaskIndices(std::string_view job) const {
  std::vector<int> indices;
  const auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) return indices;
  for (const auto& [index, address] : it->second) indices.push_back(index);
  return indices;
}

absl::StatusOr<std::string> ClusterSpec::TaskAddress(std::string_view job, int task) const {
  const auto it = jobs_.find(std::string(job));
  if (it == jobs_.end()) {
    return absl::NotFoundError(
        absl::StrFormat("no job '%s' in the cluster; jobs: %s", job,
                        jobs_.empty() ? "none" : absl::StrJoin(jobs(), ", ")));
  }
  const auto task_it = it->second.find(task);
  if (task_it == it->second.end()) {
    return absl::NotFoundError(absl::StrFormat("task %d is out of range for job '%s' (tasks %s)",
                                               task, job, DescribeIndices(it->second)));
  }
  return task_it->second;
}

std::vector<std::string> ClusterSpec::TaskNames() const {
  std::vector<std::string> names;
  for (const auto& [job, tasks] : jobs_) {
    for (const auto& [index, address] : tasks) {
      names.push_back(absl::StrFormat("/job:%s/replica:0/task:%d", job, index));
    }
  }
  return names;
}

std::vector<std::string> ClusterSpec::TasksMatching(std::string_view device,
                                                    const TaskId& home) const {
  absl::StatusOr<DeviceSpec> spec = DeviceSpec::Parse(device);
  if (!spec.ok()) return {};
  const bool home_job = !spec->job || *spec->job == home.job;
  const std::string job = spec->job.value_or(home.job);
  std::optional<int> task = spec->task;
  if (!task && home_job) task = home.index;
  if (spec->replica.value_or(0) != 0) return {};
  const auto found = jobs_.find(job);
  if (found == jobs_.end()) return {};
  std::vector<std::string> names;
  for (const auto& [index, address] : found->second) {
    if (!task || *task == index)
      names.push_back(absl::StrFormat("/job:%s/replica:0/task:%d", job, index));
  }
  return names;
}

std::map<std::string, int> ClusterSpec::TasksPerJob() const {
  std::map<std::string, int> counts;
  for (const auto& [job, tasks] : jobs_) counts[job] = static_cast<int>(tasks.size());
  return counts;
}

std::string ClusterSpec::ToString() const {
  std::vector<std::string> entries;
  for (const auto& [job, tasks] : jobs_) {
    const bool dense = tasks.rbegin()->first == static_cast<int>(tasks.size()) - 1;
    std::vector<std::string> pieces;
    for (const auto& [index, address] : tasks) {
      pieces.push_back(dense ? address : absl::StrFormat("%d:%s", index, address));
    }
    entries.push_back(job + "=" + absl::StrJoin(pieces, ","));
  }
  return absl::StrJoin(entries, ";");
}

namespace {

absl::Status FlagError(std::string_view flag, std::string_view problem) {
  return absl::InvalidArgumentError(absl::StrFormat("--%s: %s", flag, problem));
}

const std::string* FindFlag(const std::map<std::string, std::string>& flags,
                            const std::string& name) {
  const auto it = flags.find(name);
  return it == flags.end() ? nullptr : &it->second;
}

}  // namespace

absl::Status ClusterSpec::CheckTask(const TaskId& task, std::string_view what) const {
  if (const absl::StatusOr<std::string> address = TaskAddress(task.job, task.index);
      !address.ok()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: %s", what, std::string(address.status().message())));
  }
  return absl::OkStatus();
}

// Other keys are left to the caller: training programs pass flags of
// their own beside these.
absl::StatusOr<ServerConfig> ServerConfigFromFlags(
    const std::map<std::string, std::string>& flags) {
  std::map<std::string, std::vector<std::string>> jobs;
  constexpr std::pair<const char*, const char*> kHostFlags[] = {{"ps_hosts", "ps"},
                                                                {"worker_hosts", "worker"}};
  for (const auto& [flag, job] : kHostFlags) {
    const std::string* hosts = FindFlag(flags, flag);
    if (hosts == nullptr) continue;
    if (hosts->empty()) return FlagError(flag, "empty host list");
    std::vector<std::string>& addresses = jobs[job];
    for (const std::string_view address : Split(*hosts, ',')) {
      if (!IsValidAddress(address)) {
        return FlagError(
            flag,
            absl::StrFormat("bad address '%s': expected HOST:PORT with PORT in 1..65535", address));
      }
      addresses.emplace_back(address);
    }
  }
  if (jobs.empty()) {
    return absl::InvalidArgumentError("neither --ps_hosts nor --worker_hosts is given");
  }
  ServerConfig config;
  ASSIGN_OR_RETURN(config.cluster, ClusterSpec::FromJobs(jobs));

  const std::string* job_name = FindFlag(flags, "job_name");
  if (job_name == nullptr || job_name->empty()) return FlagError("job_name", "missing");
  if (!config.cluster.HasJob(*job_name)) {
    return FlagError("job_name", absl::StrFormat("no job '%s' in the cluster; jobs: %s", *job_name,
                                                 absl::StrJoin(config.cluster.jobs(), ", ")));
  }
  config.task.job = *job_name;

  const std::string* task_index = FindFlag(flags, "task_index");
  if (task_index == nullptr || task_index->empty()) return FlagError("task_index", "missing");
  const std::optional<int> index = ParseDecimalInt(*task_index);
  if (!index) {
    return FlagError("task_index",
                     absl::StrFormat("'%s' is not a non-negative integer", *task_index));
  }
  config.task.index = *index;
  RETURN_IF_ERROR(config.cluster.CheckTask(config.task, "--task_index"));

  if (const std::string* issync = FindFlag(flags, "issync")) {
    if (*issync == "1" || *issync == "true") {
      config.sync_replicas = true;
    } else if (*issync != "0" && *issync != "false") {
      return FlagError("issync", absl::StrFormat("'%s' is not 0, 1, true or false", *issync));
    }
  }
  if (const std::string* keys = FindFlag(flags, "curve_keys")) {
    if (keys->empty()) return FlagError("curve_keys", "empty key directory");
    config.curve_keys = *keys;
  }
  return config;
}

}  // namespace rill
