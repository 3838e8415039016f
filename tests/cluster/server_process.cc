#include "tests/cluster/server_process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "tests/test_util.h"

extern char** environ;

namespace rill::testing {
namespace {

constexpr char kServing[] = "Started server with target";

std::string RillBin() {
  const char* bin = std::getenv("RILL_BIN");
  return bin == nullptr ? "rill" : bin;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// fork + exec with stdout/stderr in the given files. Everything the child
// needs is prepared before fork: only async-signal-safe calls run there.
absl::StatusOr<pid_t> SpawnChild(const std::vector<std::string>& args,
                                 const std::map<std::string, std::string>& env,
                                 const std::string& out_path, const std::string& err_path) {
  std::vector<std::string> argv_strings = {RillBin()};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& arg : argv_strings) argv.push_back(arg.data());
  argv.push_back(nullptr);

  std::vector<std::string> env_strings;
  for (char** e = environ; *e != nullptr; ++e) {
    const std::string entry = *e;
    if (!env.contains(entry.substr(0, entry.find('=')))) env_strings.push_back(entry);
  }
  for (const auto& [name, value] : env) env_strings.push_back(name + "=" + value);
  std::vector<char*> envp;
  for (std::string& entry : env_strings) envp.push_back(entry.data());
  envp.push_back(nullptr);

  const int out_fd = open(out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const int err_fd = err_path == out_path
                         ? out_fd
                         : open(err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0 || err_fd < 0) {
    return absl::InternalError(absl::StrFormat("cannot create %s: errno %d", err_path, errno));
  }
  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid == 0) {
    // A test that crashes takes its servers with it.
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent) _exit(127);
    if (dup2(out_fd, STDOUT_FILENO) < 0 || dup2(err_fd, STDERR_FILENO) < 0) _exit(127);
    execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  close(out_fd);
  if (err_fd != out_fd) close(err_fd);
  if (pid < 0) return absl::InternalError(absl::StrFormat("fork failed: errno %d", errno));
  return pid;
}

ExitStatus Decode(int status) {
  ExitStatus exit;
  exit.exited = WIFEXITED(status);
  if (exit.exited) exit.code = WEXITSTATUS(status);
  if (WIFSIGNALED(status)) exit.signal = WTERMSIG(status);
  return exit;
}

// Polls for the end of `pid` for at most `timeout`; then SIGKILL.
ExitStatus WaitFor(pid_t pid, absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  int status = 0;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) return Decode(status);
    if (done < 0 && errno != EINTR) return ExitStatus();
    if (absl::Now() >= deadline) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  kill(pid, SIGKILL);
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  ExitStatus exit = Decode(status);
  exit.timed_out = true;
  return exit;
}

std::vector<std::string> Hosts(int count) {
  std::vector<std::string> hosts;
  for (int i = 0; i < count; ++i) hosts.push_back(absl::StrFormat("127.0.0.1:%d", FreePort()));
  return hosts;
}

}  // namespace

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Spawn(
    const std::vector<std::string>& args, const std::map<std::string, std::string>& env) {
  std::string dir = MakeTempDir();
  const std::string log = dir + "/log";
  absl::StatusOr<pid_t> pid = SpawnChild(args, env, log, log);
  if (!pid.ok()) {
    std::filesystem::remove_all(dir);
    return pid.status();
  }
  return std::unique_ptr<ServerProcess>(new ServerProcess(*pid, std::move(dir)));
}

absl::StatusOr<std::unique_ptr<ServerProcess>> ServerProcess::Start(
    const std::vector<std::string>& args, const std::map<std::string, std::string>& env,
    absl::Duration timeout) {
  std::vector<std::string> server_args = {"server"};
  server_args.insert(server_args.end(), args.begin(), args.end());
  absl::StatusOr<std::unique_ptr<ServerProcess>> process = Spawn(server_args, env);
  if (!process.ok()) return process.status();
  if (absl::Status serving = (*process)->WaitServing(timeout); !serving.ok()) return serving;
  return process;
}

absl::Status ServerProcess::WaitServing(absl::Duration timeout) {
  const absl::Time deadline = absl::Now() + timeout;
  while (true) {
    if (Log().find(kServing) != std::string::npos) return absl::OkStatus();
    if (!Running()) {
      return absl::FailedPreconditionError(
          absl::StrFormat("rill server exited (code %d, signal %d) before serving:\n%s", exit_.code,
                          exit_.signal, Log()));
    }
    if (absl::Now() >= deadline) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "rill server did not serve within %s:\n%s", absl::FormatDuration(timeout), Log()));
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
}

