// Which cluster this process joins, and as which task, from where the job
// was started: the cluster flags, TF_CONFIG, Slurm's environment (srun), or
// MPI's (mpirun), as TensorFlow's cluster resolvers find it.
#ifndef RILL_RUNTIME_DISTRIBUTED_CLUSTER_RESOLVER_H_
#define RILL_RUNTIME_DISTRIBUTED_CLUSTER_RESOLVER_H_

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "runtime/distributed/cluster_spec.h"

namespace rill {

enum class ClusterSource { kFlags, kTfConfig, kSlurm, kMpi };

// "flags", "tf_config", "slurm", "mpi": the values of --cluster_from.
std::string_view ClusterSourceName(ClusterSource source);
// INVALID_ARGUMENT naming --cluster_from and the values it takes.
absl::StatusOr<ClusterSource> ParseClusterSource(std::string_view text);

// An environment variable's value, or nullopt when unset. Tests pass their
// own environment; programs read the process's (ProcessEnv).
using EnvLookup = std::function<std::optional<std::string>(const std::string& name)>;
std::optional<std::string> ProcessEnv(const std::string& name);

struct ClusterResolverOptions {
  // Absent: the first that applies of the cluster flags, TF_CONFIG, Slurm
  // (SLURM_PROCID set) and MPI (OMPI_COMM_WORLD_RANK or PMI_RANK set).
  // Slurm gives way to MPI when OMPI_COMM_WORLD_RANK is set, since mpirun
  // started in a Slurm batch script inherits the script's SLURM_PROCID.
  std::optional<ClusterSource> source;
  // The cluster flags as ServerConfigFromFlags reads them. With another
  // source only "issync" and "curve_keys" may be given; they apply to it.
  std::map<std::string, std::string> flags;
  // Slurm and MPI: ranks 0..num_ps-1 are the ps tasks, the rest workers.
  int num_ps = 1;
  // Slurm: a task listens on port_base + its index among its node's tasks
  // (TensorFlow's SlurmClusterResolver's default base).
  int port_base = 8888;
  // MPI: the "HOST:PORT" where rank 0 serves the address exchange; empty:
  // RILL_COORDINATOR.
  std::string coordinator;
  // MPI: this rank's host in the cluster; empty: the local address that
  // routes to the coordinator.
  std::string host;
  absl::Duration exchange_deadline = absl::Seconds(60);
  EnvLookup env = ProcessEnv;
};

// The flags programs take for the options above, without "--".
inline constexpr const char* kClusterResolverFlags[] = {"cluster_from", "num_ps", "port_base",
                                                        "coordinator"};

// Sets `options` from the values of kClusterResolverFlags in `values`
// (other names are left alone). INVALID_ARGUMENT naming the flag.
absl::Status ApplyClusterResolverFlags(const std::map<std::string, std::string>& values,
                                       ClusterResolverOptions& options);

struct ResolvedCluster {
  ServerConfig config;
  ClusterSource source = ClusterSource::kFlags;
  // Slurm, with the node's GPUs known (CUDA_VISIBLE_DEVICES, else
  // SLURM_STEP_GPUS): this task's share, for the program to set as
  // CUDA_VISIBLE_DEVICES before it creates devices; "" is none of them.
  std::optional<std::string> cuda_visible_devices;
};

// The source options.source names, or the one found in the environment.
// INVALID_ARGUMENT listing the ways to give a cluster when none applies.
absl::StatusOr<ClusterSource> SelectClusterSource(const ClusterResolverOptions& options);

// The cluster and task. Errors are INVALID_ARGUMENT naming the flag or the
// environment variable and the bad text; FAILED_PRECONDITION when Slurm's
// variables disagree with one another; MPI: DEADLINE_EXCEEDED naming the
// coordinator when the address exchange does not complete.
absl::StatusOr<ResolvedCluster> ResolveCluster(const ClusterResolverOptions& options);

}  // namespace rill

#endif  // RILL_RUNTIME_DISTRIBUTED_CLUSTER_RESOLVER_H_
