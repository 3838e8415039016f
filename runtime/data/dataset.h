// An in-memory input pipeline over aligned tensors (features [N, ...],
// labels [N, ...]): rows or batches in order or shuffled per epoch,
// repeated, and optionally made ahead on a background thread. Each element
// is one tensor per component, in the order the components were given, so a
// training loop can feed them to its placeholders:
//
//   ASSIGN_OR_RETURN(Dataset data, Dataset::FromTensors({images, labels}));
//   data.Shuffle(42).Batch(64).Repeat(5).Prefetch(2);
//   ASSIGN_OR_RETURN(auto it, data.MakeIterator());
//   while (true) {
//     ASSIGN_OR_RETURN(auto batch, it->Next());
//     if (!batch) break;
//     ... session->Run({{"x", (*batch)[0]}, {"y", (*batch)[1]}}, {}, {"train"}) ...
//   }
//
// The stages always apply in one order, whatever the order of the calls:
// each epoch is one pass over all rows (a fresh permutation per epoch when
// shuffled), cut into batches within the epoch; Repeat sets the number of
// epochs; Prefetch overlaps making elements with consuming them.
#ifndef RILL_RUNTIME_DATA_DATASET_H_
#define RILL_RUNTIME_DATA_DATASET_H_

#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "graph/tensor.h"

namespace rill {

// Thread safety: not synchronized; use one iterator from one thread at a
// time (a prefetching iterator runs its own producer thread internally).
class DatasetIterator {
 public:
  virtual ~DatasetIterator() = default;
  // The next element (fresh tensors the caller owns), or nullopt once the
  // last epoch is done; nullopt again on every later call.
  virtual absl::StatusOr<std::optional<std::vector<Tensor>>> Next() = 0;
};

// A value type describing the pipeline; copies share the tensors, which
// must not be written while iterators exist.
class Dataset {
 public:
  // INVALID_ARGUMENT when there are no components, one is a scalar or
  // uninitialized, or their first dimensions differ.
  static absl::StatusOr<Dataset> FromTensors(std::vector<Tensor> components);

  // A permutation per epoch, determined by `seed` and the epoch number.
  Dataset& Shuffle(uint64_t seed);
  // Elements become [batch_size, ...] tensors; the last batch of an epoch
  // is smaller unless `drop_remainder`. Without Batch, elements are rows
  // (the component shapes without their first dimension).
  Dataset& Batch(int64_t batch_size, bool drop_remainder = false);
  // The number of epochs (default 1); -1 repeats forever (until an epoch
  // yields nothing, as with no rows).
  Dataset& Repeat(int64_t epochs);
  // Up to `buffer_size` elements made ahead by a background thread; 0
  // turns prefetching off.
  Dataset& Prefetch(int buffer_size);

  int64_t num_rows() const { return components_[0].dim_size(0); }
  int num_components() const { return static_cast<int>(components_.size()); }

  // INVALID_ARGUMENT for a batch size < 1, epochs < -1 or a buffer size < 0.
  absl::StatusOr<std::unique_ptr<DatasetIterator>> MakeIterator() const;

 private:
  explicit Dataset(std::vector<Tensor> components) : components_(std::move(components)) {}

  std::vector<Tensor> components_;
  std::optional<uint64_t> shuffle_seed_;
  std::optional<int64_t> batch_size_;  // Unset: unbatched rows.
  bool drop_remainder_ = false;
  int64_t epochs_ = 1;
  int prefetch_ = 0;
};

}  // namespace rill

#endif  // RILL_RUNTIME_DATA_DATASET_H_
