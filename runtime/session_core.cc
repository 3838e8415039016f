#include "runtime/session_core.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"
#include "kernels/timer.h"
#include "ops/registry.h"
#include "runtime/executor.h"
#include "runtime/partition_step.h"
#include "runtime/run_signature.h"

namespace rill {
namespace {

// Registering a plan's graphs is quick; a worker that takes longer is
// treated as gone.
constexpr absl::Duration kControlTimeout = absl::Seconds(30);

// The caller's names as given, with separators no name contains, so that
// different lists never make the same key.
std::string NamesKey(const StepRequest& request) {
  std::string key;
  for (const auto& feed : request.feeds) key.append(feed.first).push_back('\x1f');
  key.push_back('\x1e');
  for (const std::string& fetch : request.fetches) key.append(fetch).push_back('\x1f');
  key.push_back('\x1e');
  for (const std::string& target : request.targets) key.append(target).push_back('\x1f');
  return key;
}

absl::StatusOr<RunSignature> Resolve(const Graph& graph, const StepRequest& request) {
  std::vector<std::string> feeds;
  feeds.reserve(request.feeds.size());
  for (const auto& feed : request.feeds) feeds.push_back(feed.first);
  return ResolveNames(graph, feeds,
                      std::vector<std::string>(request.fetches.begin(), request.fetches.end()),
                      std::vector<std::string>(request.targets.begin(), request.targets.end()));
}

}  // namespace

// The registered graphs of one Run signature, one per task it touches.
struct SessionCore::Plan {
  struct Part {
    WorkerInterface* worker = nullptr;
    std::string task;
    std::string graph_handle;
    std::vector<int> feeds;    // Index into the signature's feeds, per registered feed.
    std::vector<int> fetches;  // Index into the signature's fetches, per registered fetch.
  };
  // Other tasks' parts first: a step starts its own task's part last, since
  // that one may run quick nodes on the starting thread before returning.
  std::vector<Part> parts;
  struct Feed {
    std::string name;  // "node:k", as errors name it.
    DataType dtype;
    PartialTensorShape shape;
  };
  std::vector<Feed> feeds;  // Per signature feed.
  int num_fetches = 0;
  std::string key;  // The signature's, in plans_.
  // Half the shortest time a worker keeps a graph no step runs: a plan
  // idle this long is registered again before its next step.
  absl::Duration renew_after = absl::InfiniteDuration();
  // When a step last started, Unix nanoseconds.
  mutable std::atomic<int64_t> last_started{0};

  bool Stale(absl::Time now) const {
    return renew_after != absl::InfiniteDuration() &&
           now - absl::FromUnixNanos(last_started.load(std::memory_order_relaxed)) > renew_after;
  }
};

// A plan and how one list of names, in the caller's order, maps onto it.
struct SessionCore::Resolved {
  std::shared_ptr<const Plan> plan;
  std::vector<int> feed_order;  // Per signature feed: the caller's feed.
  std::vector<int> fetch_of;    // Per caller fetch: the signature's fetch.
};

// One step in flight.
struct SessionCore::Step {
  std::shared_ptr<const Resolved> resolved;
  StepResult* result = nullptr;
  std::function<void(absl::Status)> done;
  size_t num_calls = 0;
  std::unique_ptr<RunGraphCall[]> calls;  // One per plan part.
  std::atomic<int> parts_remaining{0};
  // The parts together hold one reference, the deadline timer another.
  std::atomic<int> refs{1};
  Timer::Id timer = 0;
  absl::Mutex mu;
  absl::Status status ABSL_GUARDED_BY(mu);  // The first error.
};

SessionCore::SessionCore(SessionCoreOptions options, DeviceSet device_set)
    : options_(std::move(options)),
      next_step_id_(options_.first_step_id),
      devices_(options_.devices),
      device_set_(std::move(device_set)) {}

absl::StatusOr<std::unique_ptr<SessionCore>> SessionCore::Create(SessionCoreOptions options,
                                                                 const GraphDef& graph) {
  ASSIGN_OR_RETURN(DeviceSet device_set, DeviceSet::Create(options.devices));
  auto core =
      std::unique_ptr<SessionCore>(new SessionCore(std::move(options), std::move(device_set)));
  RETURN_IF_ERROR(core->Extend(graph));
  return core;
}

SessionCore::~SessionCore() { (void)Close(); }

absl::Status SessionCore::Extend(const GraphDef& graph) {
  // Outside the locks: finding a task's devices waits for it.
  std::vector<std::string> found;
  if (options_.find_devices != nullptr) found = options_.find_devices(graph);
  absl::MutexLock build_lock(&build_mu_);
  if (!found.empty()) {
    std::vector<std::string> devices = devices_;
    for (std::string& device : found) {
      if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
        devices.push_back(std::move(device));
      }
    }
    ASSIGN_OR_RETURN(device_set_, DeviceSet::Create(devices));
    devices_ = std::move(devices);
  }
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
  // Versions decide how some attrs read (a legacy Placeholder's shape): the
  // first graph that has them sets them for the session.
  if (!merged.has_versions() && graph.has_versions()) *merged.mutable_versions() = graph.versions();
  merged.mutable_node()->MergeFrom(graph.node());
  merged.mutable_library()->MergeFrom(graph.library());
  ASSIGN_OR_RETURN(std::unique_ptr<Graph> imported, ImportGraphDef(merged, StandardOps()));
  graph_def_ = std::move(merged);
  graph_ = std::move(imported);
  return absl::OkStatus();
}

