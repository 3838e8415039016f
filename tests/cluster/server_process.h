// Real `rill server` processes for the cluster tests: each one on a free
// port of 127.0.0.1, its stderr in a file, killed and reaped when its
// handle goes away so that no test leaves a server behind.
#ifndef RILL_TESTS_CLUSTER_SERVER_PROCESS_H_
#define RILL_TESTS_CLUSTER_SERVER_PROCESS_H_

#include <sys/types.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/distributed/cluster_spec.h"
#include "tests/test_util.h"

namespace rill::testing {

struct ExitStatus {
  bool exited = false;     // False when killed by a signal (or never ended).
  int code = -1;           // When exited.
  int signal = 0;          // When killed.
  bool timed_out = false;  // Still running at the bound: killed then.
};

// A child process (the rill binary, RILL_BIN) with stdout and stderr in
// one log file. It is killed when the thread that started it ends (so that
// a crashed test leaves nothing behind): start it from the test's thread.
class ServerProcess {
 public:
  // Starts `$RILL_BIN args...` with `env` added to this process's
  // environment. Does not wait for anything.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Spawn(
      const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {});
  // Starts `$RILL_BIN server args...` and waits until it says that it
  // serves. FAILED_PRECONDITION (with its log) when it exits first or does
  // not say so within `timeout`.
  static absl::StatusOr<std::unique_ptr<ServerProcess>> Start(
      const std::vector<std::string>& args, const std::map<std::string, std::string>& env = {},
      absl::Duration timeout = absl::Seconds(10));
  // SIGKILL and reaps it when it still runs.
  ~ServerProcess();

  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Everything it wrote so far.
  std::string Log() const;
  bool Running();
  void Kill(int signal);
  // Waits at most `timeout` for it to end; SIGKILLs it then.
  ExitStatus WaitExit(absl::Duration timeout = absl::Seconds(20));

 private:
  ServerProcess(pid_t pid, std::string dir) : pid_(pid), dir_(std::move(dir)) {}
  std::string LogPath() const { return dir_ + "/log"; }
  absl::Status WaitServing(absl::Duration timeout);

  pid_t pid_;
  const std::string dir_;
  bool reaped_ = false;
  ExitStatus exit_;
};

struct Cluster {
  std::vector<std::unique_ptr<ServerProcess>> ps;
  std::vector<std::unique_ptr<ServerProcess>> workers;
  std::vector<std::string> ps_hosts;  // "127.0.0.1:PORT" by task index.
  std::vector<std::string> worker_hosts;
  ClusterSpec spec;

  // "zmq://127.0.0.1:PORT" of a task ("ps" or "worker").
  std::string Target(const std::string& job, int task) const;
  ServerProcess& Task(const std::string& job, int task);
  // The flags that make a server task `job`:`task` of this cluster.
  std::vector<std::string> Flags(const std::string& job, int task) const;
};

// `ps` ps tasks and `workers` worker tasks, each a `rill server` with
// `extra_args` added; retried on fresh ports when a port was taken
// meanwhile.
absl::StatusOr<Cluster> StartCluster(int ps, int workers,
                                     const std::vector<std::string>& extra_args = {});

struct BoundedRun {
  ExitStatus exit;
  std::string out;
  std::string err;
};
// Runs `$RILL_BIN args...` to its end (at most `timeout`), stdout and
// stderr kept apart.
BoundedRun RunRill(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env = {},
                   absl::Duration timeout = absl::Seconds(60));

}  // namespace rill::testing

#endif  // RILL_TESTS_CLUSTER_SERVER_PROCESS_H_