ServerProcess::~ServerProcess() {
  // SIGTERM first: a server stopped that way removes its ipc socket.
  if (!reaped_) {
    kill(pid_, SIGTERM);
    WaitExit(absl::Seconds(5));
  }
  // A server killed with SIGKILL leaves its ipc socket behind.
  const std::string log = Log();
  if (const size_t at = log.find("ipc://"); at != std::string::npos) {
    const std::filesystem::path socket = log.substr(at + 6, log.find_first_of(")\n", at) - at - 6);
    if (socket.parent_path().filename().string().starts_with("rill-rpc-")) {
      std::filesystem::remove_all(socket.parent_path());
    }
  }
  std::filesystem::remove_all(dir_);
}

std::string ServerProcess::Log() const { return ReadAll(LogPath()); }

bool ServerProcess::Running() {
  if (reaped_) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) != pid_) return true;
  reaped_ = true;
  exit_ = Decode(status);
  return false;
}

void ServerProcess::Kill(int signal) {
  if (!reaped_) kill(pid_, signal);
}

ExitStatus ServerProcess::WaitExit(absl::Duration timeout) {
  if (!reaped_) {
    exit_ = WaitFor(pid_, timeout);
    reaped_ = true;
  }
  return exit_;
}

std::string Cluster::Target(const std::string& job, int task) const {
  return "zmq://" + (job == "ps" ? ps_hosts : worker_hosts).at(task);
}

ServerProcess& Cluster::Task(const std::string& job, int task) {
  return *(job == "ps" ? ps : workers).at(task);
}

std::vector<std::string> Cluster::Flags(const std::string& job, int task) const {
  std::vector<std::string> flags;
  if (!ps_hosts.empty()) flags.push_back("--ps_hosts=" + absl::StrJoin(ps_hosts, ","));
  if (!worker_hosts.empty()) {
    flags.push_back("--worker_hosts=" + absl::StrJoin(worker_hosts, ","));
  }
  flags.push_back("--job_name=" + job);
  flags.push_back(absl::StrFormat("--task_index=%d", task));
  return flags;
}

absl::StatusOr<Cluster> StartCluster(int ps, int workers,
                                     const std::vector<std::string>& extra_args) {
  absl::Status last;
  for (int attempt = 0; attempt < 3; ++attempt) {
    Cluster cluster;
    cluster.ps_hosts = Hosts(ps);
    cluster.worker_hosts = Hosts(workers);
    std::map<std::string, std::vector<std::string>> jobs;
    if (ps > 0) jobs["ps"] = cluster.ps_hosts;
    if (workers > 0) jobs["worker"] = cluster.worker_hosts;
    absl::StatusOr<ClusterSpec> spec = ClusterSpec::FromJobs(jobs);
    if (!spec.ok()) return spec.status();
    cluster.spec = *spec;
    last = absl::OkStatus();
    for (const auto& [job, count] : {std::pair<std::string, int>{"ps", ps}, {"worker", workers}}) {
      for (int task = 0; task < count && last.ok(); ++task) {
        std::vector<std::string> args = cluster.Flags(job, task);
        args.insert(args.end(), extra_args.begin(), extra_args.end());
        absl::StatusOr<std::unique_ptr<ServerProcess>> process = ServerProcess::Start(args);
        if (!process.ok()) {
          last = process.status();
          break;
        }
        (job == "ps" ? cluster.ps : cluster.workers).push_back(*std::move(process));
      }
    }
    if (last.ok()) return cluster;
  }
  return last;
}

BoundedRun RunRill(const std::vector<std::string>& args,
                   const std::map<std::string, std::string>& env, absl::Duration timeout) {
  const std::string dir = MakeTempDir();
  BoundedRun run;
  absl::StatusOr<pid_t> pid = SpawnChild(args, env, dir + "/out", dir + "/err");
  if (!pid.ok()) {
    run.err = pid.status().ToString();
  } else {
    run.exit = WaitFor(*pid, timeout);
    run.out = ReadAll(dir + "/out");
    run.err = ReadAll(dir + "/err");
  }
  std::filesystem::remove_all(dir);
  return run;
}

}  // namespace rill::testing
