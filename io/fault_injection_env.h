// An Env for tests that wraps another and breaks it on purpose, as LevelDB's
// FaultInjectionTestEnv: the Nth write, sync or rename fails, the disk fills
// up, or the machine "crashes" and loses whatever was not yet made durable.
#ifndef RILL_IO_FAULT_INJECTION_ENV_H_
#define RILL_IO_FAULT_INJECTION_ENV_H_

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "io/env.h"

namespace rill::io {

// The operations a FaultInjectionEnv counts and can fail.
enum class FileOp {
  kOpen,       // NewWritableFile
  kWrite,      // WritableFile::Append
  kSync,       // WritableFile::Sync (fsync of a file)
  kRename,     // RenameFile
  kSyncDir,    // SyncDir (fsync of a directory)
  kDelete,     // DeleteFile, DeleteDir
  kCreateDir,  // CreateDir
};
inline constexpr int kNumFileOps = 7;
const char* FileOpName(FileOp op);

// What a crash keeps, as on a POSIX file system with no guarantees beyond
// fsync: a file's bytes up to its last Sync, and a name (a file created or
// renamed) only once its directory was synced; a file renamed over comes
// back with the bytes it had. Files the Env did not write are taken to be
// durable. Not modelled: a deleted name coming back, a file renamed away
// reappearing under its old name (both leave extra files, never lose one),
// and the durability of the directories CreateDir makes.
//
// Thread safety: every method may be called concurrently; files it hands
// out may be used from other threads, one thread per file.
class FaultInjectionEnv final : public Env {
 public:
  // `base` does the real work and must outlive this.
  explicit FaultInjectionEnv(Env* base);
  ~FaultInjectionEnv() override;

  // The `n`th call (1-based, counted from now) of `op` fails, once, doing
  // nothing (an append writes none of its bytes, a sync syncs nothing).
  void FailNth(FileOp op, int64_t n);
  // After `bytes` more bytes, appends fail with RESOURCE_EXHAUSTED ("No
  // space left on device"); the append that crosses the limit writes the
  // part that fits, as write(2) does.
  void SetFreeSpace(uint64_t bytes);
  // The machine stops before the `n`th operation (1-based, counted from
  // now, any FileOp): that one and every later call fails with
  // UNAVAILABLE until SimulateCrash. Reads fail too.
  void CrashBeforeNthOp(int64_t n);
  // Whether the machine has stopped (CrashBeforeNthOp reached).
  bool crashed() const;

  // Drops what a crash would lose (see above), then forgets every pending
  // fault: the Env works again, as after a reboot. FAILED_PRECONDITION
  // while a WritableFile from this Env is still alive (its buffered bytes
  // could still reach the disk).
  absl::Status SimulateCrash();

  // Calls of `op` so far (failed ones included).
  int64_t count(FileOp op) const;
  // Bytes appended so far (those refused for lack of space excluded).
  uint64_t bytes_written() const;

  absl::StatusOr<std::unique_ptr<WritableFile>> NewWritableFile(const std::string& path,
                                                                WriteMode mode) override;
  absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewRandomAccessFile(
      const std::string& path) override;
  bool FileExists(const std::string& path) override;
  absl::Status DeleteFile(const std::string& path) override;
  absl::Status CreateDir(const std::string& path) override;
  absl::Status DeleteDir(const std::string& path) override;
  absl::StatusOr<std::vector<std::string>> GetChildren(const std::string& dir) override;
  absl::Status RenameFile(const std::string& from, const std::string& to) override;
  absl::Status SyncDir(const std::string& dir) override;

 private:
  class File;
  // What a crash keeps of a file this Env wrote or renamed.
  struct FileState {
    // Bytes that survive: those at the last Sync.
    uint64_t synced = 0;
    // Whether the name survives (its directory was synced since).
    bool name_durable = false;
    // When the name is not durable: the durable bytes the name held before
    // (a file renamed over), which a crash brings back; nullopt: none.
    std::optional<std::string> replaced;
  };

  // Counts `op` on `path` and says whether it fails: an injected fault,
  // the crash point, or a machine already stopped.
  absl::Status Begin(FileOp op, const std::string& path) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // The bytes of `path` a crash would keep, read through the base Env.
  absl::StatusOr<std::string> DurableContents(const std::string& path)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Called by File.
  absl::Status Append(File& file, std::string_view data);
  absl::Status Sync(File& file);
  absl::Status Check(const File& file, const char* what);
  void Closed();

  Env* const base_;
  mutable absl::Mutex mu_;
  int64_t counts_[kNumFileOps] ABSL_GUARDED_BY(mu_) = {};
  // Per op, the count at which it fails (0: none).
  int64_t fail_at_[kNumFileOps] ABSL_GUARDED_BY(mu_) = {};
  int64_t ops_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t crash_at_ ABSL_GUARDED_BY(mu_) = 0;
  bool crashed_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<uint64_t> free_space_ ABSL_GUARDED_BY(mu_);
  uint64_t bytes_written_ ABSL_GUARDED_BY(mu_) = 0;
  // Files written before the last SimulateCrash belong to an older epoch
  // and may no longer write.
  int64_t epoch_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t open_files_ ABSL_GUARDED_BY(mu_) = 0;
  // By normalized path.
  std::map<std::string, FileState> files_ ABSL_GUARDED_BY(mu_);
};

}  // namespace rill::io

#endif  // RILL_IO_FAULT_INJECTION_ENV_H_
