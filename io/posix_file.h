// The file operations checkpoints and event files need, with errors that
// name the file: the POSIX files behind Env::Posix(), and over any Env the
// temporary-name-then-rename step that makes a file appear whole.
#ifndef RILL_IO_POSIX_FILE_H_
#define RILL_IO_POSIX_FILE_H_

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "io/env.h"

namespace rill::io {

// The POSIX files behind Env::Posix(). Errors name the file and what
// failed.
absl::StatusOr<std::unique_ptr<WritableFile>> NewPosixWritableFile(const std::string& path,
                                                                   WriteMode mode);
absl::StatusOr<std::unique_ptr<RandomAccessFile>> NewPosixRandomAccessFile(const std::string& path);

// An error for the failed call `what` on `path` with `error` (an errno),
// its code following the errno (NOT_FOUND, PERMISSION_DENIED,
// RESOURCE_EXHAUSTED for a full disk, ...): "what 'path': strerror".
absl::Status PosixError(std::string_view what, const std::string& path, int error);

// OK when `path` is missing, a regular file, or a symbolic link (a rename
// replaces the link, not what it points to). Anything else (a directory,
// FIFO, socket, character or block device) is INVALID_ARGUMENT naming the
// path and what it is: every writer that puts a file in place by renaming
// it over `path` asks this first, so that "/dev/null" is never replaced.
absl::Status CheckOutputPath(const std::string& path);

absl::StatusOr<std::string> ReadFileToString(const std::string& path, Env* env = Env::Default());

// A unique name beside `path` to write to before renaming it into place:
// "<path>.tempstate<random>", as TensorFlow names them.
std::string TemporaryPathFor(const std::string& path);

// Renames `from` to `to` (replacing a regular file `to`) and syncs the
// directory, so that the new name survives a crash.
absl::Status RenameFile(const std::string& from, const std::string& to, Env* env = Env::Default());

// Writes `contents` under a temporary name, syncs it, renames it to `path`
// and syncs the directory: readers see the old file or the whole new one,
// never a part, and after OK a crash keeps the new one. Refuses, before
// writing anything, a `path` that CheckOutputPath refuses.
absl::Status WriteFileAtomically(const std::string& path, std::string_view contents,
                                 Env* env = Env::Default());

// True when `path` is one or more '/'-separated names, none of them empty,
// "." or "..": a path that cannot lead out of the directory it is under.
bool IsPlainRelativePath(std::string_view path);

bool FileExists(const std::string& path, Env* env = Env::Default());
// NOT_FOUND when missing.
absl::Status DeleteFile(const std::string& path, Env* env = Env::Default());
absl::Status CreateDirectories(const std::string& path, Env* env = Env::Default());
// The directory part of `path` ("." when there is none).
std::string Dirname(const std::string& path);
// The names (not paths) in `dir` that match the shell glob `pattern`.
absl::StatusOr<std::vector<std::string>> MatchingNames(const std::string& dir,
                                                       const std::string& pattern,
                                                       Env* env = Env::Default());

}  // namespace rill::io

#endif  // RILL_IO_POSIX_FILE_H_
