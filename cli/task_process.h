// Starting one task of `rill launch` as a child process: its program found
// as a shell finds it, its output through pipes, its own process group, and
// a death signal that ends it with the launcher.
#ifndef RILL_CLI_TASK_PROCESS_H_
#define RILL_CLI_TASK_PROCESS_H_

#include <signal.h>
#include <sys/types.h>

#include <iterator>
#include <string>
#include <string_view>

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
  pid_t pid;  // Also its process group.
  int out;    // The read ends of its stdout and stderr, non-blocking, close-on-exec.
  int err;
};

// Starts `argv` (argv[0] a path, as FindExecutable returns) with the
// environment `envp`, both null-terminated. The child leads a process group
// of its own and is SIGKILLed when the launcher dies. FAILED_PRECONDITION
// naming the program when it could not be executed (then nothing runs and
// nothing is left to reap); INTERNAL when pipes or fork fail.
absl::StatusOr<ChildProcess> SpawnChild(char* const* argv, char* const* envp,
                                        const ChildSetup& setup);

// `fd`, moved above stderr when it is not, close-on-exec (-1 stays -1).
int AboveStderr(int fd);

// Writes all of `text` to `fd`, waiting when it is full. What cannot be
// written (nobody reads any more) is dropped.
void WriteAll(int fd, std::string_view text);

// "exited with status 3", "was killed by SIGKILL": a wait status in words.
std::string DescribeWaitStatus(int status);

// A shell's way: the exit code, or 128 + the signal that killed it.
int ExitCodeOf(int status);

}  // namespace rill::cli

#endif  // RILL_CLI_TASK_PROCESS_H_
