#include "runtime/distributed/cluster_resolver.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <numeric>
#include <utility>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "graph/status_macros.h"
#include "runtime/distributed/address_exchange.h"
#include "runtime/distributed/slurm_env.h"
#include "runtime/distributed/tf_config.h"
#include "transport/curve.h"

namespace rill {
namespace {

// The user's secret for the address exchange, and OpenMPI's per-job key.
constexpr char kExchangeTokenVar[] = "RILL_EXCHANGE_TOKEN";
constexpr char kOpenMpiJobKeyVar[] = "OMPI_MCA_orte_precondition_transports";

// The flags that name a cluster; "issync" and "curve_keys" only qualify one.
constexpr const char* kClusterFlags[] = {"ps_hosts", "worker_hosts", "job_name", "task_index"};

constexpr std::pair<ClusterSource, const char*> kSourceNames[] = {
    {ClusterSource::kFlags, "flags"},
    {ClusterSource::kTfConfig, "tf_config"},
    {ClusterSource::kSlurm, "slurm"},
    {ClusterSource::kMpi, "mpi"}};

bool HasClusterFlag(const std::map<std::string, std::string>& flags) {
  for (const char* name : kClusterFlags) {
    if (flags.count(name) > 0) return true;
  }
  return false;
}

// The first of `names` that is set, and its value.
std::optional<std::pair<std::string, std::string>> FirstSet(
    const EnvLookup& env, std::initializer_list<const char*> names) {
  for (const char* name : names) {
    if (std::optional<std::string> value = env(name)) return std::pair(name, *std::move(value));
  }
  return std::nullopt;
}

absl::StatusOr<int> EnvInt(const EnvLookup& env, const std::string& name, std::string_view why) {
  const std::optional<std::string> value = env(name);
  if (!value) return absl::InvalidArgumentError(absl::StrFormat("%s is not set (%s)", name, why));
  const std::optional<int> parsed = ParseDecimalInt(*value);
  if (!parsed) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s '%s' is not a non-negative integer", name, *value));
  }
  return *parsed;
}

// Ranks 0..num_ps-1 are ps tasks 0..num_ps-1, the rest workers 0...
TaskId TaskOfRank(int rank, int num_ps) {
  return rank < num_ps ? TaskId{"ps", rank} : TaskId{"worker", rank - num_ps};
}

absl::StatusOr<ClusterSpec> SpecOfRanks(const std::vector<std::string>& addresses, int num_ps) {
  std::map<std::string, std::vector<std::string>> jobs;
  for (int rank = 0; rank < static_cast<int>(addresses.size()); ++rank) {
    jobs[TaskOfRank(rank, num_ps).job].push_back(addresses[rank]);
  }
  return ClusterSpec::FromJobs(jobs);
}

absl::Status CheckNumPs(int num_ps, int tasks, std::string_view tasks_from) {
  if (num_ps < 0 || num_ps >= tasks) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--num_ps %d leaves no worker among the %d tasks of %s", num_ps, tasks, tasks_from));
  }
  return absl::OkStatus();
}

