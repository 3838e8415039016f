#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <deque>
#include <optional>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/notification.h"
#include "graph/status_macros.h"
#include "kernels/registry.h"

namespace rill {

void StepCancellation::Cancel(absl::Status status) {
  absl::MutexLock lock(&mu_);
  if (cancelled_.load(std::memory_order_relaxed)) return;
  status_ = std::move(status);
  cancelled_.store(true, std::memory_order_release);
}

absl::Status StepCancellation::status() const {
  absl::MutexLock lock(&mu_);
  return status_;
}

namespace {

struct Continuation {
  Eigen::ThreadPoolInterface* pool;
  std::function<void()> run;
};
thread_local bool t_continuations_active = false;
thread_local std::deque<Continuation> t_continuations;
thread_local bool t_quick_continuations = false;

}  // namespace

QuickContinuationsHere::QuickContinuationsHere() : was_active_(t_quick_continuations) {
  t_quick_continuations = true;
}

QuickContinuationsHere::~QuickContinuationsHere() { t_quick_continuations = was_active_; }

bool QuickContinuationsHere::Active() { return t_quick_continuations; }

InlineContinuations::InlineContinuations() : outermost_(!t_continuations_active) {
  t_continuations_active = true;
}

InlineContinuations::~InlineContinuations() {
  if (!outermost_) return;
  // What these run may queue more (a reply to this thread's partition), or
  // hand the rest off.
  while (!t_continuations.empty()) {
    std::function<void()> run = std::move(t_continuations.front().run);
    t_continuations.pop_front();
    run();
  }
  t_continuations_active = false;
}

bool InlineContinuations::Defer(Eigen::ThreadPoolInterface* pool, std::function<void()> run) {
  if (!t_continuations_active) return false;
  t_continuations.push_back(Continuation{pool, std::move(run)});
  return true;
}

bool InlineContinuations::AnyQueued() { return !t_continuations.empty(); }

void InlineContinuations::HandOff() {
  std::deque<Continuation> kept;
  for (Continuation& c : t_continuations) {
    if (c.pool == nullptr) {
      kept.push_back(std::move(c));
      continue;
    }
    c.pool->Schedule([run = std::move(c.run)] {
      InlineContinuations scope;
      run();
    });
  }
  t_continuations = std::move(kept);
}

struct Executor::NodeItem {
  std::unique_ptr<OpKernel> kernel;
  const NodeDef* def = nullptr;
  DataTypeVector output_types;
  bool expensive = true;
  bool allows_uninitialized_input = false;
  int32_t input_start = 0;
  int32_t num_inputs = 0;
  int32_t output_start = 0;
  int32_t num_outputs = 0;
  // [begin, end) ranges into out_edges_, control_edges_, deref_inputs_ and
  // node_fetches_.
  int32_t out_edges_begin = 0, out_edges_end = 0;
  int32_t control_begin = 0, control_end = 0;
  int32_t deref_begin = 0, deref_end = 0;
  int32_t fetch_begin = 0, fetch_end = 0;
};

struct Executor::OutEdge {
  int32_t output;    // Of the source node.
  int32_t dst;       // The consuming node.
  int32_t dst_slot;  // Its input slot.
  bool last_use;     // The output's last reader: takes the value.
};

// Per-step state, reused by later steps once a step has finished (every
// slot is empty again then).
struct Executor::Step {
  std::vector<TensorValue> inputs;   // Input slots of every node.
  std::vector<TensorValue> outputs;  // Output slots, filled by the kernels.
  std::unique_ptr<std::atomic<int32_t>[]> pending;
  // Nodes ready or running; the step is over when it drops to 0.
  std::atomic<int32_t> outstanding{0};
  std::optional<StepCancellation> own_cancellation;
  StepCancellation* cancellation = nullptr;
  std::vector<Tensor>* fetched = nullptr;
  int64_t step_id = 0;
  absl::Mutex stats_mu;
  std::vector<NodeExecStats>* stats ABSL_GUARDED_BY(stats_mu) = nullptr;
  bool collect_stats = false;
  Rendezvous* rendezvous = nullptr;
  DoneCallback done;
};

namespace {

int64_t NowMicros() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Clear(TensorValue& value) {
  value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
}

// Moves the value out, leaving `value` empty.
TensorValue Take(TensorValue& value) {
  TensorValue taken{std::move(value.tensor), value.ref, value.ref_mu};
  value.tensor = Tensor();
  value.ref = nullptr;
  value.ref_mu = nullptr;
  return taken;
}

absl::Status WithNode(const OpKernel& kernel, const absl::Status& status) {
  return absl::Status(status.code(), absl::StrFormat("node '%s' (%s): %s", kernel.name(),
                                                     kernel.op(), status.message()));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Executor>> Executor::Create(const Params& params) {
  std::unique_ptr<Executor> executor(new Executor());
  RETURN_IF_ERROR(executor->Build(params));
  return executor;
}

Executor::~Executor() = default;

int Executor::num_nodes() const { return static_cast<int>(items_.size()); }
const NodeDef& Executor::node_def(int i) const { return *items_[i].def; }

absl::Status Executor::Build(const Params& params) {
  device_ = params.device;
  pool_ = params.inter_op_pool;
  parallel_nodes_ = params.parallel_nodes;
  parallel_kernels_ = device_->eigen_cpu()->numThreads() > 1;
  const KernelRegistry& registry =
      params.registry != nullptr ? *params.registry : StandardKernels();

  absl::flat_hash_map<std::pair<int, int>, int> fed;  // (node id, output) -> feed.
  if (!params.feed_names.empty() && params.feed_names.size() != params.feeds.size()) {
    return absl::InvalidArgumentError("feed_names must name every feed");
  }
  for (const TensorEndpoint& feed : params.feeds) {
    if (feed.index < 0 || feed.index >= feed.node->num_outputs()) {
      return absl::InvalidArgumentError(absl::StrFormat("feed %s: node '%s' has %d outputs",
                                                        feed.ToString(), feed.node->name(),
                                                        feed.node->num_outputs()));
    }
    if (!fed.emplace(std::make_pair(feed.node->id(), feed.index), feeds_.size()).second) {
      return absl::InvalidArgumentError(absl::StrFormat("%s fed more than once", feed.ToString()));
    }
    feeds_.push_back(
        Feed{params.feed_names.empty() ? feed.ToString() : params.feed_names[feeds_.size()],
             BaseType(feed.node->output_type(feed.index)),
             feed.node->output_shape(feed.index),
             {}});
  }

  std::vector<const Node*> nodes = params.nodes;
  if (nodes.empty()) nodes.assign(params.graph->nodes().begin(), params.graph->nodes().end());
  // Graph ids are a topological order.
  std::sort(nodes.begin(), nodes.end(),
            [](const Node* a, const Node* b) { return a->id() < b->id(); });
  nodes.erase(std::unique(nodes.begin(), nodes.end()), nodes.end());
  std::erase_if(nodes, [&](const Node* node) {
    if (node->num_outputs() == 0) return false;
    for (int k = 0; k < node->num_outputs(); ++k) {
      if (!fed.contains(std::make_pair(node->id(), k))) return false;
    }
    return true;
  });
  const int n = static_cast<int>(nodes.size());
  std::vector<int32_t> local(params.graph->num_nodes(), -1);
  for (int i = 0; i < n; ++i) local[nodes[i]->id()] = i;

  defs_.reserve(n);
  items_.resize(n);
  costs_ = std::make_unique<KernelCost[]>(n);
  for (int i = 0; i < n; ++i) {
    const Node* node = nodes[i];
    NodeItem& item = items_[i];
    defs_.push_back(node->def());
    item.def = &defs_.back();
    absl::StatusOr<std::unique_ptr<OpKernel>> kernel =
        registry.CreateKernel(*item.def, node->op_def(), node->signature(), device_->device_type());
    if (!kernel.ok()) {
      return absl::Status(kernel.status().code(),
                          absl::StrFormat("node '%s' (%s): %s", node->name(), node->op(),
                                          kernel.status().message()));
    }
    item.kernel = *std::move(kernel);
    item.expensive = item.kernel->IsExpensive();
    item.allows_uninitialized_input = node->op_def().allows_uninitialized_input();
    item.output_types = node->output_types();
    item.input_start = num_input_slots_;
    item.num_inputs = node->num_inputs();
    item.output_start = num_output_slots_;
    item.num_outputs = node->num_outputs();
    num_input_slots_ += item.num_inputs;
    num_output_slots_ += item.num_outputs;
  }

  std::vector<std::vector<OutEdge>> edges_from(n);
  std::vector<std::vector<int32_t>> controls_from(n);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> derefs_of(n);
  std::vector<std::vector<std::pair<int32_t, int32_t>>> fetches_of(n);
  initial_pending_.assign(n, 0);
  for (int i = 0; i < n; ++i) {
    const Node* node = nodes[i];
    for (const Edge* edge : node->in_edges()) {
      const int32_t src = local[edge->src->id()];
      if (edge->IsControl()) {
        if (src < 0) continue;
        controls_from[src].push_back(i);
        ++initial_pending_[i];
        continue;
      }
      const bool ref_input = IsRefType(node->input_type(edge->dst_input));
      const int32_t slot = items_[i].input_start + edge->dst_input;
      if (auto it = fed.find(std::make_pair(edge->src->id(), edge->src_output)); it != fed.end()) {
        if (ref_input) {
          return absl::InvalidArgumentError(
              absl::StrFormat("node '%s' (%s): input %d is a reference and cannot be fed (%s)",
                              node->name(), node->op(), edge->dst_input, feeds_[it->second].name));
        }
        feeds_[it->second].slots.push_back(slot);
        continue;
      }
      if (src < 0) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "node '%s' (%s): input %d comes from '%s', which neither runs nor is fed", node->name(),
            node->op(), edge->dst_input, edge->src->name()));
      }
      edges_from[src].push_back(OutEdge{edge->src_output, i, slot, false});
      ++initial_pending_[i];
      if (!ref_input && IsRefType(edge->src->output_type(edge->src_output))) {
        derefs_of[i].emplace_back(edge->dst_input, src);
      }
    }
  }

