// rill launch: starts a between-graph job's ps and worker tasks on this
// machine, each with the cluster and its task in TF_CONFIG, and supervises
// them (cli/task_launcher.h) until the job ends with its chief.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "cli/task_launcher.h"
#include "cli/task_process.h"
#include "fmt/core.h"
#include "graph/status_macros.h"

extern char** environ;

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill launch --ps N --workers M [--restart on-failure|never] [--max_restarts K]\n"
    "                   [--host ADDRESS] [--grace_secs S] -- PROGRAM [ARGS...]\n"
    "Starts a job's N ps tasks and M workers on this machine, each running PROGRAM ARGS... with\n"
    "the cluster and its task in TF_CONFIG, on free ports of ADDRESS (a numeric IP address;\n"
    "127.0.0.1). Worker 0 is the chief. Each line a task writes goes to the launcher's stdout or\n"
    "stderr as the task wrote it, prefixed with the task ([worker 1] ...); the launcher's own\n"
    "lines ([launch] ...) go to stderr. A line redrawn with \\r shows as its last drawing; output\n"
    "that is not text (NUL, invalid UTF-8) comes through byte for byte, prefixed at each line.\n"
    "--restart on-failure (the default): a task that exits non-zero or is killed starts again\n"
    "  on the same address after 1 s, 2 s, 4 s ... (at most 30 s), up to --max_restarts (3)\n"
    "  times; never: it does not.\n"
    "The job ends with the chief. When it finishes, the other workers get --grace_secs (30) to\n"
    "finish, then what still runs is stopped (SIGTERM, SIGKILL 5 s later) and the exit code is\n"
    "0. When it fails for good, every task is stopped and the exit code is the chief's (128 +\n"
    "signal when killed). Another worker that fails for good does not end the job. Ctrl-C or\n"
    "SIGTERM stops every task; the exit code is then 130 or 143. What a task starts in its\n"
    "process group ends with it, even when the launcher is killed outright (SIGKILL).\n";

struct LaunchFlags {
  int ps = 0;
  int workers = 0;
  std::string host = "127.0.0.1";
  LaunchOptions options;
  std::vector<std::string> program;  // PROGRAM ARGS...
};

// Each task takes two pipes and a port; more than this many on one machine
// is a mistake rather than a job.
constexpr int kMaxTasksPerJob = 256;

absl::StatusOr<int> IntFlag(const ParsedArgs& parsed, const std::string& name, int min, int max,
                            std::optional<int> default_value, const char* what) {
  const std::optional<std::string> text = parsed.Value(name);
  if (!text) {
    if (default_value) return *default_value;
    return absl::InvalidArgumentError(absl::StrCat("--", name, " is required (", what, ")"));
  }
  int value = 0;
  if (!absl::SimpleAtoi(*text, &value) || value < min || value > max) {
    return absl::InvalidArgumentError(absl::StrCat("--", name, " must be a number in ", min, "..",
                                                   max, " (", what, "), got '", *text, "'"));
  }
  return value;
}

