// Starting one task of `rill launch` as a child process: its program found
// as a shell finds it, its output through pipes, and a process group of its
// own that a guard process kills when the launcher dies, however it dies.
#ifndef RILL_CLI_TASK_PROCESS_H_
#define RILL_CLI_TASK_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <iterator>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rill::cli {

// The path that execve runs for `program`: `program` itself when it has a
// '/', else the first executable file of that name in PATH's directories.
// NOT_FOUND or PERMISSION_DENIED naming the program otherwise.
absl::StatusOr<std::string> FindExecutable(const std::string& program);

// What every child gets between fork and exec, prepared before the fork.
struct ChildSetup {
  pid_t parent = 0;    // The launcher, whose death ends the child.
  int stdin_fd = -1;   // Above stderr; the child's stdin.
  sigset_t mask = {};  // The signal mask the child runs with.
  // The dispositions of the signals the launcher changes, as its caller set
  // them; the child gets them back.
  static constexpr int kSignals[] = {SIGPIPE, SIGINT, SIGTERM, SIGCHLD};
  struct sigaction dispositions[std::size(kSignals)] = {};
};

struct ChildProcess {
  pid_t pid;
  // Its process group, led by its guard, whose pid this is: a child of the
  // launcher too, to be reaped once the group is killed.
  pid_t group;
  int out;  // The read ends of its stdout and stderr, non-blocking, close-on-exec.
  int err;
};

// Starts `argv` (argv[0] a path, as FindExecutable returns) with the
// environment `envp`, both null-terminated, in a new process group, so that
// what the task starts (a shell's background commands) is signalled with
// it. A death signal reaches only the task itself, not its children, so the
// group is led by a guard: a forked copy of the launcher that waits for the
// launcher's death, then SIGKILLs the whole group. It runs no code of the
// task's and holds no file of the launcher's; staying in the group, it also
// keeps the group's id from being reused while the launcher may signal it.
// What leaves the group (setsid, a daemon) is not its to end. The task itself
// is SIGKILLed when the launcher dies, too. FAILED_PRECONDITION naming the
// program when it could not be executed (then nothing runs and nothing is
// left to reap); INTERNAL when pipes or fork fail.
absl::StatusOr<ChildProcess> SpawnChild(char* const* argv, char* const* envp,
                                        const ChildSetup& setup);

// SIGKILLs and reaps every child of this process (of each of its threads,
// as /proc/self/task/TID/children lists them), then what they started that
// comes back to this process as a subreaper, in rounds; their pids.
std::vector<pid_t> KillChildren();

// `fd`, moved above stderr when it is not, close-on-exec (-1 stays -1).
int AboveStderr(int fd);

// "exited with status 3", "was killed by SIGKILL": a wait status in words.
std::string DescribeWaitStatus(int status);

// A shell's way: the exit code, or 128 + the signal that killed it.
int ExitCodeOf(int status);

}  // namespace rill::cli

#endif  // RILL_CLI_TASK_PROCESS_H_