  num_fetches_ = static_cast<int>(params.fetches.size());
  output_needed_.assign(num_output_slots_, 0);
  for (int f = 0; f < num_fetches_; ++f) {
    const TensorEndpoint& fetch = params.fetches[f];
    if (fetch.index < 0 || fetch.index >= fetch.node->num_outputs()) {
      return absl::InvalidArgumentError(absl::StrFormat("fetch %s: node '%s' has %d outputs",
                                                        fetch.ToString(), fetch.node->name(),
                                                        fetch.node->num_outputs()));
    }
    if (auto it = fed.find(std::make_pair(fetch.node->id(), fetch.index)); it != fed.end()) {
      fetches_from_feeds_.emplace_back(f, it->second);
      continue;
    }
    const int32_t src = local[fetch.node->id()];
    if (src < 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "fetch %s: node '%s' neither runs nor is fed", fetch.ToString(), fetch.node->name()));
    }
    fetches_of[src].emplace_back(fetch.index, f);
    output_needed_[items_[src].output_start + fetch.index] = 1;
  }

  for (int i = 0; i < n; ++i) {
    NodeItem& item = items_[i];
    std::vector<OutEdge>& edges = edges_from[i];
    std::stable_sort(edges.begin(), edges.end(),
                     [](const OutEdge& a, const OutEdge& b) { return a.output < b.output; });
    for (size_t e = 0; e < edges.size(); ++e) {
      edges[e].last_use = e + 1 == edges.size() || edges[e + 1].output != edges[e].output;
      output_needed_[item.output_start + edges[e].output] = 1;
    }
    item.out_edges_begin = static_cast<int32_t>(out_edges_.size());
    out_edges_.insert(out_edges_.end(), edges.begin(), edges.end());
    item.out_edges_end = static_cast<int32_t>(out_edges_.size());
    item.control_begin = static_cast<int32_t>(control_edges_.size());
    control_edges_.insert(control_edges_.end(), controls_from[i].begin(), controls_from[i].end());
    item.control_end = static_cast<int32_t>(control_edges_.size());
    item.deref_begin = static_cast<int32_t>(deref_inputs_.size());
    deref_inputs_.insert(deref_inputs_.end(), derefs_of[i].begin(), derefs_of[i].end());
    item.deref_end = static_cast<int32_t>(deref_inputs_.size());
    item.fetch_begin = static_cast<int32_t>(node_fetches_.size());
    node_fetches_.insert(node_fetches_.end(), fetches_of[i].begin(), fetches_of[i].end());
    item.fetch_end = static_cast<int32_t>(node_fetches_.size());
    if (initial_pending_[i] == 0) roots_.push_back(i);
  }
  return absl::OkStatus();
}

