#include "transport/shm_arena.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"

namespace rill {
namespace {

constexpr uint64_t kArenaMagic = 0x616e6572'616c6c72;  // "rllarena"
constexpr uint32_t kBlockMagic = 0x6b6c6272;           // "rblk"
constexpr uint64_t kAlign = sizeof(ShmBlockHeader);
// Blocks start after the arena's header, which takes one block's room.
constexpr uint64_t kFirstBlock = kAlign;

uint64_t RoundUp(uint64_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

uint64_t RandomId() {
  uint64_t id = 0;
  while (id == 0) {
    if (getrandom(&id, sizeof(id), 0) != sizeof(id)) id = static_cast<uint64_t>(getpid()) << 32;
  }
  return id;
}

// Hands out one block of a mapped arena, once; gives it back to the sender when freed.
class BlockAllocator final : public Allocator {
 public:
  BlockAllocator(std::shared_ptr<void> mapping, ShmBlockHeader* block, size_t bytes)
      : mapping_(std::move(mapping)), block_(block), bytes_(bytes) {}
  ~BlockAllocator() override {
    block_->state.store(ShmBlockHeader::kFree, std::memory_order_release);
  }
  std::string Name() const override { return "shared memory block"; }
  void* AllocateRaw(size_t /*alignment*/, size_t bytes) override {
    if (bytes != bytes_ || handed_out_) return nullptr;
    handed_out_ = true;
    return reinterpret_cast<uint8_t*>(block_) + sizeof(ShmBlockHeader);
  }
  void DeallocateRaw(void* /*ptr*/, size_t /*bytes*/) override { delete this; }

 private:
  const std::shared_ptr<void> mapping_;  // Keeps the arena mapped.
  ShmBlockHeader* const block_;
  const size_t bytes_;
  bool handed_out_ = false;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ShmArena>> ShmArena::Create(size_t capacity, size_t min_bytes) {
  capacity = RoundUp(capacity);
  if (capacity <= kFirstBlock) {
    return absl::InvalidArgumentError(
        absl::StrFormat("a shared-memory arena of %d bytes holds no block", capacity));
  }
  const int fd = memfd_create("rill-tensors", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0) {
    return absl::UnavailableError(absl::StrFormat("memfd_create: %s", std::strerror(errno)));
  }
  if (ftruncate(fd, static_cast<off_t>(capacity)) != 0 ||
      fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) != 0) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(
        absl::StrFormat("cannot size and seal a shared-memory arena of %d bytes: %s", capacity,
                        std::strerror(error)));
  }
  void* base = mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    const int error = errno;
    close(fd);
    return absl::UnavailableError(absl::StrFormat(
        "cannot map a shared-memory arena of %d bytes: %s", capacity, std::strerror(error)));
  }
  const uint64_t id = RandomId();
  *static_cast<ShmArenaHeader*>(base) = {kArenaMagic, id, capacity};
  return std::unique_ptr<ShmArena>(
      new ShmArena(fd, static_cast<uint8_t*>(base), capacity, min_bytes, id));
}

ShmArena::ShmArena(int fd, uint8_t* base, size_t capacity, size_t min_bytes, uint64_t id)
    : fd_(fd), base_(base), capacity_(capacity), min_bytes_(min_bytes), id_(id) {
  free_[kFirstBlock] = capacity - kFirstBlock;
}

ShmArena::~ShmArena() {
  munmap(base_, capacity_);
  close(fd_);
}

void ShmArena::Reclaim() {
  for (auto it = held_.begin(); it != held_.end();) {
    const auto* block = reinterpret_cast<const ShmBlockHeader*>(base_ + it->first);
    if (block->state.load(std::memory_order_acquire) != ShmBlockHeader::kFree) {
      ++it;
      continue;
    }
    uint64_t offset = it->first;
    uint64_t size = it->second;
    it = held_.erase(it);
    // Coalesce with the free neighbours on both sides.
    auto next = free_.lower_bound(offset);
    if (next != free_.end() && offset + size == next->first) {
      size += next->second;
      next = free_.erase(next);
    }
    if (next != free_.begin()) {
      auto previous = std::prev(next);
      if (previous->first + previous->second == offset) {
        previous->second += size;
        continue;
      }
    }
    free_.emplace_hint(next, offset, size);
  }
}

std::optional<ShmRef> ShmArena::Place(const void* data, size_t bytes) {
  const uint64_t size = kAlign + RoundUp(bytes);
  uint64_t offset = 0;
  {
    absl::MutexLock lock(&mu_);
    Reclaim();
    auto it = free_.begin();
    while (it != free_.end() && it->second < size) ++it;
    if (it == free_.end()) return std::nullopt;
    offset = it->first;
    const uint64_t left = it->second - size;
    free_.erase(it);
    if (left > 0) free_.emplace(offset + size, left);
    held_.emplace(offset, size);
    // Taken before the lock goes: a block still free from its last use
    // would be reclaimed by a concurrent Place while this one copies.
    reinterpret_cast<ShmBlockHeader*>(base_ + offset)
        ->state.store(ShmBlockHeader::kFilling, std::memory_order_relaxed);
  }
  auto* block = reinterpret_cast<ShmBlockHeader*>(base_ + offset);
  block->magic = kBlockMagic;
  block->bytes = bytes;
  std::memcpy(reinterpret_cast<uint8_t*>(block) + kAlign, data, bytes);
  // Release: the receiver that sees the block sent sees its bytes.
  block->state.store(ShmBlockHeader::kSent, std::memory_order_release);
  ShmRef ref;
  ref.set_arena(id_);
  ref.set_fd(fd_);
  ref.set_offset(offset);
  return ref;
}

void ShmArena::Unsend(const RpcHeader& header) {
  for (const TensorMeta& meta : header.tensors()) {
    if (!meta.has_shm() || meta.shm().arena() != id_ || meta.shm().offset() >= capacity_) continue;
    auto* block = reinterpret_cast<ShmBlockHeader*>(base_ + meta.shm().offset());
    uint32_t sent = ShmBlockHeader::kSent;
    block->state.compare_exchange_strong(sent, ShmBlockHeader::kFree, std::memory_order_release);
  }
}

size_t ShmArena::held_bytes() {
  absl::MutexLock lock(&mu_);
  Reclaim();
  size_t total = 0;
  for (const auto& [offset, size] : held_) total += size;
  return total;
}

void ShmArenaSlot::Open() {
  if (min_bytes_ == 0) return;
  absl::StatusOr<std::unique_ptr<ShmArena>> arena = ShmArena::Create(capacity_, min_bytes_);
  absl::MutexLock lock(&mu_);
  arena_ = arena.ok() ? std::shared_ptr<ShmArena>(*std::move(arena)) : nullptr;
  enabled_ = false;
}

void ShmArenaSlot::Enable() {
  absl::MutexLock lock(&mu_);
  enabled_ = arena_ != nullptr;
}

void ShmArenaSlot::Close() {
  absl::MutexLock lock(&mu_);
  arena_.reset();
  enabled_ = false;
}

std::shared_ptr<ShmArena> ShmArenaSlot::arena() const {
  absl::MutexLock lock(&mu_);
  return enabled_ ? arena_ : nullptr;
}

std::shared_ptr<ShmArena> ShmArenaSlot::opened() const {
  absl::MutexLock lock(&mu_);
  return arena_;
}

struct ShmPeer::Mapping {
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() { munmap(base, size); }
};

absl::StatusOr<std::shared_ptr<ShmPeer::Mapping>> ShmPeer::Map(const ShmRef& ref) {
  absl::MutexLock lock(&mu_);
  if (auto found = arenas_.find(ref.arena()); found != arenas_.end()) return found->second;
  const std::string where = absl::StrFormat("arena %016x (descriptor %d of process %d)",
                                            ref.arena(), ref.fd(), static_cast<int>(pid_));
  if (arenas_.size() >= kMaxArenas) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: the peer has named %d arenas already", where, kMaxArenas));
  }
  if (ref.fd() < 0) return absl::InvalidArgumentError(where + ": a negative descriptor");
  const std::string path = absl::StrFormat("/proc/%d/fd/%d", static_cast<int>(pid_), ref.fd());
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot open %s: %s", where, path, std::strerror(errno)));
  }
  struct stat info {};
  const int seals = fcntl(fd, F_GET_SEALS);
  if (fstat(fd, &info) != 0 || seals < 0 || (seals & F_SEAL_SHRINK) == 0 ||
      info.st_size < static_cast<off_t>(kFirstBlock)) {
    close(fd);
    return absl::InvalidArgumentError(where + ": not a sealed shared-memory arena");
  }
  auto mapping = std::make_shared<Mapping>();
  mapping->size = static_cast<size_t>(info.st_size);
  mapping->base = mmap(nullptr, mapping->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  close(fd);  // The mapping keeps the memory.
  if (mapping->base == MAP_FAILED) {
    mapping->base = nullptr;
    mapping->size = 0;
    return absl::InvalidArgumentError(
        absl::StrFormat("%s: cannot map it: %s", where, std::strerror(errno)));
  }
  const auto* header = static_cast<const ShmArenaHeader*>(mapping->base);
  if (header->magic != kArenaMagic || header->id != ref.arena()) {
    return absl::InvalidArgumentError(where + ": the descriptor is not that arena");
  }
  arenas_.emplace(ref.arena(), mapping);
  return mapping;
}

