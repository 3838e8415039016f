// distributed_mnist's flags: the cluster flags TensorFlow's training
// scripts take, and the training's, read as those scripts read them.
#ifndef RILL_EXAMPLES_DISTRIBUTED_MNIST_FLAGS_H_
#define RILL_EXAMPLES_DISTRIBUTED_MNIST_FLAGS_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ops/partitioned_variable.h"
#include "runtime/data/idx_reader.h"
#include "runtime/distributed/cluster_resolver.h"

namespace rill::examples {

extern const char kDistributedMnistUsage[];

struct Flags {
  bool help = false;                           // --help: print the usage, start nothing.
  std::map<std::string, std::string> cluster;  // ps_hosts, worker_hosts, job_name, ...
  // Where else the cluster may come from (Slurm, MPI): the values of
  // --cluster_from, --num_ps, --port_base and --coordinator
  // (kClusterResolverFlags), checked when parsed.
  std::map<std::string, std::string> resolver;
  // --ps_exit_with_chief: a ps task ends once the chief has ended (as it
  // does whenever the cluster comes from Slurm or MPI).
  bool ps_exit_with_chief = false;
  // --insecure: serve a non-loopback address without CURVE keys.
  bool insecure = false;
  std::string logdir;
  int64_t train_steps = 2000;
  int64_t batch_size = 64;
  float learning_rate = 0.001f;
  std::string model = "mlp";
  // Where a worker computes: its GPU when it has one (auto, as TensorFlow
  // places), or the named kind.
  std::string device = "auto";
  std::string data_dir = kFashionMnistDir;
  std::string curve_keys;  // A key directory: every task talks CURVE.
  int64_t log_every = 100;
  int64_t validate_every = 500;
  std::optional<int64_t> save_checkpoint_secs;
  std::optional<int64_t> save_checkpoint_steps;
  int64_t trace_steps = 0;
  // --keep_traces: the traced steps' files kept in --logdir, the newest;
  // 0 keeps every one.
  int64_t keep_traces = 20;
  // How tensors reach a task on this machine: shared memory for large ones
  // (shm), ipc sockets only (ipc), or tcp.
  std::string transport = "shm";
  // How gradients travel to the ps: as computed (none), float16, bfloat16, or
  // their largest entries (ParseGradientCompression).
  std::string gradient_compression = "none";
  // How the weight matrices are cut into parts, each a variable of its own
  // that the ps tasks share (ParsePartitioner), and how variables are
  // spread over the ps tasks (round_robin or greedy, by bytes).
  std::string partitioner = "none";
  std::string ps_strategy = "round_robin";
  std::optional<int64_t> replicas_to_aggregate;
  // Synchronous with workers that come and go: each round aggregates the
  // live workers' gradients, at least this many, at most
  // replicas_to_aggregate.
  std::optional<int64_t> min_replicas_to_aggregate;
  // Bounded staleness with workers that come and go: clocks for this many
  // workers, and the chief retires those that are not live.
  std::optional<int64_t> max_workers;
  std::optional<int64_t> backup_workers;
  std::optional<int64_t> staleness;
  // How long a synchronous or staleness-bounded step waits for the others.
  int64_t sync_timeout_secs = 60;
  // A pause before each step: a slow worker, for tests of the bounds.
  int64_t step_delay_ms = 0;
  // --join HOST:PORT: a worker outside the cluster spec that joins a live
  // asynchronous job through its chief's server, which gives it an index.
  std::string join;
  // --quiet: no progress line on stderr.
  bool quiet = false;
};

// --partitioner: "none" (an empty Partitioner), "fixed:N" (N parts, as
// fixed_size_partitioner) or "min_max:N[:BYTES]" (at most N parts of at
// least BYTES, 256 KiB by default, as min_max_variable_partitioner); both
// cut rows.
absl::StatusOr<Partitioner> ParsePartitioner(std::string_view value);

// The cluster resolver's options for these flags (the cluster flags and
// `resolver`).
absl::StatusOr<ClusterResolverOptions> ResolverOptions(const Flags& flags);

// The flags in `args` (argv without the program). A flag given again
// overrides, as TensorFlow's flags do; an unknown one is an error.
absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args);

}  // namespace rill::examples

#endif  // RILL_EXAMPLES_DISTRIBUTED_MNIST_FLAGS_H_
