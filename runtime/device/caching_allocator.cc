#include "runtime/device/caching_allocator.h"

#include <algorithm>
#include <bit>
#include <utility>

namespace rill {

size_t CachingAllocator::RoundedSize(size_t bytes) {
  if (bytes <= kSmallLimit) {
    return std::max(kTensorAlignment, (bytes + kTensorAlignment - 1) & ~(kTensorAlignment - 1));
  }
  if (!Binned(bytes)) return bytes;
  // 2^e < bytes <= 2^(e+1); round up to a multiple of 2^e / kStepsPerDoubling.
  const int e = std::bit_width(bytes - 1) - 1;
  const size_t step = (size_t{1} << e) / kStepsPerDoubling;
  return (bytes + step - 1) & ~(step - 1);
}

int CachingAllocator::BinIndex(size_t rounded) {
  if (rounded <= kSmallLimit) return static_cast<int>(rounded / kTensorAlignment) - 1;
  const int e = std::bit_width(rounded - 1) - 1;
  const size_t step = (size_t{1} << e) / kStepsPerDoubling;
  const int k = static_cast<int>((rounded - (size_t{1} << e)) / step) - 1;
  return static_cast<int>(kSmallLimit / kTensorAlignment) +
         (e - kSmallLimitLog2) * kStepsPerDoubling + k;
}

CachingAllocator::CachingAllocator(Allocator* underlying, size_t max_cached_bytes)
    : underlying_(underlying), max_cached_bytes_(max_cached_bytes) {
  for (size_t bytes = kTensorAlignment; Binned(bytes);) {
    bins_[BinIndex(bytes)].size = bytes;
    bytes = RoundedSize(bytes + 1);
  }
}

CachingAllocator::~CachingAllocator() { ReleaseCache(); }

void* CachingAllocator::AllocateRaw(size_t alignment, size_t bytes) {
  if (alignment > kTensorAlignment || (alignment & (alignment - 1)) != 0) return nullptr;
  const size_t rounded = RoundedSize(bytes);
  void* ptr = nullptr;
  if (Binned(bytes)) {
    Bin& bin = bins_[BinIndex(rounded)];
    absl::MutexLock lock(&bin.mu);
    if (!bin.free.empty()) {
      ptr = bin.free.back();
      bin.free.pop_back();
    }
  }
  if (ptr != nullptr) {
    cache_hits_.fetch_add(1, std::memory_order_relaxed);
    bytes_cached_.fetch_sub(static_cast<int64_t>(rounded), std::memory_order_relaxed);
  } else {
    ptr = AllocateUncached(rounded);
    if (ptr == nullptr) return nullptr;
  }
  num_allocs_.fetch_add(1, std::memory_order_relaxed);
  AddInUse(static_cast<int64_t>(rounded));
  return ptr;
}

void* CachingAllocator::AllocateUncached(size_t bytes) {
  if (void* ptr = underlying_->AllocateRaw(kTensorAlignment, bytes)) return ptr;
  // The cached buffers may be what the system is missing.
  ReleaseCache();
  return underlying_->AllocateRaw(kTensorAlignment, bytes);
}

void CachingAllocator::DeallocateRaw(void* ptr, size_t bytes) {
  if (ptr == nullptr) return;
  const size_t rounded = RoundedSize(bytes);
  const auto size = static_cast<int64_t>(rounded);
  bytes_in_use_.fetch_sub(size, std::memory_order_relaxed);
  // Reserve room under the cap first, so that concurrent frees cannot
  // overshoot it together.
  if (!Binned(bytes) || bytes_cached_.fetch_add(size, std::memory_order_relaxed) + size >
                            static_cast<int64_t>(max_cached_bytes_)) {
    if (Binned(bytes)) bytes_cached_.fetch_sub(size, std::memory_order_relaxed);
    underlying_->DeallocateRaw(ptr, rounded);
    return;
  }
  Bin& bin = bins_[BinIndex(rounded)];
  absl::MutexLock lock(&bin.mu);
  bin.free.push_back(ptr);
}

void CachingAllocator::ReleaseCache() {
  for (Bin& bin : bins_) {
    std::vector<void*> released;
    {
      absl::MutexLock lock(&bin.mu);
      released.swap(bin.free);
    }
    for (void* ptr : released) underlying_->DeallocateRaw(ptr, bin.size);
    bytes_cached_.fetch_sub(static_cast<int64_t>(released.size() * bin.size),
                            std::memory_order_relaxed);
  }
}

void CachingAllocator::AddInUse(int64_t bytes) {
  const int64_t now = bytes_in_use_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t peak = peak_bytes_in_use_.load(std::memory_order_relaxed);
  while (now > peak &&
         !peak_bytes_in_use_.compare_exchange_weak(peak, now, std::memory_order_relaxed)) {
  }
}

void CachingAllocator::ResetPeak() {
  peak_bytes_in_use_.store(bytes_in_use_.load(std::memory_order_relaxed),
                           std::memory_order_relaxed);
}

AllocatorStats CachingAllocator::Stats() const {
  AllocatorStats stats;
  stats.bytes_in_use = bytes_in_use_.load(std::memory_order_relaxed);
  stats.peak_bytes_in_use = peak_bytes_in_use_.load(std::memory_order_relaxed);
  stats.num_allocs = num_allocs_.load(std::memory_order_relaxed);
  stats.cache_hits = cache_hits_.load(std::memory_order_relaxed);
  stats.bytes_cached = bytes_cached_.load(std::memory_order_relaxed);
  return stats;
}

}  // namespace rill
