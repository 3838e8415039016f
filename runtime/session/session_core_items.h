// The session core's plans and the steps in flight over them, shared by
// the files that build plans (session_core.cc) and run steps (step_run.cc).
#ifndef RILL_RUNTIME_SESSION_SESSION_CORE_ITEMS_H_
#define RILL_RUNTIME_SESSION_SESSION_CORE_ITEMS_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/time/time.h"
#include "graph/tensor_shape.h"
#include "graph/types.h"
#include "kernels/framework/timer.h"
#include "runtime/exec/step_join.h"
#include "runtime/session/session_core.h"
#include "runtime/session/worker_interface.h"

namespace rill {

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
struct SessionCore::StepRun {
  std::shared_ptr<const Resolved> resolved;
  StepResult* result = nullptr;
  std::function<void(absl::Status)> done;
  size_t num_calls = 0;
  std::unique_ptr<RunGraphCall[]> calls;  // One per plan part.
  StepJoin join;                          // Of the calls.
  // The calls together hold one reference, the deadline timer another.
  std::atomic<int> refs{1};
  Timer::Id timer = 0;
};

}  // namespace rill

#endif  // RILL_RUNTIME_SESSION_SESSION_CORE_ITEMS_H_