// "issync" and "curve_keys", which qualify any source's cluster.
absl::Status ApplyTaskFlags(const std::map<std::string, std::string>& flags, ClusterSource source,
                            ServerConfig& config) {
  for (const auto& [name, value] : flags) {
    if (name == "issync") {
      if (value != "0" && value != "1" && value != "true" && value != "false") {
        return absl::InvalidArgumentError(
            absl::StrFormat("--issync: '%s' is not 0, 1, true or false", value));
      }
      config.sync_replicas = value == "1" || value == "true";
    } else if (name == "curve_keys") {
      if (value.empty()) return absl::InvalidArgumentError("--curve_keys: empty key directory");
      config.curve_keys = value;
    } else {
      return absl::InvalidArgumentError(absl::StrFormat(
          "--%s names a cluster of its own; it cannot be used with --cluster_from %s", name,
          ClusterSourceName(source)));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ResolvedCluster> ResolveSlurm(const ClusterResolverOptions& options) {
  const EnvLookup& env = options.env;
  constexpr char kWhy[] = "is this a task that srun started?";
  ASSIGN_OR_RETURN(const int rank, EnvInt(env, "SLURM_PROCID", kWhy));
  const auto ntasks_var = FirstSet(env, {"SLURM_STEP_NUM_TASKS", "SLURM_NTASKS"});
  const auto nodes_var = FirstSet(env, {"SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST"});
  const auto per_node_var = FirstSet(env, {"SLURM_STEP_TASKS_PER_NODE", "SLURM_TASKS_PER_NODE"});
  if (!ntasks_var || !nodes_var || !per_node_var) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Slurm: %s is not set (%s)",
                        !ntasks_var  ? "SLURM_STEP_NUM_TASKS or SLURM_NTASKS"
                        : !nodes_var ? "SLURM_STEP_NODELIST or SLURM_JOB_NODELIST"
                                     : "SLURM_STEP_TASKS_PER_NODE or SLURM_TASKS_PER_NODE",
                        kWhy));
  }
  ASSIGN_OR_RETURN(const int ntasks, EnvInt(env, ntasks_var->first, kWhy));
  ASSIGN_OR_RETURN(const std::vector<std::string> hosts,
                   ExpandSlurmHostList(nodes_var->second, nodes_var->first));
  ASSIGN_OR_RETURN(const std::vector<int> per_node,
                   ExpandSlurmTasksPerNode(per_node_var->second, per_node_var->first));
  if (hosts.size() != per_node.size()) {
    return absl::FailedPreconditionError(
        absl::StrFormat("Slurm: %s '%s' names %d nodes but %s '%s' gives tasks for %d",
                        nodes_var->first, nodes_var->second, hosts.size(), per_node_var->first,
                        per_node_var->second, per_node.size()));
  }
  const int64_t sum = std::accumulate(per_node.begin(), per_node.end(), int64_t{0});
  if (sum != ntasks) {
    return absl::FailedPreconditionError(
        absl::StrFormat("Slurm: %s '%s' adds up to %d tasks but %s is %d", per_node_var->first,
                        per_node_var->second, sum, ntasks_var->first, ntasks));
  }
  if (rank >= ntasks) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "Slurm: SLURM_PROCID %d is out of range for %s %d", rank, ntasks_var->first, ntasks));
  }
  RETURN_IF_ERROR(CheckNumPs(options.num_ps, ntasks, "the Slurm step"));
  const int most_per_node = *std::max_element(per_node.begin(), per_node.end());
  if (options.port_base < 1 || options.port_base + most_per_node - 1 > 65535) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "--port_base %d: the %d tasks of a node need ports %d..%d, past 65535", options.port_base,
        most_per_node, options.port_base, options.port_base + most_per_node - 1));
  }
  // Block distribution, Slurm's default: ranks fill the nodes in order.
  std::vector<std::string> addresses;
  int node = 0;
  int local = 0;
  for (size_t n = 0; n < hosts.size(); ++n) {
    for (int l = 0; l < per_node[n]; ++l) {
      if (static_cast<int>(addresses.size()) == rank) {
        node = static_cast<int>(n);
        local = l;
      }
      addresses.push_back(absl::StrCat(hosts[n], ":", options.port_base + l));
    }
  }
  // Under another distribution (srun -m cyclic) a rank would listen on
  // another node than the cluster says.
  for (const auto& [name, expected] : {std::pair("SLURM_NODEID", node), {"SLURM_LOCALID", local}}) {
    if (const std::optional<std::string> value = env(name)) {
      if (ParseDecimalInt(*value) != expected) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "Slurm: %s is '%s' but a block distribution of %s '%s' over %s '%s' puts rank %d at "
            "%d; start the step with srun --distribution=block",
            name, *value, per_node_var->first, per_node_var->second, nodes_var->first,
            nodes_var->second, rank, expected));
      }
    }
  }
  ResolvedCluster resolved;
  resolved.source = ClusterSource::kSlurm;
  ASSIGN_OR_RETURN(resolved.config.cluster, SpecOfRanks(addresses, options.num_ps));
  resolved.config.task = TaskOfRank(rank, options.num_ps);
  // CUDA_VISIBLE_DEVICES first: it numbers the GPUs as this process sees
  // them, which differs from SLURM_STEP_GPUS's numbers when Slurm confines
  // the job to its GPUs (cgroup ConstrainDevices).
  if (const auto gpus_var = FirstSet(env, {"CUDA_VISIBLE_DEVICES", "SLURM_STEP_GPUS"})) {
    ASSIGN_OR_RETURN(const std::vector<std::string> gpus,
                     SplitDeviceList(gpus_var->second, gpus_var->first));
    if (!gpus.empty()) {
      resolved.cuda_visible_devices = absl::StrJoin(GpusOfTask(gpus, per_node[node], local), ",");
    }
  }
  return resolved;
}