std::vector<std::string> SessionCore::devices() {
  absl::MutexLock lock(&build_mu_);
  return devices_;
}

absl::Status SessionCore::Run(const StepRequest& request, StepResult* result) {
  absl::Notification finished;
  absl::Status status;
  RunStep(request, result, [&](absl::Status s) {
    status = std::move(s);
    finished.Notify();
  });
  finished.WaitForNotification();
  return status;
}

void SessionCore::RunStep(const StepRequest& request, StepResult* result,
                          std::function<void(absl::Status)> done) {
  absl::StatusOr<std::shared_ptr<const Resolved>> resolved = Lookup(request);
  // A plan idle for long may have been forgotten by a worker: it is built
  // and registered again, as a new signature is.
  if (resolved.ok() && *resolved != nullptr && (*resolved)->plan->Stale(absl::Now())) {
    Forget((*resolved)->plan);
    *resolved = nullptr;
  }
  if (!resolved.ok()) return done(resolved.status());
  if (*resolved != nullptr) return Start(*std::move(resolved), request, result, std::move(done));
  // A new signature: building its plan waits for the workers to register
  // its graphs.
  auto build = [this, &request, result, done = std::move(done)]() mutable {
    absl::StatusOr<std::shared_ptr<const Resolved>> built = Build(request, &result->placement_log);
    if (!built.ok()) return done(built.status());
    Start(*std::move(built), request, result, std::move(done));
  };
  if (options_.run_blocking == nullptr) return build();
  options_.run_blocking(std::move(build));
}

absl::StatusOr<std::shared_ptr<const SessionCore::Resolved>> SessionCore::Lookup(
    const StepRequest& request) {
  const std::string key = NamesKey(request);
  {
    absl::ReaderMutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("Session has been closed.");
    if (auto it = resolved_.find(key); it != resolved_.end()) return it->second;
  }
  absl::MutexLock lock(&mu_);
  if (closed_) return absl::CancelledError("Session has been closed.");
  // Bad names fail here, before anything is built.
  ASSIGN_OR_RETURN(const RunSignature sig, Resolve(*graph_, request));
  auto it = plans_.find(sig.key);
  if (it == plans_.end()) return nullptr;
  auto resolved =
      std::make_shared<const Resolved>(Resolved{it->second, sig.feed_order, sig.fetch_of});
  resolved_.emplace(key, resolved);
  return resolved;
}

void SessionCore::Forget(const std::shared_ptr<const Plan>& plan) {
  absl::MutexLock lock(&mu_);
  auto it = plans_.find(plan->key);
  if (it == plans_.end() || it->second != plan) return;  // Another step forgot it first.
  plans_.erase(it);
  absl::erase_if(resolved_, [&](const auto& entry) { return entry.second->plan == plan; });
  // Not deregistered: a step that took the plan just before may still
  // start it. The workers forget its graphs once no step runs them.
}