absl::Status Executor::CheckFeeds(const Args& args) const {
  if (args.feeds.size() != feeds_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("expected %d fed values, got %d", feeds_.size(), args.feeds.size()));
  }
  for (size_t j = 0; j < feeds_.size(); ++j) {
    const Tensor& value = args.feeds[j];
    const Feed& feed = feeds_[j];
    if (!value.IsInitialized()) {
      return absl::InvalidArgumentError(
          absl::StrFormat("the value fed for tensor '%s' holds no data", feed.name));
    }
    if (value.dtype() != feed.dtype) {
      return absl::InvalidArgumentError(
          absl::StrFormat("tensor '%s' has dtype %s, but the value fed for it has dtype %s",
                          feed.name, DataTypeString(feed.dtype), DataTypeString(value.dtype())));
    }
    if (!feed.shape.IsCompatibleWith(value.shape())) {
      return absl::InvalidArgumentError(
          absl::StrFormat("Cannot feed value of shape %s for tensor '%s', which has shape %s",
                          value.shape().DebugString(), feed.name, feed.shape.DebugString()));
    }
  }
  return absl::OkStatus();
}

Executor::Step* Executor::StartStep(const Args& args, std::vector<Tensor>* fetched,
                                    DoneCallback done) const {
  std::unique_ptr<Step> step;
  {
    absl::MutexLock lock(&free_steps_mu_);
    if (!free_steps_.empty()) {
      step = std::move(free_steps_.back());
      free_steps_.pop_back();
    }
  }
  if (step == nullptr) {
    step = std::make_unique<Step>();
    step->inputs.resize(num_input_slots_);
    step->outputs.resize(num_output_slots_);
    step->pending = std::make_unique<std::atomic<int32_t>[]>(items_.size());
  }
  for (size_t i = 0; i < items_.size(); ++i) {
    // Relaxed: the step is not yet shared; starting it publishes these.
    step->pending[i].store(initial_pending_[i], std::memory_order_relaxed);
  }
  step->outstanding.store(static_cast<int32_t>(roots_.size()), std::memory_order_relaxed);
  if (args.cancellation != nullptr) {
    step->cancellation = args.cancellation;
  } else {
    step->own_cancellation.emplace();
    step->cancellation = &*step->own_cancellation;
  }
  step->step_id = args.step_id;
  {
    absl::MutexLock lock(&step->stats_mu);
    step->stats = args.stats;
  }
  step->collect_stats = args.stats != nullptr;
  step->rendezvous = args.rendezvous;
  step->done = std::move(done);
  step->fetched = fetched;
  fetched->assign(num_fetches_, Tensor());
  for (const auto& [fetch, feed] : fetches_from_feeds_) (*fetched)[fetch] = args.feeds[feed];
  for (size_t j = 0; j < feeds_.size(); ++j) {
    for (int32_t slot : feeds_[j].slots) step->inputs[slot].tensor = args.feeds[j];
  }
  return step.release();
}