// What keeps strangers out of the address exchange: the cluster's CURVE
// keys when --curve_keys names them, and always a secret that every rank
// has and a stranger does not, first of
// - RILL_EXCHANGE_TOKEN, the user's own: the one to trust most;
// - the secret key of --curve_keys, which a cluster's members share;
// - the key OpenMPI's mpirun makes for each job (from /dev/urandom) and
//   hands every rank in its environment. Another user on a rank's host
//   cannot read it there, but mpirun's daemons on other hosts get it over
//   OpenMPI's own unencrypted connections, so a stranger who can watch
//   that traffic can learn it. A job id, or anything else MPI sets, is no
//   secret: mpirun numbers its jobs predictably.
// MPICH's Hydra hands its ranks no secret: there, RILL_EXCHANGE_TOKEN.
absl::Status SetExchangeAuth(const ClusterResolverOptions& options,
                             AddressExchangeOptions& exchange) {
  if (const auto keys = options.flags.find("curve_keys"); keys != options.flags.end()) {
    absl::StatusOr<CurveKeys> loaded = LoadCurveKeys(keys->second);
    if (!loaded.ok()) {
      return absl::Status(loaded.status().code(),
                          absl::StrCat("--curve_keys: ", loaded.status().message()));
    }
    exchange.curve = std::make_shared<const CurveKeys>(*std::move(loaded));
  }
  if (std::optional<std::string> token = options.env(kExchangeTokenVar)) {
    exchange.secret = *std::move(token);
    exchange.secret_source = kExchangeTokenVar;
  } else if (exchange.curve != nullptr) {
    exchange.secret = exchange.curve->secret_key;
    exchange.secret_source = "the secret key of --curve_keys";
  } else if (std::optional<std::string> job_key = options.env(kOpenMpiJobKeyVar)) {
    exchange.secret = *std::move(job_key);
    exchange.secret_source = kOpenMpiJobKeyVar;
  } else {
    return absl::InvalidArgumentError(absl::StrFormat(
        "MPI: nothing secret to authenticate the address exchange with, without which a stranger "
        "could put its own address into the cluster: set %s to the same random text for every "
        "rank (`export %s=$(openssl rand -hex 16)` before mpiexec; OpenMPI's mpirun passes it "
        "on with `-x %s`), or give the cluster's keys with --curve_keys",
        kExchangeTokenVar, kExchangeTokenVar, kExchangeTokenVar));
  }
  return absl::OkStatus();
}

absl::StatusOr<ResolvedCluster> ResolveMpi(const ClusterResolverOptions& options) {
  const EnvLookup& env = options.env;
  constexpr char kWhy[] = "is this a process that mpirun started?";
  const bool open_mpi = env("OMPI_COMM_WORLD_RANK").has_value();
  const std::string rank_var = open_mpi ? "OMPI_COMM_WORLD_RANK" : "PMI_RANK";
  const std::string size_var = open_mpi ? "OMPI_COMM_WORLD_SIZE" : "PMI_SIZE";
  if (!open_mpi && !env("PMI_RANK")) {
    return absl::InvalidArgumentError(
        absl::StrFormat("MPI: neither OMPI_COMM_WORLD_RANK nor PMI_RANK is set (%s)", kWhy));
  }
  ASSIGN_OR_RETURN(const int rank, EnvInt(env, rank_var, kWhy));
  ASSIGN_OR_RETURN(const int size, EnvInt(env, size_var, kWhy));
  if (rank >= size) {
    return absl::FailedPreconditionError(
        absl::StrFormat("MPI: %s %d is out of range for %s %d", rank_var, rank, size_var, size));
  }
  RETURN_IF_ERROR(CheckNumPs(options.num_ps, size, "the MPI job"));
  AddressExchangeOptions exchange;
  exchange.coordinator = options.coordinator;
  if (exchange.coordinator.empty()) exchange.coordinator = env("RILL_COORDINATOR").value_or("");
  if (exchange.coordinator.empty()) {
    return absl::InvalidArgumentError(
        "MPI: no coordinator for the address exchange: pass --coordinator HOST:PORT (an address "
        "of the machine of rank 0, where it listens) or set RILL_COORDINATOR");
  }
  exchange.rank = rank;
  exchange.size = size;
  exchange.host = options.host;
  exchange.deadline = options.exchange_deadline;
  RETURN_IF_ERROR(SetExchangeAuth(options, exchange));
  ASSIGN_OR_RETURN(const std::vector<std::string> addresses, ExchangeAddresses(exchange));
  ResolvedCluster resolved;
  resolved.source = ClusterSource::kMpi;
  ASSIGN_OR_RETURN(resolved.config.cluster, SpecOfRanks(addresses, options.num_ps));
  resolved.config.task = TaskOfRank(rank, options.num_ps);
  return resolved;
}

}  // namespace

