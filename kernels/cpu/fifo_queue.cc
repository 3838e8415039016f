#include "kernels/cpu/fifo_queue.h"

#include <algorithm>
#include <iterator>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace rill {
namespace {

std::string TypesString(const DataTypeVector& types) {
  return absl::StrCat(
      "[",
      absl::StrJoin(types, ", ",
                    [](std::string* out, DataType type) { out->append(DataTypeString(type)); }),
      "]");
}

std::string ShapesString(const std::vector<TensorShape>& shapes) {
  return absl::StrCat("[",
                      absl::StrJoin(shapes, ", ",
                                    [](std::string* out, const TensorShape& shape) {
                                      out->append(shape.DebugString());
                                    }),
                      "]");
}

// What TensorFlow says when a wait runs past its deadline.
absl::Status TimedOut() {
  return absl::DeadlineExceededError("Timed out waiting for notification");
}

}  // namespace

FIFOQueue::FIFOQueue(std::string name, DataTypeVector component_types,
                     std::vector<TensorShape> shapes, int64_t capacity)
    : name_(std::move(name)),
      component_types_(std::move(component_types)),
      shapes_(std::move(shapes)),
      capacity_(capacity < 0 ? -1 : capacity) {}

absl::Status FIFOQueue::CheckSameDefinition(const DataTypeVector& component_types,
                                            const std::vector<TensorShape>& shapes,
                                            int64_t capacity) const {
  if (component_types != component_types_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Shared queue '%s' has component types %s but requested component types were %s", name_,
        TypesString(component_types_), TypesString(component_types)));
  }
  if (shapes != shapes_) {
    return absl::InvalidArgumentError(absl::StrFormat(
        "Shared queue '%s' has component shapes %s but requested component shapes were %s", name_,
        ShapesString(shapes_), ShapesString(shapes)));
  }
  const int64_t requested = capacity < 0 ? -1 : capacity;
  if (requested != capacity_) {
    return absl::InvalidArgumentError(
        absl::StrFormat("Shared queue '%s' has capacity %d but requested capacity was %d", name_,
                        capacity_, requested));
  }
  return absl::OkStatus();
}

absl::Status FIFOQueue::ValidateTuple(const QueueTuple& tuple, bool batched) const {
  if (tuple.size() != component_types_.size()) {
    return absl::InvalidArgumentError(
        absl::StrFormat("FIFOQueue '%s': wrong number of components in tuple. Expected %d, got %d",
                        name_, component_types_.size(), tuple.size()));
  }
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (BaseType(tuple[i].dtype()) != component_types_[i]) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "FIFOQueue '%s': type mismatch in tuple component %d. Expected %s, got %s", name_, i,
          DataTypeString(component_types_[i]), DataTypeString(tuple[i].dtype())));
    }
    if (batched && tuple[i].dims() == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "FIFOQueue '%s': tuple component %d of a batch needs a batch dimension; got a scalar",
          name_, i));
    }
  }
  const int64_t batch = batched ? tuple[0].dim_size(0) : 0;
  for (size_t i = 0; i < tuple.size(); ++i) {
    if (!shapes_.empty()) {
      TensorShape expected;
      if (batched) expected.AddDim(batch);
      for (int64_t d : shapes_[i].dim_sizes()) expected.AddDim(d);
      if (tuple[i].shape() != expected) {
        return absl::InvalidArgumentError(absl::StrFormat(
            "FIFOQueue '%s': shape mismatch in tuple component %d. Expected %s, got %s", name_, i,
            expected.DebugString(), tuple[i].shape().DebugString()));
      }
    } else if (batched && tuple[i].dim_size(0) != batch) {
      return absl::InvalidArgumentError(
          absl::StrFormat("FIFOQueue '%s': all components of a batch must have the same size in "
                          "the first dimension. Component %d has %d, and should have %d",
                          name_, i, tuple[i].dim_size(0), batch));
    }
  }
  return absl::OkStatus();
}

absl::Status FIFOQueue::ValidateDequeueTypes(const DataTypeVector& types) const {
  if (types == component_types_) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrFormat("FIFOQueue '%s' holds component types %s; the dequeue asks for %s", name_,
                      TypesString(component_types_), TypesString(types)));
}

