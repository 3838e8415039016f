#include "cli/task_process.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "graph/status_macros.h"

namespace rill::cli {
namespace {

absl::Status ErrnoError(const char* what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
}

// A pipe whose ends are above stderr: in the child, ends are dup2'ed onto
// 0, 1 and 2, which must not be one of them. {-1, -1} on failure.
std::array<int, 2> Pipe() {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return {-1, -1};
  fds[0] = AboveStderr(fds[0]);
  fds[1] = AboveStderr(fds[1]);
  if (fds[0] >= 0 && fds[1] >= 0) return {fds[0], fds[1]};
  const int error = errno;
  for (const int fd : fds) {
    if (fd >= 0) close(fd);
  }
  errno = error;
  return {-1, -1};
}

void CloseAll(std::initializer_list<int> fds) {
  for (const int fd : fds) {
    if (fd >= 0) close(fd);
  }
}

absl::Status CheckExecutable(const std::string& path) {
  struct stat info;
  if (stat(path.c_str(), &info) != 0) {
    return absl::NotFoundError(absl::StrCat(path, ": ", std::strerror(errno)));
  }
  if (S_ISDIR(info.st_mode)) return absl::NotFoundError(absl::StrCat(path, ": is a directory"));
  if (access(path.c_str(), X_OK) != 0) {
    return absl::PermissionDeniedError(absl::StrCat(path, ": not executable"));
  }
  return absl::OkStatus();
}

// What a guard takes for the launcher's death; anyone else's is ignored.
constexpr int kGuardSignal = SIGUSR1;

// Forks a task's guard (SpawnChild, in cli/task_process.h): the leader of
// a new process group; its pid once its death signal is set.
absl::StatusOr<pid_t> SpawnGuard(const ChildSetup& setup) {
  const std::array<int, 2> ready = Pipe();
  if (ready[0] < 0) return ErrnoError("pipe", errno);
  const pid_t pid = fork();
  if (pid == 0) {
    const pid_t group = getpid();
    if (setpgid(0, 0) != 0) _exit(1);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_SETMASK, &all, nullptr);
    prctl(PR_SET_PDEATHSIG, kGuardSignal);
    if (getppid() == setup.parent) {
      // The launcher's pipes stay the launcher's: a reader of its stdout
      // sees the end when it ends.
      close_range(0, ready[1] - 1, 0);
      close_range(ready[1] + 1, ~0U, 0);
      (void)!write(ready[1], "", 1);
      close(ready[1]);
      sigset_t wake;
      sigemptyset(&wake);
      sigaddset(&wake, kGuardSignal);
      // Pending since the launcher died, if it died since the check.
      while (getppid() == setup.parent) sigwaitinfo(&wake, nullptr);
    }
    kill(-group, SIGKILL);
    _exit(0);
  }
  const int fork_error = errno;
  close(ready[1]);
  if (pid < 0) {
    close(ready[0]);
    return ErrnoError("fork", fork_error);
  }
  // Here too, so that the group exists before the task joins it.
  setpgid(pid, pid);
  char byte;
  ssize_t n;
  do {
    n = read(ready[0], &byte, 1);
  } while (n < 0 && errno == EINTR);
  close(ready[0]);
  if (n != 1) {
    kill(pid, SIGKILL);
    waitpid(pid, nullptr, 0);
    return absl::InternalError("the task's guard process ended as it started");
  }
  return pid;
}

}  // namespace

int AboveStderr(int fd) {
  if (fd < 0 || fd > STDERR_FILENO) return fd;
  const int moved = fcntl(fd, F_DUPFD_CLOEXEC, STDERR_FILENO + 1);
  const int error = errno;
  close(fd);
  errno = error;
  return moved;
}

std::vector<pid_t> KillChildren() {
  std::vector<pid_t> killed;
  // Bounded, against children that fork faster than they are killed.
  for (int round = 0; round < 100; ++round) {
    std::vector<pid_t> children;
    std::error_code error;
    for (const auto& thread : std::filesystem::directory_iterator("/proc/self/task", error)) {
      std::ifstream list(thread.path() / "children");
      for (pid_t pid; list >> pid;) children.push_back(pid);
    }
    if (children.empty()) break;
    for (const pid_t pid : children) kill(pid, SIGKILL);
    for (const pid_t pid : children) waitpid(pid, nullptr, 0);
    killed.insert(killed.end(), children.begin(), children.end());
  }
  return killed;
}

