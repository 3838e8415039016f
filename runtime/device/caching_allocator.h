// CachingAllocator: an Allocator that keeps freed buffers in per-size-class
// free lists and hands them out again, so that a step that allocates what
// the previous step freed never goes back to the OS (touching fresh pages
// costs far more than a free-list pop).
#ifndef RILL_RUNTIME_DEVICE_CACHING_ALLOCATOR_H_
#define RILL_RUNTIME_DEVICE_CACHING_ALLOCATOR_H_

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "graph/allocator.h"

namespace rill {

struct AllocatorStats {
  int64_t bytes_in_use = 0;       // Size-class bytes of live allocations.
  int64_t peak_bytes_in_use = 0;  // Highest bytes_in_use since construction.
  int64_t num_allocs = 0;         // AllocateRaw calls that returned memory.
  int64_t cache_hits = 0;         // Of those, served from the cache.
  int64_t bytes_cached = 0;       // Freed bytes kept for reuse.
};

// Size classes: requests are rounded up to a multiple of 64 bytes up to
// 4 KiB, and above that to one of 8 steps per power of two (at most 12.5%
// waste). A freed buffer goes back to its class's free list unless that
// would push the cached bytes over the cap; then it is returned to the
// underlying allocator. When the underlying allocator fails, the cache is
// released and the request retried.
//
// Thread safety: all methods may be called concurrently. Each size class
// has its own lock; statistics are atomics.
class CachingAllocator final : public Allocator {
 public:
  static constexpr size_t kDefaultMaxCachedBytes = size_t{1} << 30;

  // `underlying` must outlive this allocator and give kTensorAlignment.
  explicit CachingAllocator(Allocator* underlying,
                            size_t max_cached_bytes = kDefaultMaxCachedBytes);
  ~CachingAllocator() override;
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  std::string Name() const override { return "caching_" + underlying_->Name(); }
  // Returns nullptr when `alignment` exceeds kTensorAlignment or no memory
  // can be had. A 0-byte request gets a distinct 64-byte block.
  void* AllocateRaw(size_t alignment, size_t bytes) override;
  void DeallocateRaw(void* ptr, size_t bytes) override;

  // Returns every cached buffer to the underlying allocator.
  void ReleaseCache();
  AllocatorStats Stats() const;
  // Starts a new peak from the bytes in use now (to measure one step).
  void ResetPeak();

  // The bytes a request of `bytes` occupies (its size class).
  static size_t RoundedSize(size_t bytes);

 private:
  static constexpr size_t kSmallLimit = 4096;
  static constexpr int kSmallLimitLog2 = 12;
  static constexpr int kStepsPerDoubling = 8;
  // Larger requests bypass the cache (and their rounding could overflow).
  static constexpr int kMaxBinnedLog2 = 40;
  static constexpr int kNumBins =
      kSmallLimit / kTensorAlignment + (kMaxBinnedLog2 - kSmallLimitLog2) * kStepsPerDoubling;

  // Aligned so that threads working on different classes do not share a
  // cache line.
  struct alignas(64) Bin {
    size_t size = 0;  // The class size; constant after construction.
    absl::Mutex mu;
    std::vector<void*> free ABSL_GUARDED_BY(mu);
  };

  static bool Binned(size_t bytes) { return bytes <= (size_t{1} << kMaxBinnedLog2); }
  static int BinIndex(size_t rounded);
  void* AllocateUncached(size_t bytes);
  void AddInUse(int64_t bytes);

  Allocator* const underlying_;
  const size_t max_cached_bytes_;
  std::array<Bin, kNumBins> bins_;

  // Relaxed atomics throughout: each counter is read on its own for
  // statistics and never orders other memory.
  std::atomic<int64_t> bytes_in_use_{0};
  std::atomic<int64_t> peak_bytes_in_use_{0};
  std::atomic<int64_t> num_allocs_{0};
  std::atomic<int64_t> cache_hits_{0};
  std::atomic<int64_t> bytes_cached_{0};
};

}  // namespace rill

#endif  // RILL_RUNTIME_DEVICE_CACHING_ALLOCATOR_H_