void FIFOQueue::Enqueue(std::vector<QueueTuple> elements, const QueueWait& wait, EnqueueDone done) {
  // As in TensorFlow, adding nothing succeeds at once, even when closed.
  if (elements.empty()) {
    done(absl::OkStatus());
    return;
  }
  Request request;
  request.to_add.assign(std::make_move_iterator(elements.begin()),
                        std::make_move_iterator(elements.end()));
  request.enqueue_done = std::move(done);
  Submit(Line::kEnqueue, std::move(request), wait);
}

void FIFOQueue::Dequeue(int64_t n, bool allow_fewer, const QueueWait& wait, DequeueDone done) {
  if (n == 0) {
    done(absl::OkStatus(), {});
    return;
  }
  Request request;
  request.wanted = n;
  request.allow_fewer = allow_fewer;
  request.dequeue_done = std::move(done);
  Submit(Line::kDequeue, std::move(request), wait);
}

absl::Status FIFOQueue::Close(bool cancel_pending_enqueues) {
  std::vector<Finished> finished;
  {
    absl::MutexLock lock(&mu_);
    if (closed_ && !cancel_pending_enqueues) {
      return absl::CancelledError(absl::StrFormat("Queue '%s' is already closed.", name_));
    }
    closed_ = true;
    if (cancel_pending_enqueues) {
      while (!enqueues_.empty()) {
        FinishLocked(Line::kEnqueue, enqueues_.begin(),
                     absl::CancelledError("Enqueue operation was cancelled"), &finished);
      }
    }
    FlushLocked(&finished);
  }
  Complete(std::move(finished));
  return absl::OkStatus();
}

int64_t FIFOQueue::size() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int64_t>(elements_.size());
}

bool FIFOQueue::is_closed() const {
  absl::MutexLock lock(&mu_);
  return closed_;
}

std::string FIFOQueue::DebugString() const {
  const std::string capacity = capacity_ < 0 ? "unbounded" : absl::StrCat("capacity ", capacity_);
  return absl::StrFormat("FIFOQueue '%s' of %s, %d elements, %s", name_,
                         TypesString(component_types_), size(), capacity);
}

void FIFOQueue::Submit(Line line, Request request, const QueueWait& wait) {
  const auto cancelled = [line] {
    return absl::CancelledError(line == Line::kEnqueue ? "Enqueue operation was cancelled"
                                                       : "Dequeue operation was cancelled");
  };
  std::vector<Finished> finished;
  {
    absl::MutexLock lock(&mu_);
    const uint64_t id = next_id_++;
    request.id = id;
    std::list<Request>& requests = LineLocked(line);
    requests.push_back(std::move(request));
    if (line == Line::kEnqueue && closed_) {
      FinishLocked(line, std::prev(requests.end()),
                   absl::CancelledError(absl::StrFormat("FIFOQueue '%s' is closed.", name_)),
                   &finished);
    } else {
      FlushLocked(&finished);
    }
    // Still waiting: it is the newest of its line, at the back.
    if (!requests.empty() && requests.back().id == id) {
      Request& pending = requests.back();
      absl::Status failure;
      StepCancellation::Token token = 0;
      if (wait.timeout_ms == 0) {
        failure = TimedOut();
      } else if (wait.cancellation != nullptr) {
        // The callbacks hold the queue, so it outlives them; they find
        // nothing to do once the request has finished.
        if (wait.cancellation->RegisterCallback(
                [self = shared_from_this(), line, id, cancelled](const absl::Status&) {
                  self->Abandon(line, id, cancelled());
                },
                &token)) {
          pending.cancellation = wait.cancellation;
          pending.token = token;
        } else {
          failure = cancelled();
        }
      }
      if (failure.ok() && wait.timeout_ms > 0) {
        pending.timer = Timer::Default().Schedule(
            absl::Now() + absl::Milliseconds(wait.timeout_ms),
            [self = shared_from_this(), line, id] { self->Abandon(line, id, TimedOut()); });
      }
      if (!failure.ok()) {
        FinishLocked(line, std::prev(requests.end()), std::move(failure), &finished);
        // Elements it put back may serve the requests behind it.
        FlushLocked(&finished);
      }
    }
  }
  Complete(std::move(finished));
}

