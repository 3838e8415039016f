#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "cli/commands.h"
#include "cli/flags.h"

namespace {

// The commands in the order `rill help` shows them.
constexpr struct {
  const char *name;
  const char *purpose;
} kCommands[] = {
    {"run", "run a graph (GraphDef, .meta, SavedModel) here or on a cluster"},
    {"place", "show where a graph's nodes would run on a cluster, without one"},
    {"graph", "validate and summarize a graph, or convert it between text and binary"},
    {"server", "run one task of a cluster (a master and a worker)"},
    {"cluster",
     "print the cluster and task this process would join (flags, TF_CONFIG, Slurm, MPI)"},
    {"launch", "start a job's ps and worker tasks on this machine, restarting those that fail"},
    {"checkpoint", "list or print the tensors of a V2 checkpoint"},
    {"keygen", "write a CURVE key pair for a cluster or a client"},
    {"report", "write an HTML page of a log directory's summaries, checkpoints and trace"},
    {"devices", "list the devices this build can run on"},
    {"help", "this message, or a command's usage"},
};

// The short form, for a usage error: the commands and what they do.
std::string Overview() {
  std::string text = "usage: rill <command> [args]   (rill help COMMAND, or COMMAND --help)\n\n";
  for (const auto &command : kCommands) {
    text += "  " + std::string(command.name) + std::string(12 - std::strlen(command.name), ' ') +
            command.purpose + "\n";
  }
  return text;
}

using Command = int (*)(const std::vector<std::string> &);

Command FindCommand(std::string_view name) {
  if (name == "graph") return rill::cli::RunGraphCommand;
  if (name == "devices") return rill::cli::RunDevicesCommand;
  if (name == "run") return rill::cli::RunRunCommand;
  if (name == "place") return rill::cli::RunPlaceCommand;
  if (name == "server") return rill::cli::RunServerCommand;
  if (name == "cluster") return rill::cli::RunClusterCommand;
  if (name == "launch") return rill::cli::RunLaunchCommand;
  if (name == "checkpoint") return rill::cli::RunCheckpointCommand;
  if (name == "keygen") return rill::cli::RunKeygenCommand;
  if (name == "report") return rill::cli::RunReportCommand;
  return nullptr;
}

int UnknownCommand(const std::string &name) {
  std::fprintf(stderr, "rill: unknown command '%s'\n\n%s", name.c_str(), Overview().c_str());
  return 2;
}

// The overview, then every command's own usage (what COMMAND --help
// prints), so that no flag is missing from it.
int PrintFullHelp() {
  std::fputs(Overview().c_str(), stdout);
  for (const auto &command : kCommands) {
    if (const Command run = FindCommand(command.name)) {
      std::fputs("\n", stdout);
      std::fflush(stdout);
      run({"--help"});
    }
  }
  return 0;
}

// `rill help [COMMAND]`.
int RunHelpCommand(const std::vector<std::string> &args) {
  const absl::StatusOr<rill::cli::ParsedArgs> parsed = rill::cli::ParseArgs(args, {}, {});
  if (!parsed.ok()) return rill::cli::PrintUsageError("rill help", parsed.status(), Overview());
  if (parsed->help || parsed->positional.empty()) return PrintFullHelp();
  if (parsed->positional.size() > 1) {
    return rill::cli::PrintUsageError(
        "rill help",
        absl::InvalidArgumentError("unexpected argument '" + parsed->positional[1] + "'"),
        Overview());
  }
  const Command command = FindCommand(parsed->positional[0]);
  if (command == nullptr) return UnknownCommand(parsed->positional[0]);
  return command({"--help"});
}

}  // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fputs(Overview().c_str(), stderr);
    return 2;
  }
  // Debian's abseil is built with Mutex deadlock detection on, which costs
  // every lock a graph update (a fifth of a small local step). The tests
  // keep it; the shipped binary does not pay for it.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  const std::string name = argv[1];
  const std::vector<std::string> args(argv + 2, argv + argc);
  if (const Command command = FindCommand(name)) return command(args);
  if (name == "help") return RunHelpCommand(args);
  if (name == "--help" || name == "-h") return PrintFullHelp();
  return UnknownCommand(name);
}