absl::Status Executor::Run(const Args& args, std::vector<Tensor>* fetched) const {
  absl::Notification finished;
  absl::Status result;
  RunAsyncStartingHere(args, fetched, [&](absl::Status status) {
    result = std::move(status);
    finished.Notify();
  });
  finished.WaitForNotification();
  return result;
}

void Executor::RunAsync(const Args& args, std::vector<Tensor>* fetched, DoneCallback done) const {
  Begin(args, fetched, std::move(done), StartOn::kPool);
}

void Executor::RunAsyncStartingHere(const Args& args, std::vector<Tensor>* fetched,
                                    DoneCallback done) const {
  Begin(args, fetched, std::move(done), StartOn::kThisThread);
}

void Executor::RunAsyncQuickHere(const Args& args, std::vector<Tensor>* fetched,
                                 DoneCallback done) const {
  Begin(args, fetched, std::move(done),
        parallel_nodes_ ? StartOn::kThisThreadQuickOnly : StartOn::kPool);
}

void Executor::Begin(const Args& args, std::vector<Tensor>* fetched, DoneCallback done,
                     StartOn start_on) const {
  if (absl::Status status = CheckFeeds(args); !status.ok()) {
    done(std::move(status));
    return;
  }
  Step* step = StartStep(args, fetched, std::move(done));
  if (roots_.empty()) {
    Finish(step);
    return;
  }
  switch (start_on) {
    case StartOn::kPool:
      return ProcessOnPool(step, ReadyList(roots_.begin(), roots_.end()));
    case StartOn::kThisThread: {
      InlineContinuations scope;
      return Process(step, roots_);
    }
    case StartOn::kThisThreadQuickOnly:
      // No InlineContinuations scope: what another partition readies from
      // here must not wait for (or run on) this thread.
      return ProcessQuick(step, roots_);
  }
}

