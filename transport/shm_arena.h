// Shared memory between the processes of one machine: a sender copies a large tensor into a
// block of its arena (a sealed memfd) and the receiver maps that arena and uses the block in place.
#ifndef RILL_TRANSPORT_SHM_ARENA_H_
#define RILL_TRANSPORT_SHM_ARENA_H_

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "graph/allocator.h"
#include "graph/tensor.h"
#include "transport/proto/rpc.pb.h"

namespace rill {

// The arena's first bytes and each block's header. A block's `state` is the whole protocol
// between the processes: the sender takes a free block (kFilling, while it copies the tensor in),
// sets it to kSent, the receiver claims it (kSent to kClaimed, once, so that no two of its
// tensors share a block) and clears it when the last tensor borrowing it goes away; only then
// does the sender reuse it. Nothing else in the arena is written by the receiver.
struct ShmArenaHeader {
  uint64_t magic;
  uint64_t id;
  uint64_t capacity;
};
struct alignas(64) ShmBlockHeader {
  static constexpr uint32_t kFree = 0, kSent = 1, kClaimed = 2, kFilling = 3;
  std::atomic<uint32_t> state;
  uint32_t magic;
  uint64_t bytes;
};
static_assert(sizeof(ShmBlockHeader) == 64);

// The sender's side: one arena per client while its peer is reached by ipc. A memfd has no
// name, so a process that dies, on either side, leaves nothing behind: the kernel frees the
// memory when the last descriptor and mapping go. It is sealed against shrinking, so a receiver
// never touches a page that is gone.
// Thread safety: all methods may be called concurrently.
class ShmArena {
 public:
  // Errors: UNAVAILABLE when the kernel gives no memfd or mapping of `capacity` bytes.
  static absl::StatusOr<std::unique_ptr<ShmArena>> Create(size_t capacity, size_t min_bytes);
  ~ShmArena();
  ShmArena(const ShmArena&) = delete;
  ShmArena& operator=(const ShmArena&) = delete;

  // Tensors of at least this many bytes go through the arena; smaller ones are cheaper as frames.
  size_t min_bytes() const { return min_bytes_; }
  // Copies `bytes` from `data` into a free block and returns where it is; nullopt when no free
  // block is large enough (the caller sends the bytes another way).
  std::optional<ShmRef> Place(const void* data, size_t bytes);
  // Frees the blocks of this arena that `header` names: its message was not sent.
  void Unsend(const RpcHeader& header);
  // Bytes in blocks a receiver still holds (with their headers).
  size_t held_bytes();

 private:
  ShmArena(int fd, uint8_t* base, size_t capacity, size_t min_bytes, uint64_t id);
  // Frees the blocks their receivers have let go.
  void Reclaim() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const int fd_;
  uint8_t* const base_;
  const size_t capacity_;
  const size_t min_bytes_;
  const uint64_t id_;

  absl::Mutex mu_;
  std::map<uint64_t, uint64_t> free_ ABSL_GUARDED_BY(mu_);  // offset -> size, coalesced.
  std::map<uint64_t, uint64_t> held_ ABSL_GUARDED_BY(mu_);  // offset -> size.
};

// The arena a client copies into while it reaches its peer by ipc: made when the path becomes
// ipc, used once the peer has shown it can map it, and dropped when the path leaves ipc, since a
// peer that went away keeps its blocks held.
// Thread safety: all methods may be called concurrently.
class ShmArenaSlot {
 public:
  // min_bytes 0: the slot stays empty.
  ShmArenaSlot(size_t min_bytes, size_t capacity) : min_bytes_(min_bytes), capacity_(capacity) {}
  // Makes an arena, not in use yet; without one (no memfd here), tensors go as frames.
  void Open();
  // The peer mapped the arena: tensors may go through it.
  void Enable();
  void Close();
  // Null unless open and enabled.
  std::shared_ptr<ShmArena> arena() const;
  // The arena while open, enabled or not (to show the peer).
  std::shared_ptr<ShmArena> opened() const;

 private:
  const size_t min_bytes_;
  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::shared_ptr<ShmArena> arena_ ABSL_GUARDED_BY(mu_);
  bool enabled_ ABSL_GUARDED_BY(mu_) = false;
};

// The receiver's side: the arenas of one peer process, mapped as that peer's messages name
// them. Only a connection whose peer the kernel names (SO_PEERCRED on the ipc socket) has one,
// so a peer can only make this process map that peer's own memory.
// Thread safety: all methods may be called concurrently.
class ShmPeer {
 public:
  explicit ShmPeer(pid_t pid) : pid_(pid) {}

  // An allocator that hands out the block `ref` names, once, for a tensor of `bytes`; the block
  // is given back to its sender when that allocation is freed, or when the allocator is
  // destroyed unused. Errors (INVALID_ARGUMENT, naming the arena and offset): an arena that
  // cannot be mapped or is not one, a block outside it, of another size, or not sent (or claimed
  // already).
  absl::StatusOr<std::unique_ptr<Allocator>> Claim(const ShmRef& ref, size_t bytes);

  // A peer may name this many arenas at most.
  static constexpr int kMaxArenas = 8;

 private:
  struct Mapping;
  absl::StatusOr<std::shared_ptr<Mapping>> Map(const ShmRef& ref);

  const pid_t pid_;
  absl::Mutex mu_;
  absl::flat_hash_map<uint64_t, std::shared_ptr<Mapping>> arenas_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill

#endif  // RILL_TRANSPORT_SHM_ARENA_H_
