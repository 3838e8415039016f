// ClusterSpec: the jobs of a cluster and each task's address, from code
// (dense or sparse), from "ps=H:P,H:P;worker=H:P", from the flags
// --ps_hosts/--worker_hosts/--job_name/--task_index, or from TF_CONFIG.
#ifndef RILL_RUNTIME_DISTRIBUTED_CLUSTER_SPEC_H_
#define RILL_RUNTIME_DISTRIBUTED_CLUSTER_SPEC_H_

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rill {

struct TaskId;

// Thread safety: immutable after creation.
class ClusterSpec {
 public:
  ClusterSpec() = default;  // No jobs.

  // job -> addresses; task i is addresses[i]. INVALID_ARGUMENT (naming the
  // job and task) for an empty or malformed job name, a job without tasks,
  // an address that is not HOST:PORT with PORT in 1..65535, or two tasks
  // with the same address (naming both).
  static absl::StatusOr<ClusterSpec> FromJobs(
      const std::map<std::string, std::vector<std::string>>& jobs);
  // job -> {task index: address}; indices need not be contiguous (a
  // client may know only some tasks). Same errors, and negative indices.
  static absl::StatusOr<ClusterSpec> FromSparseJobs(
      const std::map<std::string, std::map<int, std::string>>& jobs);
  // "ps=127.0.0.1:2222,127.0.0.1:2223;worker=127.0.0.1:2224" (the format
  // of `rill place --cluster`). Errors name the offending part.
  static absl::StatusOr<ClusterSpec> Parse(std::string_view text);

  bool empty() const { return jobs_.empty(); }
  std::vector<std::string> jobs() const;
  bool HasJob(std::string_view job) const;
  // Task indices of `job`, ascending; empty for an unknown job.
  std::vector<int> TaskIndices(std::string_view job) const;
  // "HOST:PORT". NOT_FOUND for an unknown job ("no job 'x' in the
  // cluster; jobs: ps, worker") or a task the job lacks ("task 3 is out of
  // range for job 'worker' (tasks 0..1)").
  absl::StatusOr<std::string> TaskAddress(std::string_view job, int task) const;
  // "/job:J/replica:0/task:T" for every task, by job name then index.
  std::vector<std::string> TaskNames() const;
  // The tasks a device request (a node's device field) may be placed on,
  // completed as the placer completes it with `home`'s job and task: a
  // request without a job means home's job, one without a task (of home's
  // job: home's task) every task of its job. Names as TaskNames; empty for
  // a job the cluster lacks or a request that does not parse.
  std::vector<std::string> TasksMatching(std::string_view device, const TaskId& home) const;
  // job -> number of tasks (for DeviceSet::ForCluster); sparse jobs count
  // the tasks they list.
  std::map<std::string, int> TasksPerJob() const;
  // OK when the cluster has `task`; else INVALID_ARGUMENT naming `what` (a
  // flag or a field) and the tasks the job has.
  absl::Status CheckTask(const TaskId& task, std::string_view what) const;
  // The same text that Parse reads; sparse jobs as "worker=1:H:P,3:H:P".
  std::string ToString() const;

 private:
  std::map<std::string, std::map<int, std::string>> jobs_;
};

// A task index or a port as the flags and TF_CONFIG write them: whole-text
// decimal without sign; nullopt otherwise (or on overflow).
std::optional<int> ParseDecimalInt(std::string_view text);

// Which task a server process is.
struct TaskId {
  std::string job;
  int index = 0;
};

// What a server process is told at start-up.
struct ServerConfig {
  ClusterSpec cluster;
  TaskId task;
  // --issync: accepted for the training programs that pass it.
  bool sync_replicas = false;
  // --curve_keys, or TF_CONFIG's "curve_keys": the task's CURVE key
  // directory (transport/curve.h); empty: no authentication, no encryption.
  std::string curve_keys;
  // --insecure: the network is trusted, so a task may serve a non-loopback
  // address without CURVE keys (anyone who reaches it can read and change
  // every variable). Off, such a task refuses to start.
  bool insecure = false;
};

// The seed scripts' flags: "ps_hosts", "worker_hosts" (comma-separated
// HOST:PORT lists; either may be absent but not both), "job_name",
// "task_index", optional "issync" (0/1/true/false) and "curve_keys". INVALID_ARGUMENT
// naming the flag for a missing or malformed value, a job_name the
// cluster lacks, or a task_index out of range.
absl::StatusOr<ServerConfig> ServerConfigFromFlags(const std::map<std::string, std::string>& flags);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_CLUSTER_SPEC_H_
