#include "runtime/session/session_core.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <utility>

#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/device_spec.h"
#include "graph/status_macros.h"
#include "ops/registry.h"
#include "runtime/exec/executor.h"
#include "runtime/session/partition_plan.h"
#include "runtime/session/run_signature.h"
#include "runtime/session/session_core_items.h"

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
  PartitionPlan partitioned;
  auto built = std::make_shared<Plan>();
  {
    absl::ReaderMutexLock lock(&mu_);
    if (closed_) return absl::CancelledError("Session has been closed.");
    ASSIGN_OR_RETURN(sig, Resolve(*graph_, request));
    if (auto it = plans_.find(sig.key); it != plans_.end()) {
      plan = it->second;  // Built while this waited for build_mu_.
    } else {
      PartitionPlanParams params;
      params.graph = graph_.get();
      ASSIGN_OR_RETURN(params.nodes, Prune(*graph_, sig));
      params.feeds = sig.feeds;
      params.fetches = sig.fetches;
      RETURN_IF_ERROR(PlaceNewNodes());
      params.device_set = &device_set_;
      params.placed = &placed_;
      params.log_placement = options_.log_device_placement;
      ASSIGN_OR_RETURN(partitioned, MakePartitionPlan(params));
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
      OrDefault(options_.log)->WriteLines(log);
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

absl::Status SessionCore::Register(PartitionPlan partitioned, Plan* plan) {
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
  std::vector<StepRun*> held;
  {
    absl::MutexLock lock(&running_mu_);
    closing_ = true;
    for (const auto& entry : running_) {
      StepRun* const step = entry.first;
      int refs = step->refs.load(std::memory_order_relaxed);
      while (refs > 0 &&
             !step->refs.compare_exchange_weak(refs, refs + 1, std::memory_order_acq_rel)) {
      }
      if (refs > 0) held.push_back(step);
    }
  }
  for (StepRun* step : held) {
    Abort(step, absl::CancelledError("Session has been closed."));
    Release(step);
  }
  {
    absl::MutexLock lock(&running_mu_);
    running_mu_.Await(absl::Condition(
        +[](absl::flat_hash_map<StepRun*, std::unique_ptr<StepRun>>* running) {
          return running->empty();
        },
        &running_));
  }
  for (const auto& plan : plans) Deregister(*plan);
  return absl::OkStatus();
}

}  // namespace rill
