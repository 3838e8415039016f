// The supervision behind `rill launch`: starts a job's tasks as child
// processes, prefixes their output lines, restarts those that fail, and ends
// the job with its chief, so that no task outlives the launcher.
#ifndef RILL_CLI_TASK_LAUNCHER_H_
#define RILL_CLI_TASK_LAUNCHER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace rill::cli {

// What a task's end means for the job.
enum class TaskRole {
  kChief,    // The job ends with it: exit 0 finishes the job, a failure it cannot recover fails it.
  kWorker,   // Finishes on its own after the chief; its failure does not end the job.
  kService,  // Serves until stopped (a ps task): stopped when the job ends.
};

enum class RestartPolicy { kNever, kOnFailure };

struct TaskSpec {
  // "worker 1": the prefix of its lines ("[worker 1] ...") and the name in
  // the launcher's messages.
  std::string name;
  TaskRole role = TaskRole::kWorker;
  // The program (a path, as FindExecutable in cli/task_process.h returns
  // it) and its arguments.
  std::vector<std::string> argv;
  // The task's whole environment, "NAME=VALUE" each.
  std::vector<std::string> env;
};

struct LaunchOptions {
  RestartPolicy restart = RestartPolicy::kOnFailure;
  // Restarts per task, at most.
  int max_restarts = 3;
  // The wait before a task's k-th restart: first_backoff * 2^(k-1), at most max_backoff.
  absl::Duration first_backoff = absl::Seconds(1);
  absl::Duration max_backoff = absl::Seconds(30);
  // How long the other workers may go on after the chief finished.
  absl::Duration grace = absl::Seconds(30);
  // Between SIGTERM and SIGKILL when tasks are stopped.
  absl::Duration stop_timeout = absl::Seconds(5);
  // Where the tasks' prefixed lines (cli/line_prefixer.h) and the
  // launcher's "[launch] ..." go, through an OutputSink each
  // (cli/output_sink.h): a reader that does not keep up holds the tasks
  // back, and one that stops reading cannot hold the launcher.
  int out_fd = 1;
  int err_fd = 2;
};

// Runs the tasks until the job ends and returns the launcher's exit code:
// 0 when the chief finished (the other workers get `grace` to finish, then
// what still runs is stopped); the chief's status (its exit code, or 128 +
// signal) when it failed and could not be restarted; 130 or 143 on SIGINT
// or SIGTERM, after stopping every task. A task that fails (non-zero exit,
// killed by a signal, or not started) is restarted, with its same spec,
// under `options.restart`. Every task runs in a process group of its own,
// which is SIGKILLed when the task ends (so before the launcher does) and,
// by the task's guard (cli/task_process.h), when the launcher is killed
// outright, so that nothing a task started outlives the launcher. What left
// its group (setsid, a daemon) comes back to the launcher, a subreaper
// while it runs, when its parent ends, and is SIGKILLed once the tasks
// have ended; only a launcher killed outright cannot end it.
// Once the job has ended, the launcher waits for the readers of its output
// to take what they have not taken yet; a signal then, or one that stopped
// the job, drops the rest (the exit code is then 128 + signal), and a line
// on stderr counts what was dropped. An error only when the launcher cannot
// set itself up (signals, pipes); then no task was started.
//
// REQUIRES: exactly one task is kChief. Call it from the process's only thread: it
// blocks SIGCHLD, SIGINT and SIGTERM while it runs (reading them from a
// signalfd) and reaps every child of the process.
absl::StatusOr<int> RunTasks(const std::vector<TaskSpec>& tasks, const LaunchOptions& options);

}  // namespace rill::cli

#endif  // RILL_CLI_TASK_LAUNCHER_H_