std::string DescribeWaitStatus(int status) {
  if (WIFEXITED(status)) return absl::StrCat("exited with status ", WEXITSTATUS(status));
  const int signal = WTERMSIG(status);
  const char* name = sigabbrev_np(signal);
  return name == nullptr ? absl::StrCat("was killed by signal ", signal)
                         : absl::StrCat("was killed by SIG", name);
}

int ExitCodeOf(int status) {
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

absl::StatusOr<std::string> FindExecutable(const std::string& program) {
  if (program.empty()) return absl::InvalidArgumentError("the program is an empty string");
  if (program.find('/') != std::string::npos) {
    if (absl::Status status = CheckExecutable(program); !status.ok()) return status;
    return program;
  }
  const char* path = std::getenv("PATH");
  // execvp's own default when PATH is unset.
  const std::string dirs = path != nullptr ? path : "/bin:/usr/bin";
  for (const absl::string_view dir : absl::StrSplit(dirs, ':')) {
    const std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", program);
    if (CheckExecutable(candidate).ok()) return candidate;
  }
  return absl::NotFoundError(
      absl::StrCat(program, ": no executable of that name in PATH (", dirs, ")"));
}

absl::StatusOr<ChildProcess> SpawnChild(char* const* argv, char* const* envp,
                                        const ChildSetup& setup) {
  ASSIGN_OR_RETURN(const pid_t group, SpawnGuard(setup));
  const auto end_guard = [group] {
    kill(group, SIGKILL);
    waitpid(group, nullptr, 0);
  };
  const std::array<int, 2> out = Pipe(), err = Pipe(), exec_error = Pipe();
  if (out[0] < 0 || err[0] < 0 || exec_error[0] < 0) {
    const int error = errno;
    CloseAll({out[0], out[1], err[0], err[1], exec_error[0], exec_error[1]});
    end_guard();
    return ErrnoError("pipe", error);
  }
  const pid_t pid = fork();
  if (pid == 0) {
    // Each task has a process group of its own, so that what it starts
    // (a shell's commands) is signalled with it, and so that a Ctrl-C at
    // the terminal reaches the launcher alone: the launcher then stops the
    // tasks in order (SIGTERM, which a ps task takes as a clean stop)
    // instead of every process taking SIGINT at once, and no task is
    // restarted for having been interrupted.
    if (setpgid(0, group) != 0) {
      const int error = errno;
      (void)!write(exec_error[1], &error, sizeof(error));
      _exit(127);
    }
    // A launcher killed outright (SIGKILL) takes its tasks with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != setup.parent) _exit(127);  // It died before prctl.
    dup2(setup.stdin_fd, STDIN_FILENO);
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (size_t i = 0; i < std::size(ChildSetup::kSignals); ++i) {
      sigaction(ChildSetup::kSignals[i], &setup.dispositions[i], nullptr);
    }
    sigprocmask(SIG_SETMASK, &setup.mask, nullptr);
    execve(argv[0], argv, envp);
    const int error = errno;
    (void)!write(exec_error[1], &error, sizeof(error));
    _exit(127);
  }
  const int fork_error = errno;
  CloseAll({out[1], err[1], exec_error[1]});
  if (pid < 0) {
    CloseAll({out[0], err[0], exec_error[0]});
    end_guard();
    return ErrnoError("fork", fork_error);
  }
  // Here too, so that the task is in the group before the launcher may signal it.
  setpgid(pid, group);
  // The pipe closes at a successful exec; otherwise the child's errno comes through.
  int exec_errno = 0;
  ssize_t n;
  do {
    n = read(exec_error[0], &exec_errno, sizeof(exec_errno));
  } while (n < 0 && errno == EINTR);
  close(exec_error[0]);
  if (n == sizeof(exec_errno)) {
    waitpid(pid, nullptr, 0);
    end_guard();
    CloseAll({out[0], err[0]});
    return absl::FailedPreconditionError(
        absl::StrCat("cannot execute ", argv[0], ": ", std::strerror(exec_errno)));
  }
  fcntl(out[0], F_SETFL, O_NONBLOCK);
  fcntl(err[0], F_SETFL, O_NONBLOCK);
  return ChildProcess{.pid = pid, .group = group, .out = out[0], .err = err[0]};
}

}  // namespace rill::cli
