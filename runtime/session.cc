#include "runtime/session.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "graph/graph.h"
#include "graph/node_def_util.h"
#include "graph/status_macros.h"
#include "kernels/registry.h"
#include "ops/registry.h"
#include "placement/device_set.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "runtime/remote_session.h"
#include "runtime/run_signature.h"
#include "runtime/step_plan.h"

namespace rill {
namespace {

class DirectSession final : public Session {
 public:
  explicit DirectSession(const SessionOptions& options);

  absl::Status Extend(const GraphDef& graph) override;
  absl::StatusOr<std::vector<Tensor>> Run(const RunOptions& options,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets,
                                          RunMetadata* metadata) override;
  absl::Status Close() override;

 private:
  absl::StatusOr<std::shared_ptr<const StepPlan>> GetPlan(const RunSignature& sig)
      ABSL_LOCKS_EXCLUDED(mu_);
  absl::Status RunStep(const StepPlan& plan, const RunOptions& options, const StepPlan::Args& args,
                       std::vector<Tensor>* fetched);

  const SessionOptions options_;
  const DeviceSet device_set_;
  std::atomic<int64_t> next_step_id_{1};

  mutable absl::Mutex mu_;
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  GraphDef graph_def_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Graph> graph_ ABSL_GUARDED_BY(mu_);
  // One per device_set_ name; they share the intra-op threads.
  std::vector<std::unique_ptr<CpuDevice>> devices_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<Eigen::ThreadPool> inter_op_pool_ ABSL_GUARDED_BY(mu_);
  // By RunSignature::key. Plans copy what they need from the graph, so
  // Extend (which only adds nodes) leaves them valid. Declared last: they
  // are destroyed before the pool and the devices they use.
  absl::flat_hash_map<std::string, std::shared_ptr<const StepPlan>> plans_ ABSL_GUARDED_BY(mu_);
};

int LocalCpuCount(const SessionOptions& options) {
  auto it = options.device_count.find("CPU");
  return it == options.device_count.end() ? 1 : std::max(1, it->second);
}

DirectSession::DirectSession(const SessionOptions& options)
    : options_(options),
      device_set_(DeviceSet::Local(LocalCpuCount(options))),
      // No spinning: an idle session must not burn the CPU.
      inter_op_pool_(std::make_unique<Eigen::ThreadPool>(
          options.inter_op_threads > 0
              ? options.inter_op_threads
              : static_cast<int>(std::max(1u, std::thread::hardware_concurrency())),
          /*allow_spinning=*/false)) {
  auto threads = std::make_shared<CpuThreads>(options.intra_op_threads);
  for (const std::string& name : device_set_.names()) {
    devices_.push_back(std::make_unique<CpuDevice>(threads, name));
  }
}

absl::Status DirectSession::Extend(const GraphDef& graph) {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::CancelledError("Session has been closed.");
  for (const NodeDef& node : graph.node()) {
    if (graph_ != nullptr && graph_->FindNode(node.name()) != nullptr) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "GraphDef argument to Extend includes node '%s', which was created by a previous call "
          "to Create or Extend in this session.",
          node.name()));
    }
  }
  GraphDef merged = graph_def_;
  if (merged.node_size() == 0 && graph.has_versions())
    *merged.mutable_versions() = graph.versions();
  merged.mutable_node()->MergeFrom(graph.node());
  merged.mutable_library()->MergeFrom(graph.library());
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> imported, ImportGraphDef(merged, StandardOps()));
  graph_def_ = std::move(merged);
  graph_ = std::move(imported);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const StepPlan>> DirectSession::GetPlan(const RunSignature& sig) {
  {
    absl::ReaderMutexLock lock(&mu_);
    if (auto it = plans_.find(sig.key); it != plans_.end()) return it->second;
  }
  // Built under the lock so that concurrent first runs of one signature
  // build (and log) it once.
  absl::MutexLock lock(&mu_);
  if (auto it = plans_.find(sig.key); it != plans_.end()) return it->second;
  StepPlanParams params;
  params.graph = graph_.get();
  ASSIGN_OR_RETURN(params.nodes, Prune(*graph_, sig));
  params.feeds = sig.feeds;
  params.fetches = sig.fetches;
  params.device_set = &device_set_;
  for (const auto& device : devices_) params.devices.push_back(device.get());
  params.placer.allow_soft_placement = options_.allow_soft_placement;
  params.placer.default_device = device_set_.names()[0];
  params.placer.kernels = options_.kernel_registry;
  params.registry = options_.kernel_registry;
  params.inter_op_pool = inter_op_pool_.get();
  params.parallel_nodes = options_.inter_op_threads != 1;
  if (options_.log_device_placement) {
    params.placement_log = options_.placement_log != nullptr ? options_.placement_log : stderr;
  }
  ASSIGN_OR_RETURN(std::unique_ptr<StepPlan> plan, StepPlan::Create(params));
  std::shared_ptr<const StepPlan> shared = std::move(plan);
  plans_.emplace(sig.key, shared);
  return shared;
}

