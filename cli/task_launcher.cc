#include "cli/task_launcher.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstring>
#include <iterator>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "cli/line_prefixer.h"
#include "cli/output_sink.h"
#include "cli/task_process.h"

namespace rill::cli {
namespace {

using Clock = std::chrono::steady_clock;

Clock::time_point After(absl::Duration wait) {
  return Clock::now() +
         std::chrono::duration_cast<Clock::duration>(absl::ToChronoNanoseconds(wait));
}

absl::Status ErrnoError(const char* what, int error) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(error)));
}

// Thread safety: none; RunTasks' thread only.
class Launcher {
 public:
  Launcher(const std::vector<TaskSpec>& specs, const LaunchOptions& options, int signal_fd,
           const ChildSetup& setup)
      : options_(options),
        signal_fd_(signal_fd),
        setup_(setup),
        out_(options.out_fd),
        err_(options.err_fd) {
    tasks_.reserve(specs.size());
    for (const TaskSpec& spec : specs) {
      Task& task = tasks_.emplace_back();
      task.spec = &spec;
      // execve's arrays; it does not write through them.
      for (const std::string& arg : spec.argv) task.argv.push_back(const_cast<char*>(arg.c_str()));
      task.argv.push_back(nullptr);
      for (const std::string& env : spec.env) task.envp.push_back(const_cast<char*>(env.c_str()));
      task.envp.push_back(nullptr);
    }
  }
  ~Launcher() {
    for (const Stream& stream : streams_) {
      if (stream.fd >= 0) close(stream.fd);
    }
  }

  int Run();

 private:
  enum class State { kEnded, kRunning, kWaitingToRestart };
  // Running: every task as it should; finishing: the chief finished and
  // the other workers may still finish; stopping: what runs is being
  // stopped, and nothing starts again.
  enum class Phase { kRunning, kFinishing, kStopping };

  struct Task {
    const TaskSpec* spec;
    std::vector<char*> argv, envp;
    State state = State::kEnded;
    pid_t pid = -1;
    pid_t group = -1;            // Led by its guard (ChildProcess), while running.
    bool guard_running = false;  // Not yet reaped.
    int restarts = 0;
    Clock::time_point restart_at;
  };
  struct Stream {
    int fd;
    OutputSink* sink;
    size_t task;
    LinePrefixer prefixer;
  };

  void Log(absl::string_view message) { err_.Write(absl::StrCat("[launch] ", message, "\n")); }
  const std::string& Name(size_t i) const { return tasks_[i].spec->name; }
  bool AnyRunning(std::optional<TaskRole> role = std::nullopt) const;

  void Start(size_t i);
  void Ended(size_t i, int status);
  void AfterFailure(size_t i, int status);
  void Finish();
  void Stop(int exit_code);
  void SignalRunning(int signal);
  void ReadSignals();
  void Reap();
  // Reads what the stream holds (all of it when `drain`); false at its end.
  bool Read(Stream& stream, bool drain);
  void DrainTask(size_t i);
  void CloseStream(Stream& stream);
  std::optional<Clock::time_point> NextDeadline() const;
  void KillStrays();
  void FinishOutput();

  const LaunchOptions options_;
  const int signal_fd_;
  const ChildSetup setup_;

  OutputSink out_, err_;
  std::vector<Task> tasks_;
  std::vector<Stream> streams_;
  Phase phase_ = Phase::kRunning;
  int exit_code_ = 0;
  bool signalled_ = false;                    // A signal stopped the job.
  Clock::time_point grace_end_;               // When finishing.
  std::optional<Clock::time_point> kill_at_;  // When stopping, until SIGKILL went out.
};

bool Launcher::AnyRunning(std::optional<TaskRole> role) const {
  return std::any_of(tasks_.begin(), tasks_.end(), [&](const Task& task) {
    return task.state == State::kRunning && (!role || task.spec->role == *role);
  });
}

void Launcher::Start(size_t i) {
  Task& task = tasks_[i];
  absl::StatusOr<ChildProcess> child = SpawnChild(task.argv.data(), task.envp.data(), setup_);
  if (!child.ok()) {
    Log(absl::StrCat("cannot start ", Name(i), ": ", child.status().message()));
    // As a shell reports a command it cannot run.
    AfterFailure(i, W_EXITCODE(127, 0));
    return;
  }
  task.state = State::kRunning;
  task.pid = child->pid;
  task.group = child->group;
  task.guard_running = true;
  const std::string prefix = absl::StrCat("[", Name(i), "] ");
  streams_.push_back({child->out, &out_, i, LinePrefixer(prefix)});
  streams_.push_back({child->err, &err_, i, LinePrefixer(prefix)});
  Log(absl::StrCat(Name(i), " started, pid ", child->pid));
}

