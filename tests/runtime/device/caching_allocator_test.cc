#include "runtime/device/caching_allocator.h"

#include <atomic>
#include <cstdint>
#include <cstring>
#include <random>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace rill {
namespace {

// Counts what reaches the system; fails once `limit` bytes are out.
class CountingAllocator final : public Allocator {
 public:
  explicit CountingAllocator(size_t limit = SIZE_MAX) : limit_(limit) {}
  std::string Name() const override { return "counting"; }
  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (outstanding_ + bytes > limit_) return nullptr;
    outstanding_ += bytes;
    ++allocations_;
    return CpuAllocator()->AllocateRaw(alignment, bytes);
  }
  void DeallocateRaw(void* ptr, size_t bytes) override {
    outstanding_ -= bytes;
    ++deallocations_;
    CpuAllocator()->DeallocateRaw(ptr, bytes);
  }
  size_t outstanding() const { return outstanding_; }
  int allocations() const { return allocations_; }
  int deallocations() const { return deallocations_; }

 private:
  const size_t limit_;
  std::atomic<size_t> outstanding_{0};
  std::atomic<int> allocations_{0};
  std::atomic<int> deallocations_{0};
};

TEST(CachingAllocator, RoundsToSizeClasses) {
  EXPECT_EQ(CachingAllocator::RoundedSize(0), 64u);
  EXPECT_EQ(CachingAllocator::RoundedSize(1), 64u);
  EXPECT_EQ(CachingAllocator::RoundedSize(64), 64u);
  EXPECT_EQ(CachingAllocator::RoundedSize(65), 128u);
  EXPECT_EQ(CachingAllocator::RoundedSize(4096), 4096u);
  EXPECT_EQ(CachingAllocator::RoundedSize(4097), 4608u);
  EXPECT_EQ(CachingAllocator::RoundedSize(size_t{1} << 20), size_t{1} << 20);
  EXPECT_EQ(CachingAllocator::RoundedSize((size_t{1} << 20) + 1),
            (size_t{1} << 20) + (size_t{1} << 17));
  // Never more than 1/8 above the request.
  for (size_t bytes = 4097; bytes < (size_t{1} << 24); bytes = bytes * 5 / 3) {
    const size_t rounded = CachingAllocator::RoundedSize(bytes);
    EXPECT_GE(rounded, bytes);
    EXPECT_LE(rounded - bytes, bytes / 8) << bytes;
    EXPECT_EQ(CachingAllocator::RoundedSize(rounded), rounded) << bytes;
  }
}

TEST(CachingAllocator, ReusesAFreedBufferOfTheSameClass) {
  CountingAllocator system;
  CachingAllocator allocator(&system);
  void* first = allocator.AllocateRaw(64, 100);
  ASSERT_NE(first, nullptr);
  allocator.DeallocateRaw(first, 100);
  EXPECT_EQ(system.deallocations(), 0);
  // 120 bytes falls in the same 128-byte class.
  void* second = allocator.AllocateRaw(64, 120);
  EXPECT_EQ(second, first);
  EXPECT_EQ(system.allocations(), 1);
  // Another class does not take it.
  allocator.DeallocateRaw(second, 120);
  void* other = allocator.AllocateRaw(64, 1000);
  EXPECT_NE(other, first);
  allocator.DeallocateRaw(other, 1000);
}

TEST(CachingAllocator, KeepsStatistics) {
  CountingAllocator system;
  CachingAllocator allocator(&system);
  void* a = allocator.AllocateRaw(64, 100);   // 128 bytes.
  void* b = allocator.AllocateRaw(64, 5000);  // 5120 bytes.
  AllocatorStats stats = allocator.Stats();
  EXPECT_EQ(stats.bytes_in_use, 128 + 5120);
  EXPECT_EQ(stats.peak_bytes_in_use, 128 + 5120);
  EXPECT_EQ(stats.num_allocs, 2);
  EXPECT_EQ(stats.cache_hits, 0);
  EXPECT_EQ(stats.bytes_cached, 0);

  allocator.DeallocateRaw(b, 5000);
  stats = allocator.Stats();
  EXPECT_EQ(stats.bytes_in_use, 128);
  EXPECT_EQ(stats.peak_bytes_in_use, 128 + 5120);
  EXPECT_EQ(stats.bytes_cached, 5120);

  void* c = allocator.AllocateRaw(64, 4700);  // Also 5120: a hit.
  EXPECT_EQ(c, b);
  stats = allocator.Stats();
  EXPECT_EQ(stats.num_allocs, 3);
  EXPECT_EQ(stats.cache_hits, 1);
  EXPECT_EQ(stats.bytes_cached, 0);
  EXPECT_EQ(stats.bytes_in_use, 128 + 5120);

  allocator.DeallocateRaw(a, 100);
  allocator.DeallocateRaw(c, 4700);
  allocator.ResetPeak();
  stats = allocator.Stats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.peak_bytes_in_use, 0);
  EXPECT_EQ(stats.bytes_cached, 128 + 5120);
}

