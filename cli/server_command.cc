// rill server: runs one task of a cluster until SIGTERM or SIGINT. The
// cluster and the task come from the seed scripts' flags or TF_CONFIG.
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "runtime/cluster_spec.h"
#include "runtime/server.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill server --ps_hosts=HOST:PORT[,...] --worker_hosts=HOST:PORT[,...]\n"
    "                   --job_name=ps|worker --task_index=N [--issync=0|1] [--bind HOST[:PORT]]\n"
    "                   [--device_count CPU=N[,GPU=N]] [--max_tensor_bytes N] [--no-ipc]\n"
    "                   [--curve_keys DIR]\n"
    "       rill server [--bind HOST[:PORT]] [--device_count ...] [--max_tensor_bytes N]\n"
    "                   [--no-ipc] [--curve_keys DIR]   (cluster and task from TF_CONFIG)\n"
    "--curve_keys DIR: a key directory from `rill keygen`; only holders of its authorized keys\n"
    "                  get in, and everything is encrypted (TF_CONFIG: \"curve_keys\": DIR)\n";

absl::StatusOr<ServerOptions> ParseServerFlags(const std::vector<std::string>& args) {
  ASSIGN_OR_RETURN(const ParsedArgs parsed,
                   ParseArgs(args,
                             {"ps_hosts", "worker_hosts", "job_name", "task_index", "issync",
                              "bind", "device_count", "curve_keys", "max_tensor_bytes"},
                             {"no-ipc"}));
  if (!parsed.positional.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("unexpected argument '{}'", parsed.positional[0]));
  }
  ServerOptions options;
  std::map<std::string, std::string> cluster_flags;
  for (const auto& [name, value] : parsed.values) {
    if (name != "bind" && name != "device_count" && name != "curve_keys" &&
        name != "max_tensor_bytes") {
      cluster_flags[name] = value;
    }
  }
  if (!cluster_flags.empty()) {
    ASSIGN_OR_RETURN(options.config, ServerConfigFromFlags(cluster_flags));
  } else if (const char* tf_config = std::getenv("TF_CONFIG"); tf_config != nullptr) {
    ASSIGN_OR_RETURN(options.config, ServerConfigFromTfConfig(tf_config));
  } else {
    return absl::InvalidArgumentError(
        "no cluster: pass --ps_hosts/--worker_hosts/--job_name/--task_index or set TF_CONFIG");
  }
  if (const auto keys = parsed.Value("curve_keys")) {
    if (keys->empty()) return absl::InvalidArgumentError("--curve_keys: empty key directory");
    options.config.curve_keys = *keys;
  }
  options.bind = parsed.Value("bind").value_or("");
  if (const auto count = parsed.Value("device_count")) {
    ASSIGN_OR_RETURN(options.device_count, ParseDeviceCountFlag(*count));
  }
  if (const auto bytes = parsed.Value("max_tensor_bytes")) {
    uint64_t value = 0;
    if (!absl::SimpleAtoi(*bytes, &value) || value == 0) {
      return absl::InvalidArgumentError(
          fmt::format("--max_tensor_bytes must be a positive number of bytes, got '{}'", *bytes));
    }
    options.max_tensor_bytes = value;
  }
  options.bind_ipc = !parsed.Has("no-ipc");
  return options;
}

}  // namespace

int RunServerCommand(const std::vector<std::string>& args) {
  absl::StatusOr<ServerOptions> options = ParseServerFlags(args);
  if (!options.ok()) {
    fmt::print(stderr, "rill server: {}\n{}", OneLine(std::string(options.status().message())),
               kUsage);
    return 2;
  }
  // Blocked before any thread starts, so that the signals reach the wait
  // below.
  BlockStopSignals();
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(*options);
  if (!server.ok()) {
    fmt::print(stderr, "rill server: {}\n", OneLine(std::string(server.status().message())));
    return 1;
  }
  const int signal = WaitForStopSignal();
  fmt::print(stderr, "rill server: {} received, stopping\n",
             signal == SIGINT ? "SIGINT" : "SIGTERM");
  (*server)->Stop();
  server->reset();
  return 0;
}

}  // namespace rill::cli
