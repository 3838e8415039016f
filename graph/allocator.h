// The interface tensors use to obtain memory, and the plain aligned CPU
// allocator used when no device allocator is given.
#ifndef RILL_GRAPH_ALLOCATOR_H_
#define RILL_GRAPH_ALLOCATOR_H_

#include <cstddef>
#include <string>

namespace rill {

// Every tensor buffer is aligned to this many bytes (a cache line; enough
// for AVX-512 loads).
inline constexpr size_t kTensorAlignment = 64;

// Thread safety: implementations are safe to call from any thread.
class Allocator {
 public:
  virtual ~Allocator() = default;
  virtual std::string Name() const = 0;
  // Returns nullptr when the memory cannot be had. `bytes` may be 0.
  virtual void* AllocateRaw(size_t alignment, size_t bytes) = 0;
  // REQUIRES: `ptr` came from AllocateRaw of this allocator with `bytes`.
  virtual void DeallocateRaw(void* ptr, size_t bytes) = 0;
};

// An allocator that goes straight to aligned operator new/delete. Lives for
// the whole process.
Allocator* CpuAllocator();

// The most bytes one tensor may take. Tensor::Allocate refuses anything
// larger with RESOURCE_EXHAUSTED before it asks an allocator, so that a
// shape from a graph, a feed or a peer cannot take the machine's memory.
// Process-wide, as the CPU allocator it guards. The default is half the
// machine's physical memory: a tensor past that leaves no room for the op
// that reads it to write a result of its size.
// Thread safety: both may be called from any thread.
size_t MaxTensorBytes();
// 0 restores the default.
void SetMaxTensorBytes(size_t bytes);

}  // namespace rill

#endif  // RILL_GRAPH_ALLOCATOR_H_