void Launcher::Ended(size_t i, int status) {
  Task& task = tasks_[i];
  // What the task left behind in its group (a shell's background command)
  // goes with it, so that nothing of a task outlives it; its guard too. The
  // guard keeps the group's id from being reused until it is reaped, so
  // this reaches no one else.
  kill(-task.group, SIGKILL);
  if (task.guard_running) waitpid(task.group, nullptr, 0);
  task.guard_running = false;
  task.group = -1;
  // Its last lines come before the news of its end; with its writers gone,
  // its pipes hold no more than they hold now.
  DrainTask(i);
  Log(absl::StrCat(Name(i), " (pid ", task.pid, ") ", DescribeWaitStatus(status)));
  task.state = State::kEnded;
  task.pid = -1;
  if (phase_ == Phase::kStopping) return;
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    if (task.spec->role == TaskRole::kChief) Finish();
    return;
  }
  AfterFailure(i, status);
}

// Schedules the restart of task `i`, which failed with `status`, or gives up on it.
void Launcher::AfterFailure(size_t i, int status) {
  Task& task = tasks_[i];
  task.state = State::kEnded;
  if (phase_ == Phase::kFinishing) {
    Log(absl::StrCat(Name(i), " is not restarted: the chief has finished"));
    return;
  }
  if (options_.restart == RestartPolicy::kOnFailure && task.restarts < options_.max_restarts) {
    ++task.restarts;
    const absl::Duration wait =
        std::min(options_.max_backoff,
                 options_.first_backoff * (int64_t{1} << std::min(task.restarts - 1, 30)));
    task.state = State::kWaitingToRestart;
    task.restart_at = After(wait);
    Log(absl::StrCat("restarting ", Name(i), " in ", absl::FormatDuration(wait), " (attempt ",
                     task.restarts, " of ", options_.max_restarts, ")"));
    return;
  }
  std::string why = absl::StrCat("restarted ", task.restarts, " times already");
  if (options_.restart == RestartPolicy::kNever) why = "--restart never";
  if (options_.max_restarts == 0) why = "--max_restarts 0";
  switch (task.spec->role) {
    case TaskRole::kChief:
      Log(absl::StrCat("giving up on ", Name(i), ", the chief (", why,
                       "): stopping the job with its status ", ExitCodeOf(status)));
      Stop(ExitCodeOf(status));
      break;
    case TaskRole::kWorker:
      Log(absl::StrCat("giving up on ", Name(i), " (", why,
                       "); the job goes on without it: only the chief ends it"));
      break;
    case TaskRole::kService:
      Log(absl::StrCat("giving up on ", Name(i), " (", why,
                       "); the job goes on without it, as long as the chief does"));
      break;
  }
}

void Launcher::Finish() {
  phase_ = Phase::kFinishing;
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].state != State::kWaitingToRestart) continue;
    tasks_[i].state = State::kEnded;
    Log(absl::StrCat(Name(i), " is not restarted: the chief has finished"));
  }
  if (AnyRunning(TaskRole::kWorker)) {
    Log(absl::StrCat("the chief has finished; waiting up to ", absl::FormatDuration(options_.grace),
                     " for the other workers"));
    grace_end_ = After(options_.grace);
  }
}

void Launcher::Stop(int exit_code) {
  phase_ = Phase::kStopping;
  exit_code_ = exit_code;
  for (Task& task : tasks_) {
    if (task.state == State::kWaitingToRestart) task.state = State::kEnded;
  }
  for (size_t i = 0; i < tasks_.size(); ++i) {
    if (tasks_[i].state == State::kRunning) Log(absl::StrCat("stopping ", Name(i), " (SIGTERM)"));
  }
  SignalRunning(SIGTERM);
  kill_at_ = After(options_.stop_timeout);
}

// The whole group of each running task: a task's own processes go too.
void Launcher::SignalRunning(int signal) {
  for (const Task& task : tasks_) {
    if (task.state == State::kRunning) kill(-task.group, signal);
  }
}

void Launcher::ReadSignals() {
  signalfd_siginfo info;
  while (read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
    const int signal = static_cast<int>(info.ssi_signo);
    if (signal == SIGCHLD) {
      Reap();
      continue;
    }
    const std::string name = absl::StrCat("SIG", sigabbrev_np(signal));
    if (phase_ == Phase::kStopping) {
      Log(absl::StrCat(name, " while stopping: killing every task now (SIGKILL)"));
      SignalRunning(SIGKILL);
      kill_at_.reset();
      continue;
    }
    Log(absl::StrCat(name, ": stopping every task"));
    signalled_ = true;
    Stop(128 + signal);
  }
}

void Launcher::Reap() {
  int status;
  pid_t pid;
  while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
    for (size_t i = 0; i < tasks_.size(); ++i) {
      if (tasks_[i].state != State::kRunning) continue;
      // A guard killed from outside: its task runs on unguarded.
      if (tasks_[i].group == pid) tasks_[i].guard_running = false;
      if (tasks_[i].pid == pid) Ended(i, status);
    }
  }
}