// Options before "--", PROGRAM and its arguments after it; `help` is set
// for a --help among the options (one after "--" is the program's).
absl::StatusOr<LaunchFlags> ParseLaunchFlags(const std::vector<std::string>& args, bool& help) {
  const auto dashes = std::find(args.begin(), args.end(), "--");
  const std::vector<std::string> options(args.begin(), dashes);
  ASSIGN_OR_RETURN(
      const ParsedArgs parsed,
      ParseArgs(options, {"ps", "workers", "restart", "max_restarts", "host", "grace_secs"}, {}));
  help = parsed.help;
  if (help) return LaunchFlags();
  if (!parsed.positional.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("unexpected argument '", parsed.positional[0],
                                                   "' (the program goes after --)"));
  }
  if (dashes == args.end()) {
    return absl::InvalidArgumentError(
        "no program: expected -- PROGRAM [ARGS...] after the options");
  }
  LaunchFlags flags;
  flags.program.assign(dashes + 1, args.end());
  if (flags.program.empty()) return absl::InvalidArgumentError("no PROGRAM after --");
  ASSIGN_OR_RETURN(flags.ps, IntFlag(parsed, "ps", 0, kMaxTasksPerJob, std::nullopt,
                                     "the number of ps tasks, 0 or more"));
  ASSIGN_OR_RETURN(flags.workers, IntFlag(parsed, "workers", 1, kMaxTasksPerJob, std::nullopt,
                                          "the number of workers, the chief included"));
  if (flags.ps + flags.workers > kMaxTasksPerJob) {
    return absl::InvalidArgumentError(absl::StrCat("--ps ", flags.ps, " and --workers ",
                                                   flags.workers, ": at most ", kMaxTasksPerJob,
                                                   " tasks in all"));
  }
  ASSIGN_OR_RETURN(flags.options.max_restarts,
                   IntFlag(parsed, "max_restarts", 0, 1000000, 3, "restarts per task"));
  const std::string restart = parsed.Value("restart").value_or("on-failure");
  if (restart == "on-failure") {
    flags.options.restart = RestartPolicy::kOnFailure;
  } else if (restart == "never") {
    flags.options.restart = RestartPolicy::kNever;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--restart must be on-failure or never, got '", restart, "'"));
  }
  if (const std::optional<std::string> text = parsed.Value("grace_secs")) {
    double seconds = 0;
    if (!absl::SimpleAtod(*text, &seconds) || !std::isfinite(seconds) || seconds < 0 ||
        seconds > 1e7) {
      return absl::InvalidArgumentError(
          absl::StrCat("--grace_secs must be a number of seconds, 0 or more, got '", *text, "'"));
    }
    flags.options.grace = absl::Seconds(seconds);
  }
  flags.host = parsed.Value("host").value_or(flags.host);
  return flags;
}

// A numeric address to bind to.
struct Host {
  sockaddr_storage address = {};
  socklen_t length = 0;
  bool ipv6 = false;
};

absl::StatusOr<Host> ParseHost(const std::string& text) {
  Host host;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&host.address);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&host.address);
  if (inet_pton(AF_INET, text.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    host.length = sizeof(sockaddr_in);
  } else if (inet_pton(AF_INET6, text.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    host.length = sizeof(sockaddr_in6);
    host.ipv6 = true;
  } else {
    return absl::InvalidArgumentError(
        absl::StrCat("--host '", text, "' is not a numeric IPv4 or IPv6 address"));
  }
  return host;
}

// `count` distinct ports of `host` that were free a moment ago: each is
// bound to port 0 (the kernel picks) and all are held open until the last
// is picked, so that none repeats. They are closed before the tasks start,
// since a task must bind its own; another process could take one in
// between, but the kernel hands out ephemeral ports in turn rather than
// reusing one just freed, and a task that fails to bind would be restarted,
// so the small race is not worth a handover of open sockets.
absl::StatusOr<std::vector<int>> PickFreePorts(const Host& host, const std::string& host_text,
                                               int count) {
  std::vector<int> sockets;
  std::vector<int> ports;
  absl::Status status;
  for (int i = 0; i < count && status.ok(); ++i) {
    const int fd = socket(host.address.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      status = absl::InternalError(absl::StrCat("socket: ", std::strerror(errno)));
      break;
    }
    sockets.push_back(fd);
    sockaddr_storage bound = host.address;
    socklen_t length = host.length;
    if (bind(fd, reinterpret_cast<const sockaddr*>(&host.address), host.length) != 0 ||
        getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &length) != 0) {
      status = absl::FailedPreconditionError(
          absl::StrCat("--host ", host_text, ": cannot bind a port: ", std::strerror(errno)));
      break;
    }
    ports.push_back(ntohs(host.ipv6 ? reinterpret_cast<const sockaddr_in6*>(&bound)->sin6_port
                                    : reinterpret_cast<const sockaddr_in*>(&bound)->sin_port));
  }
  for (const int fd : sockets) close(fd);
  if (!status.ok()) return status;
  return ports;
}

// `text` as a JSON string, quoted and escaped.
std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (const char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += fmt::format("\\u{:04x}", static_cast<int>(c));
    } else {
      out += c;
    }
  }
  return out + "\"";
}