void Executor::ProcessOnPool(Step* step, ReadyList first) const {
  pool_->Schedule([this, step, first = std::move(first)] {
    InlineContinuations scope;
    Process(step, first);
  });
}

bool Executor::MayRunLong(int32_t id) const {
  const int64_t estimate = costs_[id].EstimateNanos();
  return items_[id].expensive && (estimate == 0 || estimate >= kMinHandOffNanos);
}

void Executor::Process(Step* step, absl::Span<const int32_t> first) const {
  ReadyList ready;
  ReadyList expensive;
  for (int32_t id : first) (items_[id].expensive ? expensive : ready).push_back(id);
  Dispatch(step, &expensive, &ready);
  while (!ready.empty()) {
    const int32_t id = ready.back();
    ready.pop_back();
    int num_ready = 0;
    if (!step->cancellation->cancelled()) {
      // Work queued for this thread should not wait behind a long kernel.
      if (InlineContinuations::AnyQueued() && MayRunLong(id)) InlineContinuations::HandOff();
      const NodeResult result = RunNode(step, id);
      if (result == NodeResult::kPending) {
        // Still outstanding: FinishAsync accounts for it.
        Dispatch(step, &expensive, &ready);
        continue;
      }
      if (result == NodeResult::kDone) num_ready = Propagate(step, id, &ready, &expensive);
    }
    // Count the readied nodes before handing any to another thread, so that
    // the count cannot reach 0 while they are pending.
    const int delta = num_ready - 1;
    if (delta != 0 &&
        // Acq_rel: the thread that brings it to 0 must see every other
        // thread's writes to the step before finishing it.
        step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      Finish(step);
      return;
    }
    Dispatch(step, &expensive, &ready);
  }
}

