// rill server: runs one task of a cluster until SIGTERM or SIGINT. The
// cluster and the task come from the seed scripts' flags, TF_CONFIG, or
// the environment of srun or mpirun (ResolveCluster).
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "cli/commands.h"
#include "cli/device_count_flag.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "runtime/distributed/cluster_resolver.h"
#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/server.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill server --ps_hosts=HOST:PORT[,...] --worker_hosts=HOST:PORT[,...]\n"
    "                   --job_name=ps|worker --task_index=N [--issync=0|1] [--bind HOST[:PORT]]\n"
    "                   [--device_count CPU=N[,GPU=N]] [--max_tensor_bytes N] [--no_ipc]\n"
    "                   [--no_shm] [--curve_keys DIR | --insecure]\n"
    "       rill server [--bind HOST[:PORT]] [--device_count ...] [--max_tensor_bytes N]\n"
    "                   [--no_ipc] [--no_shm] [--curve_keys DIR | --insecure]   (cluster and\n"
    "                   task from TF_CONFIG)\n"
    "       rill server --cluster_from slurm|mpi [--num_ps N] [--port_base P]\n"
    "                   [--coordinator HOST:PORT] [--issync=0|1] [--bind ...] ...\n"
    "--cluster_from: where the cluster comes from (found in this order when not named: the\n"
    "                flags, TF_CONFIG, Slurm, MPI); under srun or mpirun, ranks 0..N-1 are\n"
    "                the ps tasks (--num_ps, 1) and the rest workers; Slurm's tasks listen on\n"
    "                --port_base (8888) plus their index on their node; MPI's ranks exchange\n"
    "                addresses through rank 0 at --coordinator (or RILL_COORDINATOR)\n"
    "--no_ipc: peers on this machine use tcp too; --no_shm: tensors sent to them go through\n"
    "          their ipc socket instead of this task's shared memory\n"
    "--curve_keys DIR: a key directory from `rill keygen`; only holders of its authorized keys\n"
    "                  get in, and everything is encrypted (TF_CONFIG: \"curve_keys\": DIR)\n"
    "--insecure: the network is trusted. Without keys a server binds only loopback\n"
    "            addresses unless told this: anyone who reaches its port can read and\n"
    "            change every variable\n"
    "Limits on what peers can make the server hold (each is logged when it trips):\n"
    "  --max_calls_per_connection N   calls whose replies are not written yet (4096)\n"
    "  --max_bytes_per_connection N   bytes one connection makes it hold: the message it\n"
    "                                 sends, its calls' requests and replies (1 GiB, or\n"
    "                                 --max_tensor_bytes and 64 MiB when that is less)\n"
    "  --max_buffered_bytes N         bytes held for all connections (a quarter of memory)\n"
    "  --max_connections N            connections open at once (1024); a new one takes the\n"
    "                                 place of one idle past --connection_idle_timeout\n"
    "  --connection_idle_timeout SECS a handshake or message stalled this long is dropped, and\n"
    "                                 a connection whose replies are not read this long (10)\n"
    "  --handshake_timeout SECS       a handshake takes at most this long in all (10)\n"
    "  --max_tensors_per_message N    tensors one message may declare (65536)\n"
    "  --max_tensor_dims N            dimensions of one of its shapes (254)\n"
    "  --max_output_bytes N           replies queued for a connection past which its\n"
    "                                 requests wait until it reads (4 MiB)\n"
    "  --handshakes_per_source N      CURVE handshakes one address may start a second (100)\n"
    "  --max_pending_steps N          steps pushed to that have not begun here (1024)\n"
    "  --max_pending_bytes N          and their tensors' bytes (4 GiB)\n"
    "  --pending_step_timeout SECS    after which those steps are dropped (60)\n"
    "  --max_sessions N               master sessions open at once (1024)\n"
    "  --session_idle_timeout SECS    after which an unused session closes; 0: never (600)\n"
    "  --max_graphs N                 graphs registered on this task's worker (4096)\n"
    "  --max_graph_bytes N            and their bytes (4 GiB)\n"
    "  --graph_idle_timeout SECS      after which a graph no step runs is forgotten; 0: never\n"
    "                                 (600; masters register theirs again after half of it)\n";