void FIFOQueue::Abandon(Line line, uint64_t id, absl::Status status) {
  std::vector<Finished> finished;
  {
    absl::MutexLock lock(&mu_);
    std::list<Request>& requests = LineLocked(line);
    auto it = std::find_if(requests.begin(), requests.end(),
                           [id](const Request& r) { return r.id == id; });
    if (it == requests.end()) return;  // It finished first.
    FinishLocked(line, it, std::move(status), &finished);
    FlushLocked(&finished);
  }
  Complete(std::move(finished));
}

void FIFOQueue::FlushLocked(std::vector<Finished>* finished) {
  for (;;) {
    bool moved = false;
    while (!enqueues_.empty()) {
      Request& head = enqueues_.front();
      while (!head.to_add.empty() && HasRoomLocked()) {
        elements_.push_back(std::move(head.to_add.front()));
        head.to_add.pop_front();
        moved = true;
      }
      if (!head.to_add.empty()) break;
      FinishLocked(Line::kEnqueue, enqueues_.begin(), absl::OkStatus(), finished);
    }
    while (!dequeues_.empty()) {
      Request& head = dequeues_.front();
      while (static_cast<int64_t>(head.taken.size()) < head.wanted && !elements_.empty()) {
        head.taken.push_back(std::move(elements_.front()));
        elements_.pop_front();
        moved = true;
      }
      if (static_cast<int64_t>(head.taken.size()) < head.wanted) break;
      FinishLocked(Line::kDequeue, dequeues_.begin(), absl::OkStatus(), finished);
    }
    if (moved) continue;
    // Nothing moves. A waiting dequeue has emptied the queue, so no enqueue
    // waits for room (unless the capacity is 0): once closed, nothing more
    // will come, and the first dequeue ends with what it has or fails.
    // Elements it puts back go to the dequeues behind it on the next turn.
    if (!closed_ || dequeues_.empty()) return;
    Request& head = dequeues_.front();
    if (head.allow_fewer && !head.taken.empty()) {
      FinishLocked(Line::kDequeue, dequeues_.begin(), absl::OkStatus(), finished);
    } else {
      const int64_t size = static_cast<int64_t>(elements_.size() + head.taken.size());
      FinishLocked(Line::kDequeue, dequeues_.begin(),
                   absl::OutOfRangeError(absl::StrFormat(
                       "FIFOQueue '%s' is closed and has insufficient elements (requested %d, "
                       "current size %d)",
                       name_, head.wanted, size)),
                   finished);
    }
  }
}

void FIFOQueue::FinishLocked(Line line, std::list<Request>::iterator it, absl::Status status,
                             std::vector<Finished>* finished) {
  Request& request = *it;
  if (line == Line::kDequeue && !status.ok()) {
    for (auto e = request.taken.rbegin(); e != request.taken.rend(); ++e) {
      elements_.push_front(std::move(*e));
    }
    request.taken.clear();
  }
  finished->push_back(Finished{std::move(request), std::move(status)});
  LineLocked(line).erase(it);
}

bool FIFOQueue::HasRoomLocked() const {
  return capacity_ < 0 || static_cast<int64_t>(elements_.size()) < capacity_;
}

std::list<FIFOQueue::Request>& FIFOQueue::LineLocked(Line line) {
  return line == Line::kEnqueue ? enqueues_ : dequeues_;
}

void FIFOQueue::Complete(std::vector<Finished> finished) {
  // Everything is stopped before any callback runs: a callback may end its
  // step, and with it the others' cancellations, only once they are done.
  for (Finished& f : finished) {
    // A cancellation callback that runs late finds its request gone, so it
    // is not waited for: its canceller may itself be waiting on this
    // thread. Timer::Cancel does wait for a timeout callback running now,
    // which only takes mu_, free here.
    if (f.request.cancellation != nullptr) {
      f.request.cancellation->TryDeregisterCallback(f.request.token);
    }
    if (f.request.timer != 0) Timer::Default().Cancel(f.request.timer);
  }
  for (Finished& f : finished) {
    if (f.request.enqueue_done) {
      f.request.enqueue_done(std::move(f.status));
    } else {
      f.request.dequeue_done(std::move(f.status), std::move(f.request.taken));
    }
  }
}

}  // namespace rill