bool Launcher::Read(Stream& stream, bool drain) {
  char buffer[64 * 1024];
  do {
    const ssize_t n = read(stream.fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return true;
    if (n <= 0) return false;
    stream.sink->Write(stream.prefixer.Feed(std::string_view(buffer, static_cast<size_t>(n))));
  } while (drain);
  return true;
}

// Every line the task wrote before it ended, and its unfinished last one.
// What it left behind may still write later lines to the same pipes.
void Launcher::DrainTask(size_t i) {
  for (Stream& stream : streams_) {
    if (stream.task != i || stream.fd < 0) continue;
    if (!Read(stream, /*drain=*/true)) CloseStream(stream);
    stream.sink->Write(stream.prefixer.Flush());
  }
}

void Launcher::CloseStream(Stream& stream) {
  stream.sink->Write(stream.prefixer.Flush());
  close(stream.fd);
  stream.fd = -1;
}

std::optional<Clock::time_point> Launcher::NextDeadline() const {
  std::optional<Clock::time_point> next;
  const auto consider = [&next](Clock::time_point at) {
    if (!next || at < *next) next = at;
  };
  for (const Task& task : tasks_) {
    if (task.state == State::kWaitingToRestart) consider(task.restart_at);
  }
  if (phase_ == Phase::kFinishing) consider(grace_end_);
  if (phase_ == Phase::kStopping && kill_at_) consider(*kill_at_);
  return next;
}

int Launcher::Run() {
  for (size_t i = 0; i < tasks_.size() && phase_ == Phase::kRunning; ++i) Start(i);
  while (true) {
    const Clock::time_point now = Clock::now();
    for (size_t i = 0; i < tasks_.size() && phase_ == Phase::kRunning; ++i) {
      if (tasks_[i].state == State::kWaitingToRestart && tasks_[i].restart_at <= now) Start(i);
    }
    if (phase_ == Phase::kFinishing) {
      if (!AnyRunning(TaskRole::kWorker)) {
        Stop(0);
      } else if (grace_end_ <= now) {
        Log(absl::StrCat("workers still running ", absl::FormatDuration(options_.grace),
                         " after the chief finished"));
        Stop(0);
      }
    }
    if (phase_ == Phase::kStopping) {
      if (!AnyRunning()) break;
      if (kill_at_ && *kill_at_ <= now) {
        for (size_t i = 0; i < tasks_.size(); ++i) {
          if (tasks_[i].state != State::kRunning) continue;
          Log(absl::StrCat(Name(i), " still running ", absl::FormatDuration(options_.stop_timeout),
                           " after SIGTERM: SIGKILL"));
        }
        SignalRunning(SIGKILL);
        kill_at_.reset();
      }
    }

    std::vector<pollfd> fds = {{.fd = signal_fd_, .events = POLLIN, .revents = 0}};
    OutputSink* const sinks[] = {&out_, &err_};
    for (const OutputSink* sink : sinks) {
      fds.push_back({sink->pending() ? sink->fd() : -1, POLLOUT, 0});
    }
    constexpr size_t kFirstStream = 1 + std::size(sinks);
    for (const Stream& stream : streams_) {
      // A reader that does not keep up holds the tasks back, as it would
      // hold them writing to it themselves. While they are being stopped
      // they are read on, so that none is kept from ending.
      const bool read = phase_ == Phase::kStopping || !stream.sink->full();
      fds.push_back({read ? stream.fd : -1, POLLIN, 0});
    }
    int timeout_ms = -1;
    if (const std::optional<Clock::time_point> deadline = NextDeadline()) {
      const auto wait = std::chrono::ceil<std::chrono::milliseconds>(*deadline - Clock::now());
      timeout_ms = static_cast<int>(std::clamp<int64_t>(wait.count(), 0, INT_MAX));
    }
    if (poll(fds.data(), fds.size(), timeout_ms) < 0 && errno != EINTR) {
      Log(absl::StrCat("poll: ", std::strerror(errno), ": stopping every task"));
      SignalRunning(SIGKILL);
      Reap();
      return 1;
    }
    for (size_t s = 0; s < std::size(sinks); ++s) {
      if (fds[1 + s].revents != 0) sinks[s]->Flush();
    }
    // Output first, so that a task's last lines come before its end.
    for (size_t s = kFirstStream; s < fds.size(); ++s) {
      if (fds[s].revents != 0 && !Read(streams_[s - kFirstStream], /*drain=*/false)) {
        CloseStream(streams_[s - kFirstStream]);
      }
    }
    std::erase_if(streams_, [](const Stream& stream) { return stream.fd < 0; });
    if (fds[0].revents != 0) ReadSignals();
  }
  for (Stream& stream : streams_) {
    Read(stream, /*drain=*/true);
    CloseStream(stream);
  }
  streams_.clear();
  KillStrays();
  FinishOutput();
  return exit_code_;
}

// A process that left its task's group (setsid, a daemon) was re-parented
// to the launcher, a subreaper (RunTasks), when its parent ended; it goes
// with the job too.
void Launcher::KillStrays() {
  for (const pid_t pid : KillChildren()) {
    Log(absl::StrCat("pid ", pid, " left its task's process group and outlived it: killed"));
  }
}

// The readers get what they have yet to take, unless a signal stopped the
// job (then no one may be reading) or one comes meanwhile: then it is
// dropped, and the launcher ends at once.
void Launcher::FinishOutput() {
  while (!signalled_ && (out_.pending() || err_.pending())) {
    pollfd fds[] = {{.fd = signal_fd_, .events = POLLIN, .revents = 0},
                    {.fd = out_.pending() ? out_.fd() : -1, .events = POLLOUT, .revents = 0},
                    {.fd = err_.pending() ? err_.fd() : -1, .events = POLLOUT, .revents = 0}};
    if (poll(fds, std::size(fds), -1) < 0 && errno != EINTR) break;
    if (fds[1].revents != 0) out_.Flush();
    if (fds[2].revents != 0) err_.Flush();
    signalfd_siginfo info;
    while (fds[0].revents != 0 && read(signal_fd_, &info, sizeof(info)) == sizeof(info)) {
      if (info.ssi_signo == SIGCHLD) continue;
      signalled_ = true;
      exit_code_ = 128 + static_cast<int>(info.ssi_signo);
    }
  }
  out_.Flush();
  out_.Abandon();
  const auto report = [this](const OutputSink& sink, const char* name) {
    if (sink.dropped() == 0) return;
    Log(absl::StrCat("dropped ", sink.dropped(), " bytes of output to ", name,
                     ": its reader did not take them"));
  };
  report(out_, "stdout");
  report(err_, "stderr");
  err_.Flush();
  err_.Abandon();
}

}  // namespace