void Executor::ProcessQuick(Step* step, absl::Span<const int32_t> first) const {
  const auto start = std::chrono::steady_clock::now();
  ReadyList ready;
  ReadyList readied(first.begin(), first.end());
  for (;;) {
    // Only after the readied nodes have been counted (below) may any of
    // them go to another thread, as in Process.
    for (int32_t id : readied) {
      if (MayRunLong(id)) {
        ProcessOnPool(step, ReadyList{id});
      } else {
        ready.push_back(id);
      }
    }
    readied.clear();
    if (ready.empty()) return;
    if (std::chrono::steady_clock::now() - start >= std::chrono::nanoseconds(kQuickRunBudgetNanos)) {
      return ProcessOnPool(step, std::move(ready));
    }
    const int32_t id = ready.back();
    ready.pop_back();
    int num_ready = 0;
    if (!step->cancellation->cancelled()) {
      const NodeResult result = RunNode(step, id);
      if (result == NodeResult::kPending) continue;  // FinishAsync accounts for it.
      if (result == NodeResult::kDone) num_ready = Propagate(step, id, &readied, &readied);
    }
    const int delta = num_ready - 1;
    // Acq_rel: as in Process.
    if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
      return Finish(step);
    }
  }
}

void Executor::Dispatch(Step* step, ReadyList* expensive, ReadyList* ready) const {
  for (size_t j = 0; j < expensive->size(); ++j) {
    const int32_t id = (*expensive)[j];
    // With nothing cheap left to do here, this thread runs the last
    // expensive node itself rather than going idle. A node not yet measured
    // (estimate 0) is assumed worth the hand-off.
    if (pool_ == nullptr || !parallel_nodes_ || !MayRunLong(id) ||
        (j + 1 == expensive->size() && ready->empty())) {
      ready->push_back(id);
    } else {
      ProcessOnPool(step, ReadyList{id});
    }
  }
  expensive->clear();
}

// The state of an async kernel between ComputeAsync and its callback.
struct Executor::AsyncRun {
  explicit AsyncRun(const KernelContext::Frame& frame) : ctx(frame) {}
  KernelContext ctx;
  int64_t start_micros = 0;
  absl::Status status;
  // kRunning until ComputeAsync returns or the callback runs, whichever is
  // first; the second one to arrive finishes the node.
  static constexpr int kRunning = 0, kCallbackFirst = 1, kReturnedFirst = 2;
  std::atomic<int> phase{kRunning};
};

