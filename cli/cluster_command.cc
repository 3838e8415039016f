// rill cluster: prints the cluster and the task this process would join,
// from the same flags and environment as `rill server` and
// distributed_mnist (the cluster flags, TF_CONFIG, Slurm or MPI), so that a
// job script can be checked before it trains. Scripts parse its output:
//   source: slurm
//   cluster: ps=node01:8888;worker=node01:8889,node02:8888
//   task: worker 1
//   cuda_visible_devices: 2,3      (only when the resolver set one)
#include <iterator>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "cli/commands.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "runtime/distributed/cluster_resolver.h"

namespace rill::cli {
namespace {

constexpr char kUsage[] =
    "usage: rill cluster [--cluster_from slurm|mpi|tf_config|flags] [--num_ps N]\n"
    "                    [--port_base P] [--coordinator HOST:PORT]\n"
    "                    [--ps_hosts=HOST:PORT[,...] --worker_hosts=HOST:PORT[,...]\n"
    "                     --job_name=ps|worker --task_index=N] [--issync=0|1]\n"
    "Prints the cluster and the task this process would join, as `rill server` and\n"
    "distributed_mnist find them: from the cluster flags, TF_CONFIG, Slurm's environment\n"
    "(srun) or MPI's (mpirun), the first that applies unless --cluster_from names one.\n"
    "  --num_ps N          Slurm and MPI: ranks 0..N-1 are the ps tasks, the rest workers (1)\n"
    "  --port_base P       Slurm: a task listens on P plus its index on its node (8888)\n"
    "  --coordinator H:P   MPI: where rank 0 serves the address exchange, which every rank\n"
    "                      joins (or RILL_COORDINATOR); every rank must run this command\n"
    "Output, one line each: source, cluster, task, and cuda_visible_devices when Slurm\n"
    "gives the task a share of its node's GPUs.\n";

constexpr const char* kClusterFlags[] = {"ps_hosts", "worker_hosts", "job_name", "task_index",
                                         "issync"};

absl::StatusOr<ClusterResolverOptions> ParseClusterArgs(const ParsedArgs& parsed) {
  if (!parsed.positional.empty()) {
    return absl::InvalidArgumentError(
        fmt::format("unexpected argument '{}'", parsed.positional[0]));
  }
  ClusterResolverOptions options;
  for (const char* name : kClusterFlags) {
    if (const auto value = parsed.Value(name)) options.flags[name] = *value;
  }
  RETURN_IF_ERROR(ApplyClusterResolverFlags(parsed.values, options));
  return options;
}

}  // namespace

int RunClusterCommand(const std::vector<std::string>& args) {
  std::set<std::string> names(std::begin(kClusterFlags), std::end(kClusterFlags));
  names.insert(std::begin(kClusterResolverFlags), std::end(kClusterResolverFlags));
  const absl::StatusOr<ParsedArgs> parsed = ParseArgs(args, names, {});
  if (parsed.ok() && parsed->help) return PrintHelp(kUsage);
  const absl::StatusOr<ClusterResolverOptions> options =
      parsed.ok() ? ParseClusterArgs(*parsed)
                  : absl::StatusOr<ClusterResolverOptions>(parsed.status());
  if (!options.ok()) return PrintUsageError("rill cluster", options.status(), kUsage);
  const absl::StatusOr<ResolvedCluster> resolved = ResolveCluster(*options);
  if (!resolved.ok()) {
    fmt::print(stderr, "rill cluster: {}\n", OneLine(std::string(resolved.status().message())));
    return absl::IsInvalidArgument(resolved.status()) ? 2 : 1;
  }
  fmt::print("source: {}\n", ClusterSourceName(resolved->source));
  fmt::print("cluster: {}\n", resolved->config.cluster.ToString());
  fmt::print("task: {} {}\n", resolved->config.task.job, resolved->config.task.index);
  if (resolved->cuda_visible_devices) {
    fmt::print("cuda_visible_devices: {}\n", *resolved->cuda_visible_devices);
  }
  return 0;
}

}  // namespace rill::cli
