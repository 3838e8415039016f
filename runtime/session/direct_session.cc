#include "runtime/session/direct_session.h"

#include <algorithm>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "runtime/session/session_core.h"
#include "runtime/session/worker.h"

namespace rill {
namespace {

constexpr char kLocalTask[] = "/job:localhost/replica:0/task:0";

// A local session's cluster: one task, this process's.
class LocalTask final : public WorkerCache {
 public:
  explicit LocalTask(Worker* worker) : worker_(worker) {}
  std::vector<std::string> Tasks() const override { return {worker_->task()}; }
  absl::StatusOr<WorkerInterface*> GetWorker(const std::string& task) override {
    if (task != worker_->task()) {
      return absl::NotFoundError(
          absl::StrFormat("a local session has no task '%s', only %s", task, worker_->task()));
    }
    return worker_;
  }

 private:
  Worker* const worker_;
};

// The session core over this process's worker: partitions are reached by
// in-process calls and exchange tensors through a local rendezvous.
class DirectSession final : public Session {
 public:
  static absl::StatusOr<std::unique_ptr<Session>> Create(const SessionOptions& options,
                                                         const GraphDef& graph) {
    WorkerOptions worker;
    worker.task = kLocalTask;
    worker.device_count = options.device_count;
    worker.gpu = options.gpu;
    worker.inter_op_threads = options.inter_op_threads;
    worker.intra_op_threads = options.intra_op_threads;
    // With one inter-op thread a step runs on the thread that called Run.
    worker.parallel_nodes = options.inter_op_threads != 1;
    worker.registry = options.kernel_registry;
    auto session = std::unique_ptr<DirectSession>(new DirectSession());
    ASSIGN_OR_RETURN(session->worker_, Worker::Create(worker));
    session->tasks_ = std::make_unique<LocalTask>(session->worker_.get());
    SessionCoreOptions core;
    core.handle = "local";
    core.workers = session->tasks_.get();
    core.devices = session->worker_->device_names();
    core.default_device = core.devices[0];
    core.allow_soft_placement = options.allow_soft_placement;
    core.log_device_placement = options.log_device_placement;
    core.log = options.log;
    core.kernel_registry = options.kernel_registry;
    ASSIGN_OR_RETURN(session->core_, SessionCore::Create(std::move(core), graph));
    return std::unique_ptr<Session>(std::move(session));
  }

  ~DirectSession() override { (void)Close(); }

  absl::Status Extend(const GraphDef& graph) override { return core_->Extend(graph); }

  absl::StatusOr<std::vector<Tensor>> Run(const RunOptions& options,
                                          const std::vector<std::pair<std::string, Tensor>>& feeds,
                                          const std::vector<std::string>& fetches,
                                          const std::vector<std::string>& targets,
                                          RunMetadata* metadata) override {
    StepRequest request;
    request.options = options;
    request.options.trace = options.trace && metadata != nullptr;
    request.feeds = feeds;
    request.fetches = fetches;
    request.targets = targets;
    StepResult result;
    RETURN_IF_ERROR(core_->Run(request, &result));
    if (request.options.trace) {
      metadata->step_stats = std::move(result.stats);
      metadata->task_clocks = std::move(result.clocks);
    }
    return std::move(result.outputs);
  }

  absl::Status Close() override {
    if (core_ == nullptr) return absl::OkStatus();
    RETURN_IF_ERROR(core_->Close());
    // Variables live in the worker's devices.
    worker_.reset();
    return absl::OkStatus();
  }

 private:
  DirectSession() = default;

  std::unique_ptr<Worker> worker_;
  std::unique_ptr<LocalTask> tasks_;
  std::unique_ptr<SessionCore> core_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Session>> NewDirectSession(const SessionOptions& options,
                                                          const GraphDef& graph) {
  return DirectSession::Create(options, graph);
}

}  // namespace rill
