// Between-graph training of Fashion-MNIST, written as the TensorFlow 1.x
// training scripts are: every task is this program, started with the same
// cluster flags. A ps task serves its variables until killed; a worker
// serves its own task, builds the model with its variables on the ps tasks
// (replica device setter), and trains through a supervised session: the
// chief (task 0) restores the newest checkpoint in --logdir or initializes,
// and writes checkpoints and summaries there; the other workers wait until
// the model is ready. Updates are asynchronous (--issync 0), synchronous
// (--issync 1: every step applies the mean of --replicas_to_aggregate
// workers' gradients, the rest are --backup_workers), or asynchronous with
// bounded staleness (--staleness K: no worker runs more than K steps ahead
// of the slowest; 0 is lockstep).
//   distributed_mnist --ps_hosts=H:P[,...] --worker_hosts=H:P[,...]
//       --job_name=ps|worker --task_index=N [--issync=0|1] [--logdir DIR]
//       [--replicas_to_aggregate R] [--backup_workers B] [--staleness K]
//       [--sync_timeout_secs N] [--step_delay_ms N]
//       [--train_steps N] [--batch_size N] [--learning_rate X] [--model mlp|cnn]
//       [--device auto|cpu|gpu]
//       [--data DIR] [--log_every N] [--validate_every N]
//       [--save_checkpoint_secs N] [--save_checkpoint_steps N] [--trace_steps N]
//       [--curve_keys DIR] [--transport shm|ipc|tcp] [--quiet]
//       [--gradient_compression none|fp16|bf16|topk:FRACTION[:WARMUP_STEPS][+fp16|+bf16]]
// (or the cluster and task from TF_CONFIG, Slurm or MPI instead of the first
// four flags: --cluster_from, --num_ps, --port_base, --coordinator,
// --ps_exit_with_chief). A worker outside the cluster spec joins a live
// job with --join CHIEF_HOST:PORT; synchronous rounds follow the live
// workers with --min_replicas_to_aggregate M, and bounded staleness waits
// only for them with --max_workers N.
// With --curve_keys (a directory from `rill keygen`, shared by the tasks)
// every connection is authenticated and encrypted.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "cli/flags.h"
#include "examples/distributed_mnist_flags.h"
#include "examples/distributed_mnist_graph.h"
#include "examples/trace_ring.h"
#include "fmt/core.h"
#include "graph/progress_line.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"
#include "runtime/data/dataset.h"
#include "runtime/data/idx_reader.h"
#include "runtime/device/device_query.h"
#include "runtime/distributed/cluster_resolver.h"
#include "runtime/distributed/cluster_spec.h"
#include "runtime/distributed/job_end_watch.h"
#include "runtime/distributed/job_member.h"
#include "runtime/distributed/server.h"
#include "runtime/distributed/tf_config.h"
#include "runtime/exec/timeline.h"
#include "runtime/training/basic_session_run_hooks.h"
#include "runtime/training/checkpoint_state.h"
#include "runtime/training/monitored_session.h"
#include "runtime/training/step_split.h"
#include "runtime/training/summary_writer.h"
#include "transport/curve.h"