TEST(CachingAllocator, AlignsEveryBufferTo64Bytes) {
  CachingAllocator allocator(CpuAllocator());
  std::vector<std::pair<void*, size_t>> buffers;
  for (size_t bytes :
       {size_t{1}, size_t{3}, size_t{63}, size_t{65}, size_t{1000}, size_t{4097}, size_t{100000}}) {
    for (size_t alignment : {size_t{1}, size_t{16}, size_t{64}}) {
      void* ptr = allocator.AllocateRaw(alignment, bytes);
      ASSERT_NE(ptr, nullptr);
      EXPECT_EQ(reinterpret_cast<uintptr_t>(ptr) % 64, 0u) << bytes;
      buffers.emplace_back(ptr, bytes);
    }
  }
  for (auto [ptr, bytes] : buffers) allocator.DeallocateRaw(ptr, bytes);
  EXPECT_EQ(allocator.AllocateRaw(128, 10), nullptr);
  EXPECT_EQ(allocator.AllocateRaw(48, 10), nullptr);
}

TEST(CachingAllocator, ZeroBytesGivesDistinctBuffers) {
  CachingAllocator allocator(CpuAllocator());
  void* a = allocator.AllocateRaw(64, 0);
  void* b = allocator.AllocateRaw(64, 0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  allocator.DeallocateRaw(a, 0);
  allocator.DeallocateRaw(b, 0);
  allocator.DeallocateRaw(nullptr, 0);
  EXPECT_EQ(allocator.Stats().bytes_in_use, 0);
}

TEST(CachingAllocator, CapsTheCachedBytes) {
  CountingAllocator system;
  CachingAllocator allocator(&system, /*max_cached_bytes=*/1024);
  void* a = allocator.AllocateRaw(64, 640);
  void* b = allocator.AllocateRaw(64, 640);
  allocator.DeallocateRaw(a, 640);
  EXPECT_EQ(allocator.Stats().bytes_cached, 640);
  // Caching b as well would exceed the cap: it goes back to the system.
  allocator.DeallocateRaw(b, 640);
  EXPECT_EQ(allocator.Stats().bytes_cached, 640);
  EXPECT_EQ(system.deallocations(), 1);
  EXPECT_EQ(system.outstanding(), 640u);
}

TEST(CachingAllocator, ReleasesTheCacheOnRequest) {
  CountingAllocator system;
  CachingAllocator allocator(&system);
  for (size_t bytes : {size_t{64}, size_t{1000}, size_t{70000}}) {
    allocator.DeallocateRaw(allocator.AllocateRaw(64, bytes), bytes);
  }
  EXPECT_GT(allocator.Stats().bytes_cached, 0);
  allocator.ReleaseCache();
  EXPECT_EQ(allocator.Stats().bytes_cached, 0);
  EXPECT_EQ(system.outstanding(), 0u);
  void* again = allocator.AllocateRaw(64, 1000);
  EXPECT_EQ(allocator.Stats().cache_hits, 0);
  allocator.DeallocateRaw(again, 1000);
}

TEST(CachingAllocator, ReleasesTheCacheWhenTheSystemRunsOut) {
  CountingAllocator system(/*limit=*/8192);
  CachingAllocator allocator(&system);
  allocator.DeallocateRaw(allocator.AllocateRaw(64, 4096), 4096);
  allocator.DeallocateRaw(allocator.AllocateRaw(64, 2048), 2048);
  EXPECT_EQ(system.outstanding(), 4096u + 2048u);
  // 4608 bytes fit only once the cached buffers are returned.
  void* big = allocator.AllocateRaw(64, 4500);
  ASSERT_NE(big, nullptr);
  EXPECT_EQ(allocator.Stats().bytes_cached, 0);
  EXPECT_EQ(allocator.AllocateRaw(64, 8192), nullptr);
  allocator.DeallocateRaw(big, 4500);
}

TEST(CachingAllocator, ConcurrentUseKeepsBuffersApart) {
  CountingAllocator system;
  CachingAllocator allocator(&system);
  constexpr int kThreads = 8;
  constexpr int kRounds = 5000;
  std::atomic<int> corrupted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      std::vector<std::pair<unsigned char*, size_t>> held;
      for (int i = 0; i < kRounds; ++i) {
        const size_t bytes = std::uniform_int_distribution<size_t>(0, 20000)(rng);
        auto* ptr = static_cast<unsigned char*>(allocator.AllocateRaw(64, bytes));
        // Each thread writes its own mark; another thread's mark in a held
        // buffer would mean two owners.
        std::memset(ptr, t + 1, bytes);
        held.emplace_back(ptr, bytes);
        if (held.size() > 8 || (i % 3) == 0) {
          const size_t pick = std::uniform_int_distribution<size_t>(0, held.size() - 1)(rng);
          auto [p, n] = held[pick];
          for (size_t k = 0; k < n; ++k) {
            if (p[k] != t + 1) {
              corrupted.fetch_add(1);
              break;
            }
          }
          allocator.DeallocateRaw(p, n);
          held.erase(held.begin() + static_cast<std::ptrdiff_t>(pick));
        }
      }
      for (auto [p, n] : held) allocator.DeallocateRaw(p, n);
    });
  }
  for (std::thread& t : threads) t.join();
  EXPECT_EQ(corrupted.load(), 0);
  const AllocatorStats stats = allocator.Stats();
  EXPECT_EQ(stats.bytes_in_use, 0);
  EXPECT_EQ(stats.num_allocs, kThreads * kRounds);
  EXPECT_GT(stats.cache_hits, 0);
  EXPECT_EQ(static_cast<size_t>(stats.bytes_cached), system.outstanding());
}

}  // namespace
}  // namespace rill