absl::StatusOr<std::shared_ptr<const SessionCore::Resolved>> SessionCore::Build(
    const StepRequest& request, std::string* placement_log) {
  absl::MutexLock build_lock(&build_mu_);
  std::shared_ptr<const Plan> plan;
  RunSignature sig;
  PartitionedStep partitioned;
  auto built = std::make_shared<Plan>();
  {
    absl::ReaderMutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("Session has been closed.");
    ASSIGN_OR_RETURN(sig, Resolve(*graph_, request));
    if (auto it = plans_.find(sig.key); it != plans_.end()) {
      plan = it->second;  // Built while this waited for build_mu_.
    } else {
      PartitionStepParams params;
      params.graph = graph_.get();
      ASSIGN_OR_RETURN(params.nodes, Prune(*graph_, sig));
      params.feeds = sig.feeds;
      params.fetches = sig.fetches;
      RETURN_IF_ERROR(PlaceNewNodes());
      params.device_set = &device_set_;
      params.placed = &placed_;
      params.log_placement = options_.log_device_placement;
      ASSIGN_OR_RETURN(partitioned, PartitionStep(params));
      for (const TensorEndpoint& feed : sig.feeds) {
        built->feeds.push_back(Plan::Feed{feed.ToString(),
                                          BaseType(feed.node->output_type(feed.index)),
                                          feed.node->output_shape(feed.index)});
      }
      built->num_fetches = static_cast<int>(sig.fetches.size());
      built->key = sig.key;
    }
  }
  if (plan == nullptr) {
    // Registration waits for other tasks: not under mu_, which steps of
    // built plans take.
    std::string log = std::move(partitioned.placement_log);
    RETURN_IF_ERROR(Register(std::move(partitioned), built.get()));
    if (!log.empty()) {
      if (options_.placement_log != nullptr) {
        std::fputs(log.c_str(), options_.placement_log);
        std::fflush(options_.placement_log);
      }
      *placement_log = std::move(log);
    }
    plan = std::move(built);
  }
  auto resolved = std::make_shared<const Resolved>(Resolved{plan, sig.feed_order, sig.fetch_of});
  absl::MutexLock lock(&mu_);
  if (closed_) {
    Deregister(*plan);
    return absl::CancelledError("Session has been closed.");
  }
  plans_.emplace(sig.key, plan);
  resolved_.emplace(NamesKey(request), resolved);
  return resolved;
}

absl::Status SessionCore::PlaceNewNodes() {
  if (placed_.size() == static_cast<size_t>(graph_->num_nodes())) return absl::OkStatus();
  PlacerOptions placer;
  placer.allow_soft_placement = options_.allow_soft_placement;
  placer.default_device = options_.default_device;
  placer.kernels = options_.kernel_registry;
  for (const auto& [name, placement] : placed_) placer.assigned[name] = placement.device;
  ASSIGN_OR_RETURN(const Placement placement, PlaceGraph(*graph_, device_set_, placer));
  for (const Node* node : graph_->nodes()) {
    placed_.try_emplace(node->name(), placement.nodes[node->id()]);
  }
  return absl::OkStatus();
}