std::string JsonList(const std::vector<std::string>& items) {
  std::vector<std::string> quoted;
  for (const std::string& item : items) quoted.push_back(JsonString(item));
  return absl::StrCat("[", absl::StrJoin(quoted, ", "), "]");
}

// TF_CONFIG as TensorFlow writes it; a job without tasks is left out, as
// a cluster has no empty jobs.
std::string TfConfig(const std::vector<std::string>& ps, const std::vector<std::string>& workers,
                     std::string_view type, int index) {
  std::vector<std::string> jobs;
  if (!ps.empty()) jobs.push_back(absl::StrCat("\"ps\": ", JsonList(ps)));
  jobs.push_back(absl::StrCat("\"worker\": ", JsonList(workers)));
  return absl::StrCat("{\"cluster\": {", absl::StrJoin(jobs, ", "),
                      "}, \"task\": {\"type\": ", JsonString(type), ", \"index\": ", index, "}}");
}

// This process's environment with TF_CONFIG set to `tf_config`.
std::vector<std::string> TaskEnvironment(const std::string& tf_config) {
  std::vector<std::string> env;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    if (!std::string_view(*entry).starts_with("TF_CONFIG=")) env.emplace_back(*entry);
  }
  env.push_back("TF_CONFIG=" + tf_config);
  return env;
}

int Fail(const absl::Status& status) {
  fmt::print(stderr, "rill launch: {}\n", OneLine(std::string(status.message())));
  return 1;
}

}  // namespace

int RunLaunchCommand(const std::vector<std::string>& args) {
  bool help = false;
  const absl::StatusOr<LaunchFlags> flags = ParseLaunchFlags(args, help);
  if (help) return PrintHelp(kUsage);
  if (!flags.ok()) return PrintUsageError("rill launch", flags.status(), kUsage);
  const absl::StatusOr<Host> host = ParseHost(flags->host);
  if (!host.ok()) return PrintUsageError("rill launch", host.status(), kUsage);
  const absl::StatusOr<std::string> program = FindExecutable(flags->program[0]);
  if (!program.ok()) {
    return Fail(absl::Status(program.status().code(),
                             absl::StrCat("PROGRAM ", program.status().message())));
  }
  const absl::StatusOr<std::vector<int>> ports =
      PickFreePorts(*host, flags->host, flags->ps + flags->workers);
  if (!ports.ok()) return Fail(ports.status());

  const std::string address_host = host->ipv6 ? absl::StrCat("[", flags->host, "]") : flags->host;
  std::vector<std::string> ps, workers;
  for (int i = 0; i < flags->ps + flags->workers; ++i) {
    (i < flags->ps ? ps : workers).push_back(absl::StrCat(address_host, ":", (*ports)[i]));
  }
  std::vector<std::string> argv = flags->program;
  argv[0] = *program;
  // The ps tasks first, so that they are up when the workers look for them.
  std::vector<TaskSpec> tasks;
  for (int i = 0; i < flags->ps; ++i) {
    tasks.push_back({.name = absl::StrCat("ps ", i),
                     .role = TaskRole::kService,
                     .argv = argv,
                     .env = TaskEnvironment(TfConfig(ps, workers, "ps", i))});
  }
  for (int i = 0; i < flags->workers; ++i) {
    tasks.push_back({.name = absl::StrCat("worker ", i),
                     .role = i == 0 ? TaskRole::kChief : TaskRole::kWorker,
                     .argv = argv,
                     .env = TaskEnvironment(TfConfig(ps, workers, "worker", i))});
  }
  std::string cluster = absl::StrCat("worker=", absl::StrJoin(workers, ","));
  if (!ps.empty()) cluster = absl::StrCat("ps=", absl::StrJoin(ps, ","), ";", cluster);
  fmt::print(stderr, "[launch] cluster {} (worker 0 is the chief)\n", cluster);
  std::fflush(stderr);
  const absl::StatusOr<int> exit_code = RunTasks(tasks, flags->options);
  if (!exit_code.ok()) return Fail(exit_code.status());
  return *exit_code;
}

}  // namespace rill::cli