absl::StatusOr<int> RunTasks(const std::vector<TaskSpec>& tasks, const LaunchOptions& options) {
  ChildSetup setup;
  setup.parent = getpid();
  sigset_t handled;
  sigemptyset(&handled);
  sigaddset(&handled, SIGCHLD);
  sigaddset(&handled, SIGINT);
  sigaddset(&handled, SIGTERM);
  if (sigprocmask(SIG_BLOCK, &handled, &setup.mask) != 0) return ErrnoError("sigprocmask", errno);
  const int signal_fd = signalfd(-1, &handled, SFD_NONBLOCK | SFD_CLOEXEC);
  const int signal_fd_errno = errno;
  setup.stdin_fd = AboveStderr(open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int stdin_errno = errno;
  // A closed stdout or stderr (the launcher piped into `head`) drops the
  // tasks' lines rather than killing the launcher. SIGINT and SIGTERM are
  // taken even when the caller ignored them (a shell's background job), and
  // SIGCHLD must not be ignored, or the children would not be waited for.
  for (size_t i = 0; i < std::size(ChildSetup::kSignals); ++i) {
    struct sigaction action = {};
    action.sa_handler = ChildSetup::kSignals[i] == SIGPIPE ? SIG_IGN : SIG_DFL;
    sigemptyset(&action.sa_mask);
    sigaction(ChildSetup::kSignals[i], &action, &setup.dispositions[i]);
  }
  // What leaves a task's process group comes back to the launcher when its
  // parent ends, rather than to init, so that the launcher can end it too.
  int was_subreaper = 0;
  prctl(PR_GET_CHILD_SUBREAPER, &was_subreaper);
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  absl::StatusOr<int> exit_code;
  if (signal_fd < 0) {
    exit_code = ErrnoError("signalfd", signal_fd_errno);
  } else if (setup.stdin_fd < 0) {
    exit_code = ErrnoError("/dev/null", stdin_errno);
  } else {
    exit_code = Launcher(tasks, options, signal_fd, setup).Run();
    // Signals that came after the end are taken here rather than by the
    // default action once they are unblocked.
    signalfd_siginfo info;
    while (read(signal_fd, &info, sizeof(info)) == sizeof(info)) {
    }
  }
  for (size_t i = 0; i < std::size(ChildSetup::kSignals); ++i) {
    sigaction(ChildSetup::kSignals[i], &setup.dispositions[i], nullptr);
  }
  prctl(PR_SET_CHILD_SUBREAPER, was_subreaper);
  if (setup.stdin_fd >= 0) close(setup.stdin_fd);
  if (signal_fd >= 0) close(signal_fd);
  sigprocmask(SIG_SETMASK, &setup.mask, nullptr);
  return exit_code;
}

}  // namespace rill::cli