absl::Status SessionCore::Register(PartitionedStep partitioned, Plan* plan) {
  std::map<std::string, RegisterGraphRequest> requests;  // By task.
  std::map<std::string, Plan::Part> parts;
  for (auto& [device, def] : partitioned.partitions) {
    ASSIGN_OR_RETURN(const std::string task, TaskOfDevice(device));
    RegisterGraphRequest& request = requests[task];
    request.set_session_handle(options_.handle);
    (*request.mutable_partitions())[device] = std::move(def);
    Plan::Part& part = parts[task];
    part.task = task;
    const PartitionIo& io = partitioned.io[device];
    for (size_t k = 0; k < io.feeds.size(); ++k) {
      request.add_feeds(io.feed_nodes[k]);
      part.feeds.push_back(io.feeds[k]);
    }
    for (size_t k = 0; k < io.fetches.size(); ++k) {
      request.add_fetches(io.fetch_names[k]);
      part.fetches.push_back(io.fetches[k]);
    }
  }
  // Every task registers at once; the plan is complete when all have.
  struct Registration {
    absl::Notification done;
    absl::StatusOr<GraphRegistration> handle;
  };
  std::vector<std::unique_ptr<Registration>> registrations;
  const absl::Time deadline = absl::Now() + kControlTimeout;
  for (auto& [task, part] : parts) {
    auto& registration = registrations.emplace_back(std::make_unique<Registration>());
    absl::StatusOr<WorkerInterface*> worker = options_.workers->GetWorker(task);
    if (!worker.ok()) {
      registration->handle = worker.status();
      registration->done.Notify();
      continue;
    }
    part.worker = *worker;
    Registration* raw = registration.get();
    part.worker->RegisterGraph(requests[task], deadline,
                               [raw](absl::StatusOr<GraphRegistration> handle) {
                                 raw->handle = std::move(handle);
                                 raw->done.Notify();
                               });
  }
  absl::Status status;
  size_t r = 0;
  for (auto& [task, part] : parts) {
    Registration& registration = *registrations[r++];
    registration.done.WaitForNotification();
    if (registration.handle.ok()) {
      part.graph_handle = std::move(registration.handle->handle);
      plan->renew_after = std::min(plan->renew_after, registration.handle->idle_timeout / 2);
    } else if (status.ok()) {
      status = registration.handle.status();
    }
  }
  for (bool in_process : {false, true}) {
    for (auto& [task, part] : parts) {
      if (part.worker != nullptr && part.worker->in_process() == in_process) {
        plan->parts.push_back(std::move(part));
      }
    }
  }
  if (!status.ok()) Deregister(*plan);
  plan->last_started.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  return status;
}

void SessionCore::Deregister(const Plan& plan) {
  for (const Plan::Part& part : plan.parts) {
    if (!part.graph_handle.empty()) part.worker->DeregisterGraph(part.graph_handle);
  }
}

void SessionCore::Start(std::shared_ptr<const Resolved> resolved, const StepRequest& request,
                        StepResult* result, std::function<void(absl::Status)> done) {
  const Plan& plan = *resolved->plan;
  plan.last_started.store(absl::ToUnixNanos(absl::Now()), std::memory_order_relaxed);
  // Checked here, naming the caller's tensors, before any task runs.
  for (size_t j = 0; j < plan.feeds.size(); ++j) {
    const Plan::Feed& feed = plan.feeds[j];
    const Tensor& value = request.feeds[resolved->feed_order[j]].second;
    if (absl::Status status = CheckFedValue(feed.name, feed.dtype, feed.shape, value);
        !status.ok()) {
      return done(std::move(status));
    }
  }
  auto* step = new Step();
  step->result = result;
  step->done = std::move(done);
  const size_t n = plan.parts.size();
  step->num_calls = n;
  step->calls = std::make_unique<RunGraphCall[]>(n);
  // Relaxed: the id only needs to be unique.
  const uint64_t step_id = next_step_id_.fetch_add(1, std::memory_order_relaxed);
  for (size_t p = 0; p < n; ++p) {
    const Plan::Part& part = plan.parts[p];
    RunGraphCall& call = step->calls[p];
    call.graph_handle = part.graph_handle;
    call.step_id = step_id;
    call.trace = request.options.trace;
    call.start = request.start;
    call.feeds.reserve(part.feeds.size());
    for (int j : part.feeds) call.feeds.push_back(request.feeds[resolved->feed_order[j]].second);
  }
  step->resolved = std::move(resolved);
  step->parts_remaining.store(static_cast<int>(n), std::memory_order_relaxed);
  {
    absl::MutexLock lock(&running_mu_);
    if (closing_) {
      done = std::move(step->done);
      delete step;
      return done(absl::CancelledError("Session has been closed."));
    }
    running_.insert(step);
  }
  if (request.options.timeout_in_ms > 0) {
    step->refs.store(2, std::memory_order_relaxed);
    const int64_t timeout = request.options.timeout_in_ms;
    step->timer = Timer::Default().Schedule(absl::Now() + absl::Milliseconds(timeout), [this, step,
                                                                                        timeout] {
      Abort(step, absl::DeadlineExceededError(absl::StrFormat(
                      "Run did not finish within %d ms (RunOptions.timeout_in_ms); the step was "
                      "cancelled on every task",
                      timeout)));
      Release(step);
    });
  }
  if (n == 0) return PartDone(step, absl::OkStatus(), /*counted=*/false);
  // `step` may be gone once the last part has started.
  for (size_t p = 0; p < n; ++p) {
    const Plan::Part& part = plan.parts[p];
    part.worker->RunGraph(&step->calls[p],
                          [this, step](absl::Status status) { PartDone(step, std::move(status)); });
  }
}