Executor::NodeResult Executor::RunNode(Step* step, int32_t id) const {
  const NodeItem& item = items_[id];
  TensorValue* inputs = step->inputs.data() + item.input_start;
  TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t d = item.deref_begin; d < item.deref_end; ++d) {
    const auto [input, src] = deref_inputs_[d];
    TensorValue& value = inputs[input];
    Tensor current;
    {
      absl::MutexLock lock(value.ref_mu);
      current = *value.ref;
    }
    if (!current.IsInitialized() && !item.allows_uninitialized_input) {
      Fail(step, item,
           absl::FailedPreconditionError(absl::StrFormat("Attempting to use uninitialized value %s",
                                                         items_[src].def->name())));
      return NodeResult::kFailed;
    }
    value = TensorValue{std::move(current)};
  }

  const int64_t start_micros = step->collect_stats ? NowMicros() : 0;
  KernelContext::Frame frame;
  frame.node = item.def;
  frame.inputs = absl::MakeConstSpan(inputs, item.num_inputs);
  frame.outputs = absl::MakeSpan(outputs, item.num_outputs);
  frame.output_types = item.output_types;
  frame.allocator = device_->allocator();
  frame.step_id = step->step_id;
  frame.resource_manager = device_->resource_manager();
  frame.cancelled = step->cancellation->flag();
  frame.rendezvous = step->rendezvous;
  absl::Status status;
  if (const AsyncOpKernel* async = item.kernel->AsAsync(); async != nullptr) {
    frame.eigen_cpu = device_->eigen_cpu();
    auto* run = new AsyncRun(frame);
    run->start_micros = start_micros;
    async->ComputeAsync(run->ctx, [this, step, id, run](absl::Status done_status) {
      run->status = std::move(done_status);
      int expected = AsyncRun::kRunning;
      // Acq_rel: whoever finishes the node must see the other's writes.
      if (run->phase.compare_exchange_strong(expected, AsyncRun::kCallbackFirst,
                                             std::memory_order_acq_rel)) {
        return;  // Finished inline; RunNode carries on.
      }
      const bool ok = FinishNode(step, id, std::move(run->status), run->start_micros);
      delete run;
      FinishAsync(step, id, ok);
    });
    int expected = AsyncRun::kRunning;
    if (run->phase.compare_exchange_strong(expected, AsyncRun::kReturnedFirst,
                                           std::memory_order_acq_rel)) {
      return NodeResult::kPending;
    }
    status = std::move(run->status);
    delete run;
  } else if (item.expensive) {
    KernelCost& cost = costs_[id];
    const bool parallel = parallel_kernels_ && cost.UseParallel();
    frame.eigen_cpu = parallel ? device_->eigen_cpu() : device_->eigen_cpu_serial();
    const auto start = std::chrono::steady_clock::now();
    {
      KernelContext ctx(frame);
      status = item.kernel->Compute(ctx);
    }
    cost.Record(parallel, std::chrono::duration_cast<std::chrono::nanoseconds>(
                              std::chrono::steady_clock::now() - start)
                              .count());
  } else {
    frame.eigen_cpu = device_->eigen_cpu();
    KernelContext ctx(frame);
    status = item.kernel->Compute(ctx);
  }
  return FinishNode(step, id, std::move(status), start_micros) ? NodeResult::kDone
                                                               : NodeResult::kFailed;
}

bool Executor::FinishNode(Step* step, int32_t id, absl::Status status, int64_t start_micros) const {
  const NodeItem& item = items_[id];
  TensorValue* inputs = step->inputs.data() + item.input_start;
  TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t i = 0; i < item.num_inputs; ++i) Clear(inputs[i]);
  if (status.ok()) {
    for (int32_t k = 0; k < item.num_outputs; ++k) {
      if (output_needed_[item.output_start + k] && !outputs[k].is_ref() &&
          !outputs[k].tensor.IsInitialized()) {
        status = absl::InternalError(absl::StrFormat("the kernel did not set output %d", k));
        break;
      }
    }
  }
  if (status.ok() && step->collect_stats) RecordStats(step, item, start_micros);
  if (status.ok() && FetchOutputs(step, item)) return true;
  if (!status.ok()) Fail(step, item, status);
  for (int32_t k = 0; k < item.num_outputs; ++k) Clear(outputs[k]);
  return false;
}

void Executor::FinishAsync(Step* step, int32_t id, bool ok) const {
  ReadyList ready;
  ReadyList expensive;
  const int num_ready = ok ? Propagate(step, id, &ready, &expensive) : 0;
  const int delta = num_ready - 1;
  // Acq_rel: as in Process.
  if (delta != 0 && step->outstanding.fetch_add(delta, std::memory_order_acq_rel) + delta == 0) {
    Finish(step);
    return;
  }
  if (num_ready == 0) return;
  ready.insert(ready.end(), expensive.begin(), expensive.end());
  // The callback may run inside another node's Send, on another
  // partition's thread: the readied nodes continue once that thread is
  // done with its own work, or on the pool.
  if (InlineContinuations::Defer(pool_, [this, step, ready] { Process(step, ready); })) return;
  if (QuickContinuationsHere::Active() && pool_ != nullptr && parallel_nodes_) {
    return ProcessQuick(step, ready);
  }
  if (pool_ == nullptr) {
    Process(step, ready);
  } else {
    ProcessOnPool(step, std::move(ready));
  }
}

