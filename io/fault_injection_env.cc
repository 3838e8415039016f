#include "io/fault_injection_env.h"

#include <filesystem>
#include <utility>

#include "absl/strings/str_format.h"
#include "graph/status_macros.h"
#include "io/posix_file.h"

namespace rill::io {
namespace {

// Paths are compared as written, normalized ("a//b/./c" is "a/b/c").
std::string Normalized(const std::string& path) {
  std::string normal = std::filesystem::path(path).lexically_normal().string();
  while (normal.size() > 1 && normal.back() == '/') normal.pop_back();
  return normal;
}

int Index(FileOp op) { return static_cast<int>(op); }

}  // namespace

const char* FileOpName(FileOp op) {
  switch (op) {
    case FileOp::kOpen:
      return "open";
    case FileOp::kWrite:
      return "write";
    case FileOp::kSync:
      return "sync";
    case FileOp::kRename:
      return "rename";
    case FileOp::kSyncDir:
      return "sync directory";
    case FileOp::kDelete:
      return "delete";
    case FileOp::kCreateDir:
      return "create directory";
  }
  return "?";
}

// A file of the base Env whose appends and syncs pass through the checks.
class FaultInjectionEnv::File final : public WritableFile {
 public:
  File(FaultInjectionEnv* env, std::unique_ptr<WritableFile> base, std::string key, int64_t epoch)
      : env_(env), base_(std::move(base)), key_(std::move(key)), epoch_(epoch) {}
  ~File() override {
    base_.reset();
    env_->Closed();
  }

  absl::Status Append(std::string_view data) override { return env_->Append(*this, data); }
  absl::Status Flush() override {
    RETURN_IF_ERROR(env_->Check(*this, "flush"));
    return base_->Flush();
  }
  absl::Status Sync() override { return env_->Sync(*this); }
  absl::Status Close() override {
    // The descriptor is released even on a stopped machine.
    const absl::Status check = env_->Check(*this, "close");
    const absl::Status closed = base_->Close();
    return check.ok() ? closed : check;
  }
  const std::string& path() const override { return base_->path(); }
  uint64_t size() const override { return base_->size(); }

  WritableFile& base() { return *base_; }
  const std::string& key() const { return key_; }
  int64_t epoch() const { return epoch_; }

 private:
  FaultInjectionEnv* const env_;
  std::unique_ptr<WritableFile> base_;
  const std::string key_;
  const int64_t epoch_;
};

FaultInjectionEnv::FaultInjectionEnv(Env* base) : base_(base) {}

FaultInjectionEnv::~FaultInjectionEnv() = default;

void FaultInjectionEnv::FailNth(FileOp op, int64_t n) {
  absl::MutexLock lock(&mu_);
  fail_at_[Index(op)] = counts_[Index(op)] + n;
}

void FaultInjectionEnv::SetFreeSpace(uint64_t bytes) {
  absl::MutexLock lock(&mu_);
  free_space_ = bytes;
}

void FaultInjectionEnv::CrashBeforeNthOp(int64_t n) {
  absl::MutexLock lock(&mu_);
  crash_at_ = ops_ + n;
}

bool FaultInjectionEnv::crashed() const {
  absl::MutexLock lock(&mu_);
  return crashed_;
}

int64_t FaultInjectionEnv::count(FileOp op) const {
  absl::MutexLock lock(&mu_);
  return counts_[Index(op)];
}

uint64_t FaultInjectionEnv::bytes_written() const {
  absl::MutexLock lock(&mu_);
  return bytes_written_;
}

absl::Status FaultInjectionEnv::Begin(FileOp op, const std::string& path) {
  const int64_t n = ++counts_[Index(op)];
  ++ops_;
  if (crash_at_ > 0 && ops_ >= crash_at_) crashed_ = true;
  if (crashed_) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot %s '%s': the machine has stopped (simulated crash)", FileOpName(op), path));
  }
  if (fail_at_[Index(op)] == n) {
    fail_at_[Index(op)] = 0;
    return absl::InternalError(
        absl::StrFormat("cannot %s '%s': Input/output error (injected fault: %s #%d)",
                        FileOpName(op), path, FileOpName(op), n));
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::Check(const File& file, const char* what) {
  absl::MutexLock lock(&mu_);
  if (crashed_) {
    return absl::UnavailableError(absl::StrFormat(
        "cannot %s '%s': the machine has stopped (simulated crash)", what, file.path()));
  }
  if (file.epoch() != epoch_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot %s '%s': the file was opened before the simulated crash", what, file.path()));
  }
  return absl::OkStatus();
}

void FaultInjectionEnv::Closed() {
  absl::MutexLock lock(&mu_);
  --open_files_;
}

absl::Status FaultInjectionEnv::Append(File& file, std::string_view data) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kWrite, file.path()));
  if (file.epoch() != epoch_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot write '%s': the file was opened before the simulated crash", file.path()));
  }
  size_t n = data.size();
  const bool full = free_space_.has_value() && n > *free_space_;
  if (full) n = static_cast<size_t>(*free_space_);
  if (free_space_.has_value()) *free_space_ -= n;
  if (n > 0) RETURN_IF_ERROR(file.base().Append(data.substr(0, n)));
  bytes_written_ += n;
  if (full) {
    return absl::ResourceExhaustedError(absl::StrFormat(
        "cannot write '%s': No space left on device (injected: %d of %d bytes written)",
        file.path(), n, data.size()));
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::Sync(File& file) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kSync, file.path()));
  if (file.epoch() != epoch_) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot sync '%s': the file was opened before the simulated crash", file.path()));
  }
  RETURN_IF_ERROR(file.base().Sync());
  if (auto it = files_.find(file.key()); it != files_.end()) it->second.synced = file.size();
  return absl::OkStatus();
}