void SessionCore::Abort(Step* step, const absl::Status& status) {
  {
    absl::MutexLock lock(&step->mu);
    if (!step->status.ok()) return;
    step->status = status;
  }
  // The step cannot finish meanwhile: the caller holds a part or the timer.
  for (size_t q = 0; q < step->num_calls; ++q) step->calls[q].cancellation.Cancel(status);
}

void SessionCore::PartDone(Step* step, absl::Status status, bool counted) {
  if (!status.ok()) Abort(step, status);
  // Acq_rel: the last part to finish reads what the others wrote.
  if (counted && step->parts_remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  // The timer's reference is dropped here when it will not run; when it
  // has run or is running, the timer drops it.
  if (step->timer != 0 && Timer::Default().Cancel(step->timer)) Release(step);
  Release(step);
}

void SessionCore::Release(Step* step) {
  // Acq_rel: as in PartDone.
  if (step->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) Finish(step);
}

void SessionCore::Finish(Step* step) {
  absl::Status status;
  {
    absl::MutexLock lock(&step->mu);
    status = step->status;
  }
  const Resolved& resolved = *step->resolved;
  const Plan& plan = *resolved.plan;
  StepResult& result = *step->result;
  if (status.ok()) {
    std::vector<Tensor> fetched(plan.num_fetches);
    for (size_t p = 0; p < step->num_calls && status.ok(); ++p) {
      RunGraphCall& call = step->calls[p];
      const Plan::Part& part = plan.parts[p];
      if (call.fetched.size() != part.fetches.size()) {
        status =
            absl::InternalError(absl::StrFormat("%s returned %d tensors for %d fetches", part.task,
                                                call.fetched.size(), part.fetches.size()));
        break;
      }
      for (size_t f = 0; f < part.fetches.size(); ++f) {
        fetched[part.fetches[f]] = std::move(call.fetched[f]);
      }
    }
    result.outputs.clear();
    result.outputs.reserve(resolved.fetch_of.size());
    for (int f : resolved.fetch_of) result.outputs.push_back(fetched[f]);
    for (size_t p = 0; p < step->num_calls; ++p) {
      for (NodeExecStats& node : step->calls[p].stats) result.stats.push_back(std::move(node));
    }
  }
  std::function<void(absl::Status)> done = std::move(step->done);
  {
    absl::MutexLock lock(&running_mu_);
    running_.erase(step);
  }
  delete step;
  done(std::move(status));
}

absl::Status SessionCore::Close() {
  std::vector<std::shared_ptr<const Plan>> plans;
  {
    absl::MutexLock lock(&mu_);
    if (closed_) return absl::OkStatus();
    closed_ = true;
    for (auto& [key, plan] : plans_) plans.push_back(std::move(plan));
    plans_.clear();
    resolved_.clear();
  }
  // A step whose last reference is gone is finishing already; the others
  // are held while they are cancelled, outside the lock, since cancelling
  // may finish steps.
  std::vector<Step*> held;
  {
    absl::MutexLock lock(&running_mu_);
    closing_ = true;
    for (Step* step : running_) {
      int refs = step->refs.load(std::memory_order_relaxed);
      while (refs > 0 &&
             !step->refs.compare_exchange_weak(refs, refs + 1, std::memory_order_acq_rel)) {
      }
      if (refs > 0) held.push_back(step);
    }
  }
  for (Step* step : held) {
    Abort(step, absl::CancelledError("Session has been closed."));
    Release(step);
  }
  {
    absl::MutexLock lock(&running_mu_);
    running_mu_.Await(absl::Condition(
        +[](absl::flat_hash_set<Step*>* running) { return running->empty(); }, &running_));
  }
  for (const auto& plan : plans) Deregister(*plan);
  return absl::OkStatus();
}

}  // namespace rill