void Executor::Fail(Step* step, const NodeItem& item, const absl::Status& status) const {
  const absl::Status with_node = WithNode(*item.kernel, status);
  if (step->rendezvous != nullptr) step->rendezvous->StartAbort(with_node);
  step->cancellation->Cancel(with_node);
}

bool Executor::FetchOutputs(Step* step, const NodeItem& item) const {
  const TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t f = item.fetch_begin; f < item.fetch_end; ++f) {
    const auto [output, fetch] = node_fetches_[f];
    const TensorValue& value = outputs[output];
    if (!value.is_ref()) {
      (*step->fetched)[fetch] = value.tensor;
      continue;
    }
    // A snapshot, so that later steps updating the variable do not change
    // what this step returned.
    Tensor snapshot;
    {
      absl::MutexLock lock(value.ref_mu);
      snapshot = value.ref->DeepCopy();
    }
    if (!snapshot.IsInitialized()) {
      Fail(step, item,
           absl::FailedPreconditionError(
               absl::StrFormat("Attempting to use uninitialized value %s", item.def->name())));
      return false;
    }
    (*step->fetched)[fetch] = std::move(snapshot);
  }
  return true;
}

int Executor::Propagate(Step* step, int32_t id, ReadyList* cheap, ReadyList* expensive) const {
  const NodeItem& item = items_[id];
  TensorValue* outputs = step->outputs.data() + item.output_start;
  int num_ready = 0;
  const auto release = [&](int32_t dst) {
    // Acq_rel: the last producer to decrement runs `dst` and must see the
    // other producers' writes to its input slots.
    if (step->pending[dst].fetch_sub(1, std::memory_order_acq_rel) == 1) {
      (items_[dst].expensive ? expensive : cheap)->push_back(dst);
      ++num_ready;
    }
  };
  for (int32_t e = item.out_edges_begin; e < item.out_edges_end; ++e) {
    const OutEdge& edge = out_edges_[e];
    TensorValue& output = outputs[edge.output];
    if (edge.last_use) {
      step->inputs[edge.dst_slot] = Take(output);
    } else {
      step->inputs[edge.dst_slot] = output;
    }
    release(edge.dst);
  }
  for (int32_t c = item.control_begin; c < item.control_end; ++c) release(control_edges_[c]);
  // Outputs nobody reads (and fetched ones) are released now.
  for (int32_t k = 0; k < item.num_outputs; ++k) Clear(outputs[k]);
  return num_ready;
}

void Executor::RecordStats(Step* step, const NodeItem& item, int64_t start_micros) const {
  NodeExecStats stats;
  stats.node_name = item.def->name();
  stats.op = item.def->op();
  stats.device = device_->name();
  stats.start_micros = start_micros;
  stats.end_micros = NowMicros();
  const TensorValue* outputs = step->outputs.data() + item.output_start;
  for (int32_t k = 0; k < item.num_outputs; ++k) {
    if (!outputs[k].is_ref())
      stats.output_bytes += static_cast<int64_t>(outputs[k].tensor.TotalBytes());
  }
  absl::MutexLock lock(&step->stats_mu);
  step->stats->push_back(std::move(stats));
}

void Executor::Finish(Step* step) const {
  const absl::Status status = step->cancellation->status();
  if (!status.ok()) {
    // Nodes that never ran left values in their input slots.
    for (TensorValue& value : step->inputs) Clear(value);
    step->fetched->clear();
  }
  DoneCallback done = std::move(step->done);
  step->done = nullptr;
  step->own_cancellation.reset();
  step->cancellation = nullptr;
  step->rendezvous = nullptr;
  step->fetched = nullptr;
  {
    absl::MutexLock lock(&free_steps_mu_);
    free_steps_.emplace_back(step);
  }
  // The executor may be gone once `done` has run.
  done(status);
}

}  // namespace rill