std::string_view ClusterSourceName(ClusterSource source) {
  for (const auto& [each, name] : kSourceNames) {
    if (each == source) return name;
  }
  return "unknown";
}

absl::StatusOr<ClusterSource> ParseClusterSource(std::string_view text) {
  for (const auto& [source, name] : kSourceNames) {
    if (text == name) return source;
  }
  return absl::InvalidArgumentError(
      absl::StrFormat("--cluster_from '%s': expected slurm, mpi, tf_config or flags", text));
}

std::optional<std::string> ProcessEnv(const std::string& name) {
  const char* value = std::getenv(name.c_str());
  if (value == nullptr) return std::nullopt;
  return std::string(value);
}

absl::Status ApplyClusterResolverFlags(const std::map<std::string, std::string>& values,
                                       ClusterResolverOptions& options) {
  for (const auto& [name, value] : values) {
    if (name == "cluster_from") {
      ASSIGN_OR_RETURN(options.source, ParseClusterSource(value));
    } else if (name == "num_ps" || name == "port_base") {
      const std::optional<int> number = ParseDecimalInt(value);
      if (!number || (name == "port_base" && (*number < 1 || *number > 65535))) {
        return absl::InvalidArgumentError(
            absl::StrFormat("--%s '%s': expected %s", name, value,
                            name == "num_ps" ? "a whole number >= 0" : "a port in 1..65535"));
      }
      (name == "num_ps" ? options.num_ps : options.port_base) = *number;
    } else if (name == "coordinator") {
      if (value.empty()) return absl::InvalidArgumentError("--coordinator: empty address");
      options.coordinator = value;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ClusterSource> SelectClusterSource(const ClusterResolverOptions& options) {
  if (options.source) return *options.source;
  const EnvLookup& env = options.env;
  if (HasClusterFlag(options.flags)) return ClusterSource::kFlags;
  if (env("TF_CONFIG")) return ClusterSource::kTfConfig;
  const bool open_mpi = env("OMPI_COMM_WORLD_RANK").has_value();
  if (env("SLURM_PROCID") && !open_mpi) return ClusterSource::kSlurm;
  if (open_mpi || env("PMI_RANK")) return ClusterSource::kMpi;
  return absl::InvalidArgumentError(
      "no cluster: pass --ps_hosts/--worker_hosts/--job_name/--task_index, set TF_CONFIG, start "
      "the tasks with srun or mpirun, or name the source with --cluster_from");
}

absl::StatusOr<ResolvedCluster> ResolveCluster(const ClusterResolverOptions& options) {
  ASSIGN_OR_RETURN(const ClusterSource source, SelectClusterSource(options));
  if (source == ClusterSource::kFlags) {
    ResolvedCluster resolved;
    ASSIGN_OR_RETURN(resolved.config, ServerConfigFromFlags(options.flags));
    return resolved;
  }
  // Checked before anything else: MPI's ranks wait for one another.
  ServerConfig checked;
  RETURN_IF_ERROR(ApplyTaskFlags(options.flags, source, checked));
  ResolvedCluster resolved;
  if (source == ClusterSource::kTfConfig) {
    const std::optional<std::string> tf_config = options.env("TF_CONFIG");
    if (!tf_config) {
      return absl::InvalidArgumentError("--cluster_from tf_config: TF_CONFIG is not set");
    }
    ASSIGN_OR_RETURN(resolved.config, ServerConfigFromTfConfig(*tf_config));
    resolved.source = source;
  } else if (source == ClusterSource::kSlurm) {
    ASSIGN_OR_RETURN(resolved, ResolveSlurm(options));
  } else {
    ASSIGN_OR_RETURN(resolved, ResolveMpi(options));
  }
  RETURN_IF_ERROR(ApplyTaskFlags(options.flags, source, resolved.config));
  return resolved;
}

}  // namespace rill
