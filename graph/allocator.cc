#include "graph/allocator.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <new>

namespace rill {
namespace {

// Every allocation uses kTensorAlignment, so that DeallocateRaw (which is not
// told the alignment) can hand the same value to aligned operator delete.
class AlignedCpuAllocator final : public Allocator {
 public:
  std::string Name() const override { return "cpu"; }

  void* AllocateRaw(size_t alignment, size_t bytes) override {
    if (alignment > kTensorAlignment || (alignment & (alignment - 1)) != 0) {
      std::fprintf(stderr, "rill: CpuAllocator cannot provide an alignment of %zu bytes\n",
                   alignment);
      std::abort();
    }
    // operator new gives a unique non-null pointer for 0 bytes as well.
    return ::operator new(bytes, std::align_val_t{kTensorAlignment}, std::nothrow);
  }

  // The unsized form: sized deallocation is optional in C++ (clang leaves
  // it off unless asked), the aligned form is not.
  void DeallocateRaw(void* ptr, size_t /*bytes*/) override {
    if (ptr == nullptr) return;
    ::operator delete(ptr, std::align_val_t{kTensorAlignment});
  }
};

size_t PhysicalMemoryBytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page_size = sysconf(_SC_PAGESIZE);
  size_t bytes;
  if (pages <= 0 || page_size <= 0 ||
      __builtin_mul_overflow(static_cast<size_t>(pages), static_cast<size_t>(page_size), &bytes)) {
    return std::numeric_limits<size_t>::max();  // Unknown: no limit.
  }
  return bytes;
}

// 0 stands for the default, so that the physical memory is read only once
// someone asks.
std::atomic<size_t>& MaxTensorBytesSetting() {
  static std::atomic<size_t> setting{0};
  return setting;
}

}  // namespace

size_t MaxTensorBytes() {
  // Relaxed: the limit is one independent value; no other memory is
  // published with it.
  const size_t setting = MaxTensorBytesSetting().load(std::memory_order_relaxed);
  if (setting != 0) return setting;
  static const size_t half_physical = PhysicalMemoryBytes() / 2;
  return half_physical;
}

void SetMaxTensorBytes(size_t bytes) {
  MaxTensorBytesSetting().store(bytes, std::memory_order_relaxed);  // Relaxed: as above.
}

Allocator* CpuAllocator() {
  // Never destroyed: tensors may be released during static destruction.
  static Allocator* const allocator = new AlignedCpuAllocator();
  return allocator;
}

}  // namespace rill
