// FIFOQueue: the resource behind FIFOQueueV2, a first-in first-out queue of
// tuples of tensors, bounded or not, whose waiting requests hold no thread.
#ifndef RILL_KERNELS_CPU_FIFO_QUEUE_H_
#define RILL_KERNELS_CPU_FIFO_QUEUE_H_

#include <cstdint>
#include <deque>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "graph/tensor.h"
#include "kernels/framework/cancellation.h"
#include "kernels/framework/resource_mgr.h"
#include "kernels/framework/timer.h"

namespace rill {

// One element of a queue, or one batch of elements stacked along a first
// dimension: a tensor per component.
using QueueTuple = std::vector<Tensor>;

// How long a request that cannot complete at once may wait: it fails
// DEADLINE_EXCEEDED ("Timed out waiting for notification") after
// `timeout_ms`, and CANCELLED when its step is cancelled.
struct QueueWait {
  // < 0: without limit; 0: fail at once unless it completes now.
  int64_t timeout_ms = -1;
  // The step's cancellation; null: none.
  StepCancellation* cancellation = nullptr;
};

// Requests are served in arrival order, enqueues and dequeues each in their
// own line: a request waits while the one ahead of it waits.
//  - An enqueue of several elements adds them as room appears, so that a
//    batch larger than the capacity gets through. If it then fails
//    (timeout, cancellation, a close that cancels pending enqueues) the
//    elements already added stay, as in TensorFlow.
//  - A dequeue of n takes elements as they arrive but puts them back at the
//    front if it then fails, so that it removes all n or none; the queue
//    may then hold more than its capacity for a while.
// A request ends with one call of its callback, never under the queue's
// lock: on the caller's thread when it completes at once, else on the
// thread of the request or close that let it complete, the timer's thread
// (timeout) or the thread that cancels its step.
//
// Thread safety: all methods may be called concurrently. The queue must be
// owned by a shared_ptr: a waiting request's timer and cancellation
// callbacks hold one, so that the queue outlives them.
class FIFOQueue final : public ResourceBase, public std::enable_shared_from_this<FIFOQueue> {
 public:
  static constexpr char kTypeName[] = "FIFOQueue";
  using EnqueueDone = std::function<void(absl::Status)>;
  // The dequeued elements, oldest first; none unless the status is OK.
  using DequeueDone = std::function<void(absl::Status, std::vector<QueueTuple>)>;

  // `shapes` is empty (elements of any shape) or holds one shape per
  // component. `capacity` < 0: unbounded. `name` is what messages call it.
  FIFOQueue(std::string name, DataTypeVector component_types, std::vector<TensorShape> shapes,
            int64_t capacity);
  FIFOQueue(const FIFOQueue&) = delete;
  FIFOQueue& operator=(const FIFOQueue&) = delete;

  const std::string& name() const { return name_; }
  const DataTypeVector& component_types() const { return component_types_; }
  // Empty when the queue takes elements of any shape.
  const std::vector<TensorShape>& shapes() const { return shapes_; }
  int64_t capacity() const { return capacity_; }  // -1: unbounded.

  // INVALID_ARGUMENT naming the queue and both values when another node
  // declares this shared queue with other types, shapes or capacity.
  absl::Status CheckSameDefinition(const DataTypeVector& component_types,
                                   const std::vector<TensorShape>& shapes, int64_t capacity) const;
  // INVALID_ARGUMENT naming the queue, the component and what differs,
  // unless `tuple` has the queue's types, and its shapes when it declared
  // them: one element, or with `batched` a batch (whose first dimensions
  // must agree).
  absl::Status ValidateTuple(const QueueTuple& tuple, bool batched) const;
  // INVALID_ARGUMENT naming both lists unless a dequeue's output types are
  // the queue's component types.
  absl::Status ValidateDequeueTypes(const DataTypeVector& types) const;

  // Adds `elements` at the back, in order. REQUIRES: each passed
  // ValidateTuple(element, false), and none shares its buffers with a
  // tensor that may be written later (the queue hands them out as they are).
  // CANCELLED when the queue is closed.
  void Enqueue(std::vector<QueueTuple> elements, const QueueWait& wait, EnqueueDone done);
  // Removes `n` elements from the front. With `allow_fewer`, a closed queue
  // that has fewer gives what it has, if anything. OUT_OF_RANGE when the
  // queue is closed and has fewer than needed (and no enqueue waiting can
  // make up the difference).
  void Dequeue(int64_t n, bool allow_fewer, const QueueWait& wait, DequeueDone done);
  // Further enqueues fail; dequeues that cannot be satisfied fail
  // OUT_OF_RANGE. Enqueues waiting for room fail CANCELLED with
  // `cancel_pending_enqueues`, else they may still complete. Closing a
  // closed queue is CANCELLED unless `cancel_pending_enqueues`, as in
  // TensorFlow.
  absl::Status Close(bool cancel_pending_enqueues);

  // The elements in the queue, not counting those a waiting dequeue of
  // several has taken (it may still give them back).
  int64_t size() const;
  bool is_closed() const;
  // "FIFOQueue 'q' of [int64, float], 3 elements, capacity 10".
  std::string DebugString() const override;

 private:
  enum class Line { kEnqueue, kDequeue };

  // A request that has not finished, in its line.
  struct Request {
    uint64_t id = 0;
    // An enqueue: the elements it has yet to add.
    std::deque<QueueTuple> to_add;
    EnqueueDone enqueue_done;
    // A dequeue: how many elements it wants, whether fewer will do once the
    // queue is closed, and the elements it has taken so far.
    int64_t wanted = 0;
    bool allow_fewer = false;
    std::vector<QueueTuple> taken;
    DequeueDone dequeue_done;
    // What may end the wait early, set once registered or scheduled.
    StepCancellation* cancellation = nullptr;
    StepCancellation::Token token = 0;
    Timer::Id timer = 0;  // 0: none.
  };

  // A request taken out of its line, with its result; its callback runs
  // after the lock is released.
  struct Finished {
    Request request;
    absl::Status status;
  };

  // Queues the request, moves what can move, and if it must wait sets up
  // its timeout and cancellation.
  void Submit(Line line, Request request, const QueueWait& wait);
  // Ends the request `id` of `line` with `status` (timeout, cancellation)
  // unless it has finished already.
  void Abandon(Line line, uint64_t id, absl::Status status);
  // Moves elements between the waiting requests and the queue until
  // nothing moves; finished requests go to `finished`.
  void FlushLocked(std::vector<Finished>* finished) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Removes the request at `it` from `line`, returning a dequeue's taken
  // elements to the front unless it succeeded.
  void FinishLocked(Line line, std::list<Request>::iterator it, absl::Status status,
                    std::vector<Finished>* finished) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HasRoomLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::list<Request>& LineLocked(Line line) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Stops the timers and cancellation callbacks, then runs the callbacks.
  static void Complete(std::vector<Finished> finished);

  // Constant after construction.
  const std::string name_;
  const DataTypeVector component_types_;
  const std::vector<TensorShape> shapes_;
  const int64_t capacity_;

  mutable absl::Mutex mu_;
  std::deque<QueueTuple> elements_ ABSL_GUARDED_BY(mu_);
  std::list<Request> enqueues_ ABSL_GUARDED_BY(mu_);
  std::list<Request> dequeues_ ABSL_GUARDED_BY(mu_);
  bool closed_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t next_id_ ABSL_GUARDED_BY(mu_) = 1;
};

}  // namespace rill

#endif  // RILL_KERNELS_CPU_FIFO_QUEUE_H_