absl::Status ParseLimitFlags(const ParsedArgs& parsed, ServerLimits& limits) {
  const auto count = [&](const char* name, auto& field) -> absl::Status {
    const std::optional<std::string> text = parsed.Value(name);
    if (!text) return absl::OkStatus();
    using Field = std::remove_reference_t<decltype(field)>;
    int64_t value = 0;
    if (!absl::SimpleAtoi(*text, &value) || value <= 0 ||
        value > std::numeric_limits<Field>::max()) {
      return absl::InvalidArgumentError(fmt::format("--{} must be a number in 1..{}, got '{}'",
                                                    name, std::numeric_limits<Field>::max(),
                                                    *text));
    }
    field = static_cast<Field>(value);
    return absl::OkStatus();
  };
  const auto seconds = [&](const char* name, absl::Duration& field,
                           bool zero_allowed) -> absl::Status {
    const std::optional<std::string> text = parsed.Value(name);
    if (!text) return absl::OkStatus();
    double value = 0;
    if (!absl::SimpleAtod(*text, &value) || !(value >= 0) || value > 1e9 ||
        (value == 0 && !zero_allowed)) {
      return absl::InvalidArgumentError(
          fmt::format("--{} must be a {} number of seconds, got '{}'", name,
                      zero_allowed ? "non-negative" : "positive", *text));
    }
    field = absl::Seconds(value);
    return absl::OkStatus();
  };
  RETURN_IF_ERROR(count("max_calls_per_connection", limits.connections.max_calls_per_connection));
  RETURN_IF_ERROR(count("max_bytes_per_connection", limits.connections.max_bytes_per_connection));
  RETURN_IF_ERROR(count("max_buffered_bytes", limits.connections.max_buffered_bytes));
  RETURN_IF_ERROR(count("max_connections", limits.connections.max_connections));
  RETURN_IF_ERROR(seconds("connection_idle_timeout", limits.connections.idle_timeout, false));
  RETURN_IF_ERROR(seconds("handshake_timeout", limits.connections.handshake_timeout, false));
  RETURN_IF_ERROR(count("max_tensors_per_message", limits.connections.max_tensors_per_message));
  RETURN_IF_ERROR(count("max_tensor_dims", limits.connections.max_tensor_dims));
  RETURN_IF_ERROR(count("max_output_bytes", limits.connections.max_output_bytes));
  RETURN_IF_ERROR(count("handshakes_per_source", limits.connections.handshakes_per_source));
  RETURN_IF_ERROR(count("max_pending_steps", limits.pending_pushes.max_steps));
  RETURN_IF_ERROR(count("max_pending_bytes", limits.pending_pushes.max_bytes));
  RETURN_IF_ERROR(seconds("pending_step_timeout", limits.pending_pushes.deadline, false));
  RETURN_IF_ERROR(count("max_sessions", limits.max_sessions));
  RETURN_IF_ERROR(seconds("session_idle_timeout", limits.session_idle_timeout, true));
  RETURN_IF_ERROR(count("max_graphs", limits.graphs.max_graphs));
  RETURN_IF_ERROR(count("max_graph_bytes", limits.graphs.max_bytes));
  RETURN_IF_ERROR(seconds("graph_idle_timeout", limits.graphs.idle_timeout, true));
  if (limits.graphs.idle_timeout == absl::ZeroDuration()) {
    limits.graphs.idle_timeout = absl::InfiniteDuration();
  }
  return absl::OkStatus();
}

constexpr const char* kLimitFlags[] = {"max_calls_per_connection",
                                       "max_bytes_per_connection",
                                       "max_buffered_bytes",
                                       "max_connections",
                                       "connection_idle_timeout",
                                       "handshake_timeout",
                                       "max_tensors_per_message",
                                       "max_tensor_dims",
                                       "max_output_bytes",
                                       "handshakes_per_source",
                                       "max_pending_steps",
                                       "max_pending_bytes",
                                       "pending_step_timeout",
                                       "max_sessions",
                                       "session_idle_timeout",
                                       "max_graphs",
                                       "max_graph_bytes",
                                       "graph_idle_timeout"};

absl::StatusOr<ParsedArgs> ParseServerArgs(const std::vector<std::string>& args) {
  std::set<std::string> flags = {"ps_hosts",     "worker_hosts", "job_name",
                                 "task_index",   "issync",       "bind",
                                 "device_count", "curve_keys",   "max_tensor_bytes"};
  flags.insert(std::begin(kLimitFlags), std::end(kLimitFlags));
  flags.insert(std::begin(kClusterResolverFlags), std::end(kClusterResolverFlags));
  return ParseArgs(args, flags, {"no_ipc", "no_shm", "insecure"});
}

absl::StatusOr<ServerOptions> ParseServerFlags(const ParsedArgs& parsed) {
  if (!parsed.positional.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("unexpected argument '{}'", parsed.positional[0]));
  }
  ServerOptions options;
  ClusterResolverOptions resolver;
  for (const auto& [name, value] : parsed.values) {
    // curve_keys too: an MPI job's address exchange speaks CURVE with them.
    if (name == "ps_hosts" || name == "worker_hosts" || name == "job_name" ||
        name == "task_index" || name == "issync" || name == "curve_keys") {
      resolver.flags[name] = value;
    }
  }
  RETURN_IF_ERROR(ApplyClusterResolverFlags(parsed.values, resolver));
  ASSIGN_OR_RETURN(ResolvedCluster resolved, ResolveCluster(resolver));
  options.config = std::move(resolved.config);
  // Set before Server::Create makes the devices: CUDA reads it once.
  if (resolved.cuda_visible_devices) {
    setenv("CUDA_VISIBLE_DEVICES", resolved.cuda_visible_devices->c_str(), 1);
  }
  if (const auto keys = parsed.Value("curve_keys")) {
    if (keys->empty()) return absl::InvalidArgumentError("--curve_keys: empty key directory");
    options.config.curve_keys = *keys;
  }
  options.config.insecure = options.config.insecure || parsed.Has("insecure");
  options.bind = parsed.Value("bind").value_or("");
  if (const auto count = parsed.Value("device_count")) {
    ASSIGN_OR_RETURN(options.device_count, ParseDeviceCountFlag(*count));
  }
  ASSIGN_OR_RETURN(const std::optional<size_t> max_tensor_bytes, ParseMaxTensorBytesFlag(parsed));
  options.max_tensor_bytes = max_tensor_bytes.value_or(0);
  options.bind_ipc = !parsed.Has("no_ipc");
  options.shared_memory = !parsed.Has("no_shm");
  RETURN_IF_ERROR(ParseLimitFlags(parsed, options.limits));
  return options;
}

}  // namespace

int RunServerCommand(const std::vector<std::string>& args) {
  const absl::StatusOr<ParsedArgs> parsed = ParseServerArgs(args);
  if (parsed.ok() && parsed->help) return PrintHelp(kUsage);
  absl::StatusOr<ServerOptions> options =
      parsed.ok() ? ParseServerFlags(*parsed) : absl::StatusOr<ServerOptions>(parsed.status());
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