absl::StatusOr<std::vector<Tensor>> DirectSession::Run(
    const RunOptions& options, const std::vector<std::pair<std::string, Tensor>>& feeds,
    const std::vector<std::string>& fetches, const std::vector<std::string>& targets,
    RunMetadata* metadata) {
  RunSignature sig;
  {
    absl::ReaderMutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("Session has been closed.");
    std::vector<std::string> feed_names;
    feed_names.reserve(feeds.size());
    for (const auto& feed : feeds) feed_names.push_back(feed.first);
    ASSIGN_OR_RETURN(sig, ResolveNames(*graph_, feed_names, fetches, targets));
  }
  ASSIGN_OR_RETURN(std::shared_ptr<const StepPlan> plan, GetPlan(sig));

  std::vector<Tensor> feed_values;
  feed_values.reserve(feeds.size());
  for (int i : sig.feed_order) feed_values.push_back(feeds[i].second);
  std::vector<NodeExecStats> stats;
  StepPlan::Args args;
  args.step_id = next_step_id_.fetch_add(1, std::memory_order_relaxed);  // Just unique.
  args.feeds = feed_values;
  args.stats = options.trace && metadata != nullptr ? &stats : nullptr;
  std::vector<Tensor> fetched;
  RETURN_IF_ERROR(RunStep(*plan, options, args, &fetched));
  if (args.stats != nullptr) metadata->step_stats = std::move(stats);

  std::vector<Tensor> outputs;
  outputs.reserve(sig.fetch_of.size());
  for (int i : sig.fetch_of) outputs.push_back(fetched[i]);
  return outputs;
}

absl::Status DirectSession::RunStep(const StepPlan& plan, const RunOptions& options,
                                    const StepPlan::Args& args, std::vector<Tensor>* fetched) {
  if (options.timeout_in_ms <= 0) return plan.Run(args, fetched);
  // With a deadline the step runs on the pool while this thread keeps time.
  StepCancellation cancellation;
  StepPlan::Args timed = args;
  timed.cancellation = &cancellation;
  absl::Notification finished;
  absl::Status result;
  plan.RunAsync(timed, fetched, [&](absl::Status status) {
    result = std::move(status);
    finished.Notify();
  });
  if (!finished.WaitForNotificationWithTimeout(absl::Milliseconds(options.timeout_in_ms))) {
    cancellation.Cancel(absl::DeadlineExceededError(
        absl::StrFormat("Run did not finish within %d ms (RunOptions.timeout_in_ms); the step "
                        "was cancelled",
                        options.timeout_in_ms)));
    // Kernels still running finish (or notice the cancellation) first.
    finished.WaitForNotification();
  }
  return result;
}

absl::Status DirectSession::Close() {
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::OkStatus();
  closed_ = true;
  plans_.clear();
  inter_op_pool_.reset();
  // Variables live in the devices' ResourceMgrs.
  devices_.clear();
  return absl::OkStatus();
}

// TensorFlow's device_count: a count per type. Local sessions make CPU
// devices (at least one); GPU counts are upper bounds, and no local GPU
// device exists yet, so any GPU count is accepted.
absl::Status ValidateDeviceCount(const std::map<std::string, int>& device_count) {
  for (const auto& [type, count] : device_count) {
    if (type != "CPU" && type != "GPU") {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SessionOptions.device_count names device type '%s'; known types are CPU and GPU", type));
    }
    if (count < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "SessionOptions.device_count[\"%s\"] is %d; counts cannot be negative", type, count));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> NewSession(const SessionOptions& options,
                                                    const GraphDef& graph) {
  if (!options.target.empty()) return NewRemoteSession(options, graph);
  RETURN_IF_ERROR(ValidateDeviceCount(options.device_count));
  auto session = std::make_unique<DirectSession>(options);
  RETURN_IF_ERROR(session->Extend(graph));
  return std::unique_ptr<Session>(std::move(session));
}

}  // namespace rill