namespace rill::examples {
namespace {

constexpr int64_t kValidationRows = 5000;

// The cluster from the flags, TF_CONFIG, Slurm or MPI (ResolveCluster).
// Under Slurm the task's share of its node's GPUs becomes its
// CUDA_VISIBLE_DEVICES here, before anything creates a device.
absl::StatusOr<ServerConfig> ClusterConfig(const Flags& flags) {
  ASSIGN_OR_RETURN(const ClusterResolverOptions options, ResolverOptions(flags));
  ASSIGN_OR_RETURN(ResolvedCluster resolved, ResolveCluster(options));
  ServerConfig config = std::move(resolved.config);
  if (resolved.source == ClusterSource::kSlurm || resolved.source == ClusterSource::kMpi) {
    fmt::print("{} {}: cluster from {}: {}\n", config.task.job, config.task.index,
               ClusterSourceName(resolved.source), config.cluster.ToString());
  }
  if (resolved.cuda_visible_devices) {
    setenv("CUDA_VISIBLE_DEVICES", resolved.cuda_visible_devices->c_str(), 1);
    fmt::print("{} {}: CUDA_VISIBLE_DEVICES={}\n", config.task.job, config.task.index,
               *resolved.cuda_visible_devices);
  }
  std::fflush(stdout);
  if (!flags.curve_keys.empty()) config.curve_keys = flags.curve_keys;
  config.insecure = flags.insecure;
  return config;
}

// This task's server, reaching the tasks on this machine as --transport says.
ServerOptions TaskServerOptions(const Flags& flags, const ServerConfig& config) {
  ServerOptions options;
  options.config = config;
  options.bind_ipc = flags.transport != "tcp";
  options.shared_memory = flags.transport == "shm";
  return options;
}

// A ps task only serves: its variables live in its server until it is
// killed (SIGTERM or SIGINT end it cleanly). srun and mpirun wait for every
// task, and nothing would kill the ps: there (or with --ps_exit_with_chief)
// it also ends, with status 0, once it has seen the chief and then no
// worker has answered for a few seconds (JobEndWatch). Watching the
// workers from the ps needs nothing of them, and still works when the
// chief crashed instead of finishing.
absl::Status RunPs(const Flags& flags, const ServerConfig& config) {
  ASSIGN_OR_RETURN(const ClusterResolverOptions resolver, ResolverOptions(flags));
  ASSIGN_OR_RETURN(const ClusterSource source, SelectClusterSource(resolver));
  const bool exit_with_chief =
      flags.ps_exit_with_chief || source == ClusterSource::kSlurm || source == ClusterSource::kMpi;
  BlockStopSignals();
  const ServerOptions options = TaskServerOptions(flags, config);
  ASSIGN_OR_RETURN(std::unique_ptr<Server> server, Server::Create(options));
  fmt::print("ps {}: serving at {}\n", config.task.index, server->target());
  std::fflush(stdout);
  if (exit_with_chief) {
    JobEndWatchOptions watch_options;
    watch_options.curve = server->curve();
    ASSIGN_OR_RETURN(std::unique_ptr<JobEndWatch> watch,
                     JobEndWatch::Create(config.cluster, watch_options));
    if (WaitForStopSignalOrJobEnd(*watch) == 0) {
      fmt::print("ps {}: the chief has ended and no worker answers; stopping\n", config.task.index);
    }
  } else {
    WaitForStopSignal();
  }
  server->Stop();
  return absl::OkStatus();
}

// Runs `steps` more training steps with step stats and prints, per device,
// how long its nodes computed (receives, which mostly wait for a peer, are
// counted apart) and its costliest ops: where a distributed step's time goes.
// With a log directory, each traced step's timeline (every task's nodes)
// goes there as a Chrome trace, worker<task>-traced-<i>.trace.json, of
// which the newest `keep_traces` stay (all when 0).
absl::Status TraceSteps(Session& session, const std::vector<std::pair<std::string, Tensor>>& feeds,
                        const std::vector<std::string>& targets, int64_t steps, int task,
                        const std::string& logdir, int64_t keep_traces) {
  TraceRing ring(static_cast<size_t>(keep_traces));
  std::map<std::string, std::map<std::string, double>> ms_by_device_op;
  double step_ms = 0;
  std::vector<StepSplit> splits;
  for (int64_t i = 0; i < steps; ++i) {
    RunOptions options;
    options.trace = true;
    RunMetadata metadata;
    const auto start = std::chrono::steady_clock::now();
    RETURN_IF_ERROR(session.Run(options, feeds, {}, targets, &metadata).status());
    step_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    for (const NodeExecStats& node : metadata.step_stats) {
      ms_by_device_op[node.device][node.op] +=
          static_cast<double>(node.end_micros - node.start_micros) / 1000;
    }
    splits.push_back(SplitStep(metadata.step_stats));
    if (!logdir.empty()) {
      const std::string path = fmt::format("{}/worker{}-traced-{}.trace.json", logdir, task, i + 1);
      RETURN_IF_ERROR(io::CreateDirectories(logdir));
      RETURN_IF_ERROR(Timeline(std::move(metadata)).WriteChromeTrace(path));
      RETURN_IF_ERROR(ring.Add(path));
      // One line per kept file, not per step: a million traced steps
      // should not print a million lines.
      if (ring.keep() == 0 || i + ring.keep() >= static_cast<size_t>(steps)) {
        fmt::print("Worker {}: traced step {} as a timeline: {}\n", task, i + 1, path);
      }
    }
  }
  if (ring.deleted() > 0) {
    fmt::print("Worker {}: kept the newest {} of {} traced steps' timelines (--keep_traces)\n",
               task, ring.keep(), steps);
  }
  const double n = static_cast<double>(steps);
  fmt::print("Worker {}: {} traced steps, {:.3f} ms each at the client\n", task, steps,
             step_ms / n);
  fmt::print("Worker {}: a step's time, mean of {}: {}\n", task, steps,
             StepSplitText(MeanStepSplit(splits)));
  for (const auto& [device, by_op] : ms_by_device_op) {
    double compute = 0;
    std::vector<std::pair<double, std::string>> ops;
    for (const auto& [op, ms] : by_op) {
      if (op != "_Recv") compute += ms;
      ops.emplace_back(ms, op);
    }
    std::sort(ops.rbegin(), ops.rend());
    std::string top;
    for (size_t i = 0; i < ops.size() && i < 5; ++i) {
      top += fmt::format("{}{} {:.3f}", i ? ", " : "", ops[i].second, ops[i].first / n);
    }
    fmt::print("Worker {}:   {}: compute {:.3f} ms per step (not counting _Recv); top: {}\n", task,
               device, compute / n, top);
  }
  return absl::OkStatus();
}

// A worker's examples per second, in LOGDIR/worker<task>/ (the chief's
// summaries are the job's, in LOGDIR): `rill report` and TensorBoard show
// each worker's rate. Null without a log directory, or when the file
// cannot be made (said once; training goes on without it).
std::unique_ptr<SummaryWriter> WorkerRateWriter(const Flags& flags, int task) {
  if (flags.logdir.empty()) return nullptr;
  absl::StatusOr<std::unique_ptr<SummaryWriter>> writer =
      SummaryWriter::Create(fmt::format("{}/worker{}", flags.logdir, task));
  if (!writer.ok()) {
    fmt::print(stderr, "Worker {}: not writing examples/sec: {}\n", task,
               std::string(writer.status().message()));
    return nullptr;
  }
  return *std::move(writer);
}

// A worker other than the chief says it lives to the chief's server (the
// job's coordinator) while it trains, and leaves when it ends; a joiner
// with the token its join returned, a worker of the spec with none (its
// first heartbeat joins it).
absl::StatusOr<std::unique_ptr<JobMember>> StayInJob(const Flags& flags, const ServerConfig& config,
                                                     const Server& server,
                                                     const std::string& member_token) {
  const std::vector<int> workers = config.cluster.TaskIndices("worker");
  if (config.task.index == 0 || workers.empty() || workers.front() != 0) return nullptr;
  JobMemberOptions member;
  ASSIGN_OR_RETURN(member.coordinator, config.cluster.TaskAddress("worker", 0));
  if (!flags.join.empty()) member.coordinator = flags.join;
  ASSIGN_OR_RETURN(member.address, config.cluster.TaskAddress("worker", config.task.index));
  member.task_index = config.task.index;
  member.member_token = member_token;
  member.curve = server.curve();
  return JobMember::Start(member, absl::Seconds(1));
}

absl::Status RunWorker(const Flags& flags, const ServerConfig& config,
                       const std::string& member_token = "") {
  const int task = config.task.index;
  if (const GpuQuery gpus = QueryGpuDevices(); flags.device == "gpu" && gpus.devices.empty()) {
    return absl::FailedPreconditionError("--device gpu: this machine has no GPU: " + gpus.reason);
  }
  auto train = LoadMnist(flags.data_dir, MnistSplit::kTrain);
  if (!train.ok()) {
    return absl::Status(train.status().code(),
                        fmt::format("{} (install the Debian package dataset-fashion-mnist, or "
                                    "pass --data DIR): {}",
                                    flags.data_dir, std::string(train.status().message())));
  }
  ASSIGN_OR_RETURN(const MnistData test, LoadMnist(flags.data_dir, MnistSplit::kTest));
  // The last rows of the training set are held out for validation.
  const int64_t train_rows = train->images.dim_size(0) - kValidationRows;
  const Tensor validation_images = train->images.Slice(train_rows, train_rows + kValidationRows);
  const Tensor validation_labels = train->labels.Slice(train_rows, train_rows + kValidationRows);

  ASSIGN_OR_RETURN(std::unique_ptr<Server> server,
                   Server::Create(TaskServerOptions(flags, config)));
  // Synchronous rounds wait only for the members that send gradients.
  ASSIGN_OR_RETURN(
      DistributedMnistGraph graph,
      BuildDistributedMnistGraph(
          flags, config,
          [&server, sync = config.sync_replicas] {
            if (sync) return server->membership().Counted(absl::Now());
            std::vector<int> live;
            for (const LiveMember& member : server->membership().Members()) {
              live.push_back(member.task_index());
            }
            return live;
          },
          [&server](int worker, absl::Time since) {
            return server->membership().Contributed(worker, since, absl::Now());
          }));
  ASSIGN_OR_RETURN(const std::unique_ptr<JobMember> member,
                   StayInJob(flags, config, *server, member_token));
  const std::unique_ptr<SummaryWriter> rates = WorkerRateWriter(flags, task);

  const bool is_chief = task == 0;
  MonitoredTrainingSessionOptions options;
  options.manager.session_options.target = server->target();
  options.manager.session_options.curve = server->curve();
  options.manager.recovery_wait = absl::Seconds(1);
  options.is_chief = is_chief;
  // The global step on stderr, counted from the first step's (a restored
  // run resumes where its checkpoint was), with the session's and hooks'
  // lines (global_step/sec, saves, recoveries) written above it.
  std::optional<ProgressLine> progress;
  ProgressLogSink log;
  options.log = &log;
  options.checkpoint_dir = flags.logdir;
  if (flags.save_checkpoint_secs)
    options.save_checkpoint_secs = absl::Seconds(*flags.save_checkpoint_secs);
  if (flags.save_checkpoint_steps) options.save_checkpoint_steps = *flags.save_checkpoint_steps;
  ASSIGN_OR_RETURN(std::unique_ptr<SessionRunHook> stop,
                   StopAtStepHook::Create({.last_step = flags.train_steps}));
  options.hooks.push_back(std::move(stop));
  if (graph.sync_hook != nullptr) options.hooks.push_back(std::move(graph.sync_hook));
  if (graph.staleness_hook != nullptr) options.hooks.push_back(std::move(graph.staleness_hook));
  if (is_chief) {
    fmt::print("Worker {}: Initializing session...\n", task);
  } else {
    fmt::print("Worker {}: Waiting for session to be initialized...\n", task);
  }
  if (is_chief && !flags.logdir.empty()) {
    if (const std::optional<std::string> latest = LatestCheckpoint(flags.logdir)) {
      fmt::print("Worker {}: restoring {}\n", task, *latest);
    }
  }
  std::fflush(stdout);
  ASSIGN_OR_RETURN(std::unique_ptr<MonitoredSession> session,
                   NewMonitoredTrainingSession(graph.def, graph.scaffold, std::move(options)));
  fmt::print("Worker {}: Session initialization complete.\n", task);
  std::fflush(stdout);

  ASSIGN_OR_RETURN(Dataset data, Dataset::FromTensors({train->images.Slice(0, train_rows),
                                                       train->labels.Slice(0, train_rows)}));
  // Each worker sees the data in its own order.
  data.Shuffle(42 + static_cast<uint64_t>(task)).Batch(flags.batch_size).Repeat(-1).Prefetch(2);
  ASSIGN_OR_RETURN(auto batches, data.MakeIterator());
  // The step value after a step: the token of a synchronous step, else the
  // global step as read in the step, before its own increment.
  const bool sync = !graph.token.empty();
  const bool bounded = !graph.clock.empty();
  std::vector<std::string> fetches = {graph.loss, sync ? graph.token : graph.scaffold.global_step};
  if (bounded) {
    fetches.push_back(graph.clock);
    fetches.push_back(graph.slowest);
  }
  const std::vector<std::string> targets = {graph.train};
  int64_t local_step = 0;
  int64_t last_global_step = 0;
  int64_t max_lead = 0;  // Bounded staleness: the most steps ahead of the slowest.
  const auto train_start = std::chrono::steady_clock::now();
  auto window_start = train_start;
  int64_t window_steps = 0;
  while (!session->ShouldStop()) {
    ASSIGN_OR_RETURN(auto batch, batches->Next());
    if (flags.step_delay_ms > 0) absl::SleepFor(absl::Milliseconds(flags.step_delay_ms));
    ASSIGN_OR_RETURN(auto values,
                     session->Run({{"x", (*batch)[0]}, {"labels", (*batch)[1]}}, fetches, targets));
    ++local_step;
    ++window_steps;
    last_global_step = values[1].scalar<int64_t>() + (sync ? 0 : 1);
    if (bounded) {
      max_lead = std::max(max_lead, values[2].scalar<int64_t>() - values[3].scalar<int64_t>());
    }
    if (!progress) {
      progress.emplace(fmt::format("worker {}", task), flags.train_steps,
                       ProgressLineOptions{.enabled = !flags.quiet, .start = last_global_step});
      log.set_progress(&*progress);
    }
    progress->Update(last_global_step);
    // The chief stops at the last step (StopAtStepHook); a worker whose
    // token is the last step stops too, since no round follows it.
    if (sync && last_global_step >= flags.train_steps) break;
    if (local_step % flags.log_every == 0) {
      const auto now = std::chrono::steady_clock::now();
      const double seconds = std::chrono::duration<double>(now - window_start).count();
      const double examples_per_second =
          static_cast<double>(window_steps * flags.batch_size) / seconds;
      progress->Clear();
      fmt::print("Worker {}: local step {}, global step {}, loss {:.4f}, {:.0f} examples/s\n", task,
                 local_step, last_global_step, values[0].scalar<float>(), examples_per_second);
      if (rates != nullptr) {
        RETURN_IF_ERROR(rates->AddScalar("examples/sec", static_cast<float>(examples_per_second),
                                         last_global_step));
      }
      std::fflush(stdout);
      window_start = now;
      window_steps = 0;
    }
    if (local_step % flags.validate_every == 0) {
      ASSIGN_OR_RETURN(auto accuracy, session->raw_session()->Run(
                                          {{"x", validation_images}, {"labels", validation_labels}},
                                          {graph.accuracy}));
      progress->Clear();
      fmt::print("Worker {}: global step {}, validation accuracy {:.4f}\n", task, last_global_step,
                 accuracy[0].scalar<float>());
      std::fflush(stdout);
    }
  }
  const double train_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - train_start).count();
  if (progress) progress->Finish();
  if (bounded) RETURN_IF_ERROR(session->raw_session()->Run({}, {}, {graph.retire}).status());
  if (flags.trace_steps > 0) {
    ASSIGN_OR_RETURN(auto batch, batches->Next());
    RETURN_IF_ERROR(TraceSteps(*session->raw_session(),
                               {{"x", (*batch)[0]}, {"labels", (*batch)[1]}}, targets,
                               flags.trace_steps, task, flags.logdir, flags.keep_traces));
  }
  // The global step now: a synchronous worker's last token may be a round
  // behind the chief's sync loop.
  ASSIGN_OR_RETURN(auto accuracy,
                   session->raw_session()->Run({{"x", test.images}, {"labels", test.labels}},
                                               {graph.accuracy, graph.scaffold.global_step}));
  last_global_step = accuracy[1].scalar<int64_t>();
  RETURN_IF_ERROR(session->Close());
  fmt::print("Worker {}: test accuracy {:.4f} after {} local steps (global step {})\n", task,
             accuracy[0].scalar<float>(), local_step, last_global_step);
  fmt::print(
      "result: {{\"task\": {}, \"mode\": \"{}\", \"test_accuracy\": {:.4f}, \"local_steps\": {}, "
      "\"global_step\": {}, \"train_seconds\": {:.3f}, \"max_lead\": {}}}\n",
      task, graph.mode, accuracy[0].scalar<float>(), local_step, last_global_step, train_seconds,
      bounded ? max_lead : -1);
  return absl::OkStatus();
}

// A worker that joins a live job: the chief's server gives it an index
// and the cluster (the ps tasks and the live workers); the ps tasks learn
// its address from the graphs it registers.
absl::Status JoinAndRunWorker(const Flags& flags) {
  const bool sync = flags.cluster.contains("issync");
  if (flags.cluster.size() > (sync ? 1u : 0u) || std::getenv("TF_CONFIG") != nullptr) {
    return absl::InvalidArgumentError(
        "--join: the chief's server gives the cluster and the task; pass no --ps_hosts, "
        "--worker_hosts, --job_name, --task_index and no TF_CONFIG");
  }
  if (flags.staleness && !flags.max_workers) {
    return absl::InvalidArgumentError(
        "--join with --staleness: pass --max_workers N (as every worker of the job does), so "
        "that the clocks have room for workers that join");
  }
  const std::string issync = sync ? flags.cluster.at("issync") : "0";
  if (issync != "0" && issync != "1" && issync != "true" && issync != "false") {
    return absl::InvalidArgumentError(
        fmt::format("--issync '{}': expected 0, 1, true or false", issync));
  }
  const bool sync_replicas = issync == "1" || issync == "true";
  JobMemberOptions member;
  member.coordinator = flags.join;
  ASSIGN_OR_RETURN(member.address, FreeAddressToward(flags.join));
  if (!flags.curve_keys.empty()) {
    ASSIGN_OR_RETURN(CurveKeys keys, LoadCurveKeys(flags.curve_keys));
    member.curve = std::make_shared<const CurveKeys>(std::move(keys));
  }
  ASSIGN_OR_RETURN(JoinedJob joined, JoinJob(member, absl::Seconds(60)));
  ServerConfig& config = joined.config;
  config.curve_keys = flags.curve_keys;
  config.insecure = flags.insecure;
  config.sync_replicas = sync_replicas;
  fmt::print("Worker {}: joined the job at {} as worker {} of {} (at {})\n", config.task.index,
             flags.join, config.task.index, config.cluster.ToString(), member.address);
  std::fflush(stdout);
  return RunWorker(flags, config, joined.member_token);
}

absl::Status Run(const Flags& flags) {
  if (!flags.join.empty()) return JoinAndRunWorker(flags);
  ASSIGN_OR_RETURN(const ServerConfig config, ClusterConfig(flags));
  if (config.task.job == "ps") return RunPs(flags, config);
  if (config.task.job != "worker") {
    return absl::InvalidArgumentError(
        fmt::format("--job_name '{}': expected ps or worker", config.task.job));
  }
  return RunWorker(flags, config);
}

}  // namespace
}  // namespace rill::examples

int main(int argc, char** argv) {
  using rill::examples::kDistributedMnistUsage;
  const absl::StatusOr<rill::examples::Flags> flags =
      rill::examples::ParseFlags({argv + 1, argv + argc});
  if (!flags.ok())
    return rill::cli::PrintUsageError("distributed_mnist", flags.status(), kDistributedMnistUsage);
  if (flags->help) return rill::cli::PrintHelp(kDistributedMnistUsage);
  const absl::Status status = rill::examples::Run(*flags);
  if (!status.ok()) {
    std::fprintf(stderr, "distributed_mnist: %s\n", std::string(status.message()).c_str());
    return absl::IsInvalidArgument(status) ? 2 : 1;
  }
  return 0;
}