absl::StatusOr<std::unique_ptr<Allocator>> ShmPeer::Claim(const ShmRef& ref, size_t bytes) {
  ASSIGN_OR_RETURN(std::shared_ptr<Mapping> mapping, Map(ref));
  const uint64_t offset = ref.offset();
  uint64_t end = 0;
  if (offset < kFirstBlock || offset % kAlign != 0 ||
      __builtin_add_overflow(offset, kAlign + RoundUp(bytes), &end) || end > mapping->size) {
    return absl::InvalidArgumentError(
        absl::StrFormat("arena %016x: a block of %d bytes at offset %d lies outside its %d bytes",
                        ref.arena(), bytes, offset, mapping->size));
  }
  auto* block = reinterpret_cast<ShmBlockHeader*>(static_cast<uint8_t*>(mapping->base) + offset);
  uint32_t sent = ShmBlockHeader::kSent;
  if (block->magic != kBlockMagic || block->bytes != bytes ||
      !block->state.compare_exchange_strong(sent, ShmBlockHeader::kClaimed,
                                            std::memory_order_acquire)) {
    return absl::InvalidArgumentError(
        absl::StrFormat("arena %016x: offset %d holds no block of %d bytes sent to this process",
                        ref.arena(), offset, bytes));
  }
  void* base = mapping->base;
  return std::unique_ptr<Allocator>(
      new BlockAllocator(std::shared_ptr<void>(std::move(mapping), base), block, bytes));
}

}  // namespace rill
