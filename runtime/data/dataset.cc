#include "runtime/data/dataset.h"

#include <cstring>
#include <deque>
#include <numeric>
#include <string>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "graph/status_macros.h"
#include "runtime/device/device.h"

namespace rill {
namespace {

using Element = std::vector<Tensor>;

uint64_t SplitMix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// Fisher-Yates with our own generator and bounded draw, so that a seed
// gives the same order with every standard library.
std::vector<int64_t> Permutation(int64_t n, uint64_t seed, int64_t epoch) {
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  uint64_t epoch_state = static_cast<uint64_t>(epoch);
  uint64_t state = seed ^ SplitMix64(epoch_state);
  for (int64_t i = n - 1; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    const uint64_t threshold = (0 - bound) % bound;  // Rejecting below it removes modulo bias.
    uint64_t r;
    do {
      r = SplitMix64(state);
    } while (r < threshold);
    std::swap(order[i], order[r % bound]);
  }
  return order;
}

// Copies rows `rows` (or rows [start, start + count) when `rows` is empty)
// of `src` into a new tensor whose first dimension is the row count, or
// which has no first dimension when `unbatched`.
absl::StatusOr<Tensor> GatherRows(const Tensor& src, const std::vector<int64_t>& rows,
                                  int64_t start, int64_t count, bool unbatched) {
  TensorShape shape = src.shape();
  if (unbatched) {
    shape.RemoveDim(0);
  } else {
    shape.set_dim(0, count);
  }
  // Batches come and go every step: from the caching allocator their
  // buffers are reused instead of faulting in fresh pages each time.
  ASSIGN_OR_RETURN(Tensor out, Tensor::Allocate(CpuCachingAllocator(), src.dtype(), shape));
  const int64_t row_elements = src.dim_size(0) == 0 ? 0 : src.NumElements() / src.dim_size(0);
  const auto row = [&](int64_t i) { return rows.empty() ? start + i : rows[start + i]; };
  if (BaseType(src.dtype()) == DT_STRING) {
    const std::string* in = src.data<std::string>();
    std::string* dst = out.data<std::string>();
    for (int64_t i = 0; i < count; ++i) {
      std::copy_n(in + row(i) * row_elements, row_elements, dst + i * row_elements);
    }
    return out;
  }
  const size_t row_bytes = static_cast<size_t>(row_elements) * DataTypeSize(src.dtype());
  if (row_bytes == 0 || count == 0) return out;
  const char* in = static_cast<const char*>(src.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  if (rows.empty()) {
    std::memcpy(dst, in + start * row_bytes, count * row_bytes);
    return out;
  }
  for (int64_t i = 0; i < count; ++i) {
    std::memcpy(dst + i * row_bytes, in + rows[start + i] * row_bytes, row_bytes);
  }
  return out;
}

class InMemoryIterator final : public DatasetIterator {
 public:
  InMemoryIterator(std::vector<Tensor> components, std::optional<uint64_t> seed,
                   std::optional<int64_t> batch_size, bool drop_remainder, int64_t epochs)
      : components_(std::move(components)),
        rows_(components_[0].dim_size(0)),
        seed_(seed),
        batch_size_(batch_size),
        drop_remainder_(drop_remainder),
        epochs_(epochs) {}

  absl::StatusOr<std::optional<Element>> Next() override {
    while (epochs_ < 0 || epoch_ < epochs_) {
      if (position_ == 0 && seed_ && order_epoch_ != epoch_) {
        order_ = Permutation(rows_, *seed_, epoch_);
        order_epoch_ = epoch_;
      }
      const int64_t take = std::min(batch_size_.value_or(1), rows_ - position_);
      if (take == 0 || (drop_remainder_ && take < *batch_size_)) {
        // An epoch that yields nothing would repeat forever without output.
        if (position_ == 0) break;
        ++epoch_;
        position_ = 0;
        continue;
      }
      Element element;
      element.reserve(components_.size());
      for (const Tensor& component : components_) {
        ASSIGN_OR_RETURN(Tensor t,
                         GatherRows(component, order_, position_, take, !batch_size_.has_value()));
        element.push_back(std::move(t));
      }
      position_ += take;
      return element;
    }
    epochs_ = 0;  // Stays at the end.
    return std::nullopt;
  }

 private:
  const std::vector<Tensor> components_;
  const int64_t rows_;
  const std::optional<uint64_t> seed_;
  const std::optional<int64_t> batch_size_;
  const bool drop_remainder_;
  int64_t epochs_;
  int64_t epoch_ = 0;
  int64_t position_ = 0;  // Next row of the epoch (an index into order_ when shuffled).
  std::vector<int64_t> order_;
  int64_t order_epoch_ = -1;
};

// Runs its input on a producer thread that keeps up to `capacity` results
// queued and sleeps on a condition while the queue is full.
// Thread safety: Next from one consumer thread at a time; the producer
// thread alone touches input_.
class PrefetchIterator final : public DatasetIterator {
 public:
  PrefetchIterator(std::unique_ptr<DatasetIterator> input, int capacity)
      : input_(std::move(input)), capacity_(capacity), producer_([this] { Produce(); }) {}

  ~PrefetchIterator() override {
    {
      absl::MutexLock lock(&mu_);
      cancelled_ = true;
    }
    changed_.SignalAll();
    producer_.join();
  }

  absl::StatusOr<std::optional<Element>> Next() override {
    absl::MutexLock lock(&mu_);
    while (queue_.empty() && !finished_) changed_.Wait(&mu_);
    if (queue_.empty()) return std::nullopt;
    absl::StatusOr<std::optional<Element>> item = std::move(queue_.front());
    queue_.pop_front();
    changed_.SignalAll();
    return item;
  }

 private:
  void Produce() {
    while (true) {
      absl::StatusOr<std::optional<Element>> item = input_->Next();
      absl::MutexLock lock(&mu_);
      while (static_cast<int>(queue_.size()) >= capacity_ && !cancelled_) changed_.Wait(&mu_);
      if (cancelled_) return;
      const bool last = !item.ok() || !item->has_value();
      if (item.ok() && !item->has_value()) {
        finished_ = true;
      } else {
        queue_.push_back(std::move(item));
        finished_ = last;
      }
      changed_.SignalAll();
      if (last) return;
    }
  }

  const std::unique_ptr<DatasetIterator> input_;
  const int capacity_;

  absl::Mutex mu_;
  absl::CondVar changed_;  // Signalled when the queue or a flag changes.
  std::deque<absl::StatusOr<std::optional<Element>>> queue_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // The producer has queued its last item.
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;

  std::thread producer_;  // Last: starts after every field above exists.
};

}  // namespace

absl::StatusOr<Dataset> Dataset::FromTensors(std::vector<Tensor> components) {
  if (components.empty()) return absl::InvalidArgumentError("a dataset needs a component");
  for (size_t i = 0; i < components.size(); ++i) {
    const Tensor& t = components[i];
    if (!t.IsInitialized() || t.dims() == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dataset component %d must be a tensor of rank >= 1, got %s", i, t.DebugString()));
    }
    if (BaseType(t.dtype()) != DT_STRING && DataTypeSize(t.dtype()) == 0) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dataset component %d: %s tensors cannot be batched", i, DataTypeString(t.dtype())));
    }
    if (t.dim_size(0) != components[0].dim_size(0)) {
      return absl::InvalidArgumentError(absl::StrFormat(
          "dataset components must have the same first dimension: component %d has shape %s, "
          "component 0 has %s",
          i, t.shape().DebugString(), components[0].shape().DebugString()));
    }
  }
  return Dataset(std::move(components));
}

Dataset& Dataset::Shuffle(uint64_t seed) {
  shuffle_seed_ = seed;
  return *this;
}

Dataset& Dataset::Batch(int64_t batch_size, bool drop_remainder) {
  batch_size_ = batch_size;
  drop_remainder_ = drop_remainder;
  return *this;
}

Dataset& Dataset::Repeat(int64_t epochs) {
  epochs_ = epochs;
  return *this;
}

Dataset& Dataset::Prefetch(int buffer_size) {
  prefetch_ = buffer_size;
  return *this;
}

absl::StatusOr<std::unique_ptr<DatasetIterator>> Dataset::MakeIterator() const {
  if (batch_size_ && *batch_size_ < 1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("batch size must be at least 1, got %d", *batch_size_));
  }
  if (epochs_ < -1) {
    return absl::InvalidArgumentError(
        absl::StrFormat("epochs must be -1 (forever) or at least 0, got %d", epochs_));
  }
  if (prefetch_ < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("prefetch buffer size must be at least 0, got %d", prefetch_));
  }
  std::unique_ptr<DatasetIterator> it = std::make_unique<InMemoryIterator>(
      components_, shuffle_seed_, batch_size_, drop_remainder_, epochs_);
  if (prefetch_ > 0) it = std::make_unique<PrefetchIterator>(std::move(it), prefetch_);
  return it;
}

}  // namespace rill