absl::StatusOr<std::string> FaultInjectionEnv::DurableContents(const std::string& path) {
  ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, base_));
  if (auto it = files_.find(Normalized(path));
      it != files_.end() && it->second.synced < bytes.size()) {
    bytes.resize(it->second.synced);
  }
  return bytes;
}

absl::StatusOr<std::unique_ptr<WritableFile>> FaultInjectionEnv::NewWritableFile(
    const std::string& path, WriteMode mode) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kOpen, path));
  std::string key = Normalized(path);
  FileState state;
  if (auto it = files_.find(key); it != files_.end()) {
    state = it->second;
  } else if (base_->FileExists(path)) {
    // A file this Env did not write is durable as it is.
    state.name_durable = true;
    if (mode == WriteMode::kAppend) {
      ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(path, base_));
      state.synced = bytes.size();
    }
  }
  if (mode == WriteMode::kTruncate) state.synced = 0;
  ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file, base_->NewWritableFile(path, mode));
  files_[key] = std::move(state);
  ++open_files_;
  return std::make_unique<File>(this, std::move(file), std::move(key), epoch_);
}

absl::StatusOr<std::unique_ptr<RandomAccessFile>> FaultInjectionEnv::NewRandomAccessFile(
    const std::string& path) {
  {
    absl::MutexLock lock(&mu_);
    if (crashed_) {
      return absl::UnavailableError(
          absl::StrFormat("cannot open '%s': the machine has stopped (simulated crash)", path));
    }
  }
  return base_->NewRandomAccessFile(path);
}

bool FaultInjectionEnv::FileExists(const std::string& path) {
  {
    absl::MutexLock lock(&mu_);
    if (crashed_) return false;
  }
  return base_->FileExists(path);
}

absl::Status FaultInjectionEnv::DeleteFile(const std::string& path) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kDelete, path));
  RETURN_IF_ERROR(base_->DeleteFile(path));
  files_.erase(Normalized(path));
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::CreateDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kCreateDir, path));
  return base_->CreateDir(path);
}

absl::Status FaultInjectionEnv::DeleteDir(const std::string& path) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kDelete, path));
  return base_->DeleteDir(path);
}

absl::StatusOr<std::vector<std::string>> FaultInjectionEnv::GetChildren(const std::string& dir) {
  {
    absl::MutexLock lock(&mu_);
    if (crashed_) {
      return absl::UnavailableError(absl::StrFormat(
          "cannot list directory '%s': the machine has stopped (simulated crash)", dir));
    }
  }
  return base_->GetChildren(dir);
}

absl::Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kRename, to));
  const std::string from_key = Normalized(from);
  const std::string to_key = Normalized(to);
  // What a crash brings back under `to`, taken before it is replaced.
  std::optional<std::string> replaced;
  if (auto it = files_.find(to_key); it != files_.end() && !it->second.name_durable) {
    replaced = it->second.replaced;
  } else if (base_->FileExists(to)) {
    ASSIGN_OR_RETURN(replaced, DurableContents(to));
  }
  FileState moved;
  if (auto it = files_.find(from_key); it != files_.end()) {
    moved.synced = it->second.synced;
  } else {
    ASSIGN_OR_RETURN(const std::string bytes, ReadFileToString(from, base_));
    moved.synced = bytes.size();
  }
  RETURN_IF_ERROR(base_->RenameFile(from, to));
  files_.erase(from_key);
  moved.replaced = std::move(replaced);
  files_[to_key] = std::move(moved);
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(Begin(FileOp::kSyncDir, dir));
  RETURN_IF_ERROR(base_->SyncDir(dir));
  const std::string synced = Normalized(dir);
  for (auto& [key, state] : files_) {
    if (Normalized(Dirname(key)) != synced) continue;
    state.name_durable = true;
    state.replaced.reset();
  }
  return absl::OkStatus();
}

absl::Status FaultInjectionEnv::SimulateCrash() {
  absl::MutexLock lock(&mu_);
  if (open_files_ > 0) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "cannot simulate a crash: %d files are still open; close them first", open_files_));
  }
  const auto write_back = [&](const std::string& path, std::string_view bytes) -> absl::Status {
    ASSIGN_OR_RETURN(std::unique_ptr<WritableFile> file,
                     base_->NewWritableFile(path, WriteMode::kTruncate));
    RETURN_IF_ERROR(file->Append(bytes));
    return file->Close();
  };
  for (const auto& [path, state] : files_) {
    if (!state.name_durable) {
      if (state.replaced.has_value()) {
        RETURN_IF_ERROR(write_back(path, *state.replaced));
      } else if (base_->FileExists(path)) {
        RETURN_IF_ERROR(base_->DeleteFile(path));
      }
      continue;
    }
    if (!base_->FileExists(path)) continue;
    ASSIGN_OR_RETURN(std::string bytes, ReadFileToString(path, base_));
    if (bytes.size() > state.synced) {
      bytes.resize(state.synced);
      RETURN_IF_ERROR(write_back(path, bytes));
    }
  }
  files_.clear();
  crashed_ = false;
  crash_at_ = 0;
  for (int64_t& at : fail_at_) at = 0;
  free_space_.reset();
  ++epoch_;
  return absl::OkStatus();
}

}  // namespace rill::io
