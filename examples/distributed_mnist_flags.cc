#include "examples/distributed_mnist_flags.h"

#include <set>
#include <string_view>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "cli/flags.h"
#include "fmt/core.h"
#include "graph/status_macros.h"
#include "placement/replica_device_setter.h"
#include "runtime/training/gradient_compression.h"

namespace rill::examples {

const char kDistributedMnistUsage[] =
    "usage: distributed_mnist --ps_hosts=HOST:PORT[,...] --worker_hosts=HOST:PORT[,...]\n"
    "           --job_name=ps|worker --task_index=N [--issync=0|1] [--logdir DIR]\n"
    "           [--replicas_to_aggregate R] [--min_replicas_to_aggregate M]\n"
    "           [--backup_workers B] [--staleness K [--max_workers N]]\n"
    "           [--sync_timeout_secs N] [--step_delay_ms N]\n"
    "           [--train_steps N] [--batch_size N] [--learning_rate X] [--model mlp|cnn]\n"
    "           [--device auto|cpu|gpu] [--data DIR] [--log_every N] [--validate_every N]\n"
    "           [--save_checkpoint_secs N] [--save_checkpoint_steps N] [--trace_steps N]\n"
    "           [--keep_traces N]   (the newest N traced steps' files kept; 0: all; 20)\n"
    "           [--curve_keys DIR | --insecure] [--transport shm|ipc|tcp]\n"
    "           [--gradient_compression none|fp16|bf16|topk:FRACTION[:WARMUP_STEPS][+fp16|+bf16]]\n"
    "           [--partitioner none|fixed:N|min_max:N[:BYTES]] [--ps_strategy round_robin|greedy]\n"
    "           [--quiet]   (no progress line on stderr)\n"
    "       distributed_mnist --join CHIEF_HOST:PORT [training flags]\n"
    "           (a worker that joins a live job through its chief's server; with --issync 1\n"
    "           the job's rounds aggregate the live workers' gradients, M to R of them; with\n"
    "           --staleness K --max_workers N nobody waits for a worker that is not live)\n"
    "       (or the cluster and task in TF_CONFIG instead of the first four flags)\n"
    "       distributed_mnist [--cluster_from slurm|mpi|tf_config|flags] [--num_ps N]\n"
    "           [--port_base P] [--coordinator HOST:PORT] [--ps_exit_with_chief] [training flags]\n"
    "           (unnamed, the first found of the flags, TF_CONFIG, Slurm, MPI; ranks\n"
    "           0..N-1 of srun or mpirun are the ps tasks (--num_ps, 1), the rest\n"
    "           workers; Slurm's tasks listen on --port_base (8888) plus their\n"
    "           index on their node; MPI's ranks exchange addresses through rank 0 at\n"
    "           --coordinator (or RILL_COORDINATOR). srun and mpirun wait for every task,\n"
    "           so there, or with --ps_exit_with_chief, a ps ends once it has seen the chief\n"
    "           and then no worker has answered for 5 s)\n"
    "Every task of the cluster runs this program: a ps task serves its variables, the\n"
    "workers train (the chief, task 0, restores or initializes and writes checkpoints and\n"
    "events to --logdir); --issync 1 trains synchronously, --staleness K bounds how far a\n"
    "worker runs ahead of the slowest.\n";

absl::StatusOr<Partitioner> ParsePartitioner(std::string_view value) {
  if (value == "none") return Partitioner();
  const std::vector<std::string> fields = absl::StrSplit(std::string(value), ':');
  int64_t parts = 0;
  int64_t min_slice_bytes = int64_t{256} << 10;
  const bool parsed =
      (fields[0] == "fixed" && fields.size() == 2 && absl::SimpleAtoi(fields[1], &parts)) ||
      (fields[0] == "min_max" && (fields.size() == 2 || fields.size() == 3) &&
       absl::SimpleAtoi(fields[1], &parts) &&
       (fields.size() == 2 || absl::SimpleAtoi(fields[2], &min_slice_bytes)));
  if (!parsed || parts < 1 || min_slice_bytes < 1) {
    return absl::InvalidArgumentError(
        fmt::format("--partitioner '{}': expected none, fixed:N or min_max:N[:BYTES] with N and "
                    "BYTES whole numbers >= 1",
                    value));
  }
  return fields[0] == "fixed" ? FixedSizePartitioner(parts)
                              : MinMaxVariablePartitioner(parts, 0, min_slice_bytes);
}

absl::StatusOr<Flags> ParseFlags(const std::vector<std::string>& args) {
  // Every flag but --quiet and --ps_exit_with_chief takes a value. A flag
  // given again overrides, as TensorFlow's flags do: scripts append a
  // task's flags to the cluster's shared ones.
  const std::set<std::string> names = {"cluster_from",
                                       "num_ps",
                                       "port_base",
                                       "coordinator",
                                       "ps_hosts",
                                       "worker_hosts",
                                       "job_name",
                                       "task_index",
                                       "issync",
                                       "logdir",
                                       "train_steps",
                                       "batch_size",
                                       "learning_rate",
                                       "model",
                                       "device",
                                       "data",
                                       "curve_keys",
                                       "log_every",
                                       "validate_every",
                                       "save_checkpoint_secs",
                                       "trace_steps",
                                       "keep_traces",
                                       "replicas_to_aggregate",
                                       "backup_workers",
                                       "staleness",
                                       "step_delay_ms",
                                       "sync_timeout_secs",
                                       "save_checkpoint_steps",
                                       "transport",
                                       "gradient_compression",
                                       "partitioner",
                                       "ps_strategy",
                                       "join",
                                       "min_replicas_to_aggregate",
                                       "max_workers"};
  ASSIGN_OR_RETURN(const cli::ParsedArgs parsed,
                   cli::ParseOptionsOnly(args, names, {"quiet", "ps_exit_with_chief", "insecure"},
                                         cli::RepeatedOption::kLastWins));
  Flags flags;
  if (parsed.help) {
    flags.help = true;
    return flags;
  }
  flags.quiet = parsed.Has("quiet");
  flags.ps_exit_with_chief = parsed.Has("ps_exit_with_chief");
  flags.insecure = parsed.Has("insecure");
  const auto positive = [](std::string_view name, const std::string& value,
                           int64_t* out) -> absl::Status {
    if (!absl::SimpleAtoi(value, out) || *out < 1) {
      return absl::InvalidArgumentError(
          fmt::format("--{} '{}': expected a whole number >= 1", name, value));
    }
    return absl::OkStatus();
  };
  for (const auto& [name, value] : parsed.values) {
    if (name == "ps_hosts" || name == "worker_hosts" || name == "job_name" ||
        name == "task_index" || name == "issync") {
      flags.cluster[name] = value;
    } else if (name == "cluster_from" || name == "num_ps" || name == "port_base" ||
               name == "coordinator") {
      flags.resolver[name] = value;
    } else if (name == "logdir") {
      flags.logdir = value;
    } else if (name == "train_steps") {
      RETURN_IF_ERROR(positive(name, value, &flags.train_steps));
    } else if (name == "batch_size") {
      RETURN_IF_ERROR(positive(name, value, &flags.batch_size));
    } else if (name == "learning_rate") {
      if (!absl::SimpleAtof(value, &flags.learning_rate) || !(flags.learning_rate > 0)) {
        return absl::InvalidArgumentError(
            fmt::format("--learning_rate '{}': expected a number > 0", value));
      }
    } else if (name == "model") {
      if (value != "mlp" && value != "cnn") {
        return absl::InvalidArgumentError(
            fmt::format("--model '{}': expected mlp (784-128-10) or cnn (two conv layers)", value));
      }
      flags.model = value;
    } else if (name == "device") {
      if (value != "auto" && value != "cpu" && value != "gpu") {
        return absl::InvalidArgumentError(
            fmt::format("--device '{}': expected auto, cpu or gpu", value));
      }
      flags.device = value;
    } else if (name == "transport") {
      if (value != "shm" && value != "ipc" && value != "tcp") {
        return absl::InvalidArgumentError(fmt::format(
            "--transport '{}': expected shm (shared memory between tasks of this machine), ipc "
            "or tcp",
            value));
      }
      flags.transport = value;
    } else if (name == "gradient_compression") {
      RETURN_IF_ERROR(ParseGradientCompression(value).status());
      flags.gradient_compression = value;
    } else if (name == "partitioner") {
      RETURN_IF_ERROR(ParsePartitioner(value).status());
      flags.partitioner = value;
    } else if (name == "ps_strategy") {
      if (absl::Status bad = ParsePsStrategy(value).status(); !bad.ok()) {
        return absl::InvalidArgumentError(
            fmt::format("--ps_strategy: {}", std::string(bad.message())));
      }
      flags.ps_strategy = value;
    } else if (name == "join") {
      flags.join = value;
    } else if (name == "data") {
      flags.data_dir = value;
    } else if (name == "curve_keys") {
      flags.curve_keys = value;
    } else if (name == "log_every") {
      RETURN_IF_ERROR(positive(name, value, &flags.log_every));
    } else if (name == "validate_every") {
      RETURN_IF_ERROR(positive(name, value, &flags.validate_every));
    } else if (name == "save_checkpoint_secs") {
      int64_t secs = 0;
      RETURN_IF_ERROR(positive(name, value, &secs));
      flags.save_checkpoint_secs = secs;
    } else if (name == "trace_steps") {
      RETURN_IF_ERROR(positive(name, value, &flags.trace_steps));
    } else if (name == "replicas_to_aggregate" || name == "min_replicas_to_aggregate" ||
               name == "max_workers") {
      int64_t n = 0;
      RETURN_IF_ERROR(positive(name, value, &n));
      (name == "replicas_to_aggregate"       ? flags.replicas_to_aggregate
       : name == "min_replicas_to_aggregate" ? flags.min_replicas_to_aggregate
                                             : flags.max_workers) = n;
    } else if (name == "keep_traces") {
      if (!absl::SimpleAtoi(value, &flags.keep_traces) || flags.keep_traces < 0) {
        return absl::InvalidArgumentError(
            fmt::format("--keep_traces '{}': expected a whole number >= 0", value));
      }
    } else if (name == "backup_workers" || name == "staleness" || name == "step_delay_ms") {
      int64_t n = 0;
      if (!absl::SimpleAtoi(value, &n) || n < 0) {
        return absl::InvalidArgumentError(
            fmt::format("--{} '{}': expected a whole number >= 0", name, value));
      }
      if (name == "backup_workers") flags.backup_workers = n;
      if (name == "staleness") flags.staleness = n;
      if (name == "step_delay_ms") flags.step_delay_ms = n;
    } else if (name == "sync_timeout_secs") {
      RETURN_IF_ERROR(positive(name, value, &flags.sync_timeout_secs));
    } else if (name == "save_checkpoint_steps") {
      int64_t steps = 0;
      RETURN_IF_ERROR(positive(name, value, &steps));
      flags.save_checkpoint_steps = steps;
    }
  }
  RETURN_IF_ERROR(ResolverOptions(flags).status());
  return flags;
}

absl::StatusOr<ClusterResolverOptions> ResolverOptions(const Flags& flags) {
  ClusterResolverOptions options;
  options.flags = flags.cluster;
  // An MPI job's address exchange speaks CURVE with the cluster's keys.
  if (!flags.curve_keys.empty()) options.flags["curve_keys"] = flags.curve_keys;
  RETURN_IF_ERROR(ApplyClusterResolverFlags(flags.resolver, options));
  return options;
}

}  // namespace rill::examples
